/** Rows → the pool's wire form, with the relations many pools need loaded in a few queries. */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { poolCodec, type PoolRow } from '../../db/records/pool.js';
import { settingsOf } from '../../db/records/tree-object.js';
import type { PoolSpec } from '../../domain/rules/pool.js';
import { readTags } from '../tags.js';
import { wants } from '../listing.js';
import { treeView } from './tree-fields.js';
import { poolListenerIds } from '../../db/pool-listeners.js';

type Q = Kysely<Database> | Transaction<Database>;

const none = ['-'];

export interface PoolRelations {
  tags: Map<string, string[]>;
  listeners: Map<string, string[]>;
  members: Map<string, string[]>;
  healthMonitors: Map<string, string>;
}

export async function poolRelations(db: Q, ids: string[], fields?: readonly string[] | null): Promise<PoolRelations> {
  const inIds = (field: string) => (ids.length && wants(fields, field) ? ids : none);
  const [tags, listeners, members, monitors] = await Promise.all([
    readTags(db, wants(fields, 'tags') ? ids : []),
    poolListenerIds(db, wants(fields, 'listeners') ? ids : []),
    db.selectFrom('member').select(['id', 'pool_id']).where('pool_id', 'in', inIds('members')).orderBy('created_at').orderBy('id').execute(),
    db.selectFrom('health_monitor').select(['id', 'pool_id']).where('pool_id', 'in', inIds('healthmonitor_id')).execute(),
  ]);
  const memberIds = new Map<string, string[]>(ids.map((id) => [id, []]));
  for (const m of members) memberIds.get(m.pool_id)?.push(m.id);
  return { tags, listeners, members: memberIds, healthMonitors: new Map(monitors.map((m) => [m.pool_id, m.id])) };
}

/** The stored pool as the rules see it. */
export function poolSpecOf(row: PoolRow): PoolSpec {
  const { name: _n, description: _d, admin_state_up: _a, ...spec } = settingsOf(poolCodec.decode(row), 'load_balancer_id');
  return spec;
}

export function poolView(row: PoolRow, rel: PoolRelations) {
  const spec = poolSpecOf(row);
  return treeView(row, {
    name: row.name,
    description: row.description,
    protocol: row.protocol,
    lb_algorithm: row.lb_algorithm,
    session_persistence: spec.session_persistence,
    loadbalancers: [{ id: row.load_balancer_id }],
    listeners: (rel.listeners.get(row.id) ?? []).map((id) => ({ id })),
    healthmonitor_id: rel.healthMonitors.get(row.id) ?? null,
    members: (rel.members.get(row.id) ?? []).map((id) => ({ id })),
    tags: rel.tags.get(row.id) ?? [],
    tls_container_ref: spec.tls_container_ref,
    ca_tls_container_ref: spec.ca_tls_container_ref,
    crl_container_ref: spec.crl_container_ref,
    tls_enabled: spec.tls_enabled,
    tls_ciphers: spec.tls_ciphers,
    tls_versions: spec.tls_versions,
    alpn_protocols: spec.alpn_protocols,
  });
}

export async function renderPools(db: Q, rows: readonly PoolRow[], fields?: readonly string[] | null) {
  const rel = await poolRelations(db, rows.map((r) => r.id), fields);
  return rows.map((r) => poolView(r, rel));
}

export type PoolView = ReturnType<typeof poolView>;

/** Rows → the listener's wire form, with the relations many listeners need loaded in two queries. */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { listenerCodec, type ListenerRow } from '../../db/records/listener.js';
import { settingsOf } from '../../db/records/tree-object.js';
import type { ListenerSpec } from '../../domain/rules/listener.js';
import { readTags } from '../tags.js';
import { wants } from '../listing.js';
import { treeView } from './tree-fields.js';
import { inIds } from '../../db/dialect.js';

type Q = Kysely<Database> | Transaction<Database>;

export interface ListenerRelations {
  tags: Map<string, string[]>;
  /** Policy ids per listener, in evaluation (position) order. */
  l7policies: Map<string, string[]>;
}

export async function listenerRelations(db: Q, ids: string[], fields?: readonly string[] | null): Promise<ListenerRelations> {
  const l7policies = new Map<string, string[]>(ids.map((id) => [id, []]));
  const [tags, policies] = await Promise.all([
    readTags(db, wants(fields, 'tags') ? ids : []),
    ids.length && wants(fields, 'l7policies') ? db.selectFrom('l7policy').select(['id', 'listener_id']).where(inIds(db, 'listener_id', ids)).orderBy('position').orderBy('id').execute() : [],
  ]);
  for (const p of policies) l7policies.get(p.listener_id)?.push(p.id);
  return { tags, l7policies };
}

/** The stored listener as the rules see it. */
export function listenerSpecOf(row: ListenerRow): ListenerSpec {
  const { name: _n, description: _d, admin_state_up: _a, default_pool_id: _p, status_reason: _r, ...spec } = settingsOf(listenerCodec.decode(row), 'load_balancer_id');
  return spec;
}

export function listenerView(row: ListenerRow, rel: ListenerRelations) {
  const spec = listenerSpecOf(row);
  return treeView(row, {
    name: row.name,
    description: row.description,
    protocol: row.protocol,
    protocol_port: row.protocol_port,
    connection_limit: spec.connection_limit,
    default_tls_container_ref: spec.default_tls_container_ref,
    sni_container_refs: spec.sni_container_refs,
    default_pool_id: row.default_pool_id,
    l7policies: (rel.l7policies.get(row.id) ?? []).map((id) => ({ id })),
    insert_headers: spec.insert_headers,
    loadbalancers: [{ id: row.load_balancer_id }],
    timeout_client_data: spec.timeout_client_data,
    timeout_member_connect: spec.timeout_member_connect,
    timeout_member_data: spec.timeout_member_data,
    timeout_tcp_inspect: spec.timeout_tcp_inspect,
    tags: rel.tags.get(row.id) ?? [],
    client_ca_tls_container_ref: spec.client_ca_tls_container_ref,
    client_authentication: spec.client_authentication,
    client_crl_container_ref: spec.client_crl_container_ref,
    allowed_cidrs: spec.allowed_cidrs,
    tls_ciphers: spec.tls_ciphers,
    tls_versions: spec.tls_versions,
    alpn_protocols: spec.alpn_protocols,
    hsts_max_age: spec.hsts_max_age,
    hsts_include_subdomains: spec.hsts_include_subdomains,
    hsts_preload: spec.hsts_preload,
    /** Ostia extension, as on load balancers: why the last certificate change was rolled back. */
    status_reason: row.status_reason,
    /** Ostia extension: the names Ostia orders this listener's certificate for by ACME, or null. */
    acme_domains: spec.acme_domains,
  });
}

export async function renderListeners(db: Q, rows: readonly ListenerRow[], fields?: readonly string[] | null) {
  const rel = await listenerRelations(db, rows.map((r) => r.id), fields);
  return rows.map((r) => listenerView(r, rel));
}

export type ListenerView = ReturnType<typeof listenerView>;

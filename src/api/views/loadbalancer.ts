/** Rows → the load balancer's wire form. */
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { loadBalancerCodec, type LoadBalancerRow } from '../../db/records/load-balancer.js';
import { readTags } from '../tags.js';
import { wants } from '../listing.js';
import { treeView } from './tree-fields.js';
import { inIds } from '../../db/dialect.js';


export interface LoadBalancerRelations {
  tags: Map<string, string[]>;
  listeners: Map<string, string[]>;
  pools: Map<string, string[]>;
}

/** Everything the views of many LBs need (of what `fields` asks for), in three queries whatever the page size. */
export async function loadBalancerRelations(db: Kysely<Database>, ids: string[], fields?: readonly string[] | null): Promise<LoadBalancerRelations> {
  const listeners = new Map<string, string[]>(ids.map((id) => [id, []]));
  const pools = new Map<string, string[]>(ids.map((id) => [id, []]));
  const [ls, ps, tags] = await Promise.all([
    ids.length && wants(fields, 'listeners') ? db.selectFrom('listener').select(['id', 'load_balancer_id']).where(inIds(db, 'load_balancer_id', ids)).orderBy('created_at').orderBy('id').execute() : [],
    ids.length && wants(fields, 'pools') ? db.selectFrom('pool').select(['id', 'load_balancer_id']).where(inIds(db, 'load_balancer_id', ids)).orderBy('created_at').orderBy('id').execute() : [],
    readTags(db, wants(fields, 'tags') ? ids : []),
  ]);
  for (const l of ls) listeners.get(l.load_balancer_id)?.push(l.id);
  for (const p of ps) pools.get(p.load_balancer_id)?.push(p.id);
  return { tags, listeners, pools };
}

export function loadBalancerView(row: LoadBalancerRow, rel: LoadBalancerRelations) {
  // Only the columns the view decodes: decoding the row copies all of it (~4 % of a list).
  const { vip_sg_ids, additional_vips } = loadBalancerCodec.decode({ vip_sg_ids: row.vip_sg_ids, additional_vips: row.additional_vips });
  return treeView(row, {
    name: row.name,
    description: row.description,
    vip_address: row.vip_address,
    vip_port_id: row.vip_port_id,
    vip_subnet_id: row.vip_subnet_id,
    vip_network_id: row.vip_network_id,
    vip_qos_policy_id: row.vip_qos_policy_id,
    vip_sg_ids,
    vip_vnic_type: row.vip_vnic_type,
    additional_vips,
    listeners: (rel.listeners.get(row.id) ?? []).map((id) => ({ id })),
    pools: (rel.pools.get(row.id) ?? []).map((id) => ({ id })),
    provider: row.provider,
    flavor_id: row.flavor_id,
    availability_zone: row.availability_zone,
    tags: rel.tags.get(row.id) ?? [],
    /** Ostia extension: why the last operation left the LB in ERROR. */
    status_reason: row.status_reason,
  });
}

export async function renderLoadBalancers(db: Kysely<Database>, rows: readonly LoadBalancerRow[], fields?: readonly string[] | null) {
  const rel = await loadBalancerRelations(db, rows.map((r) => r.id), fields);
  return rows.map((r) => loadBalancerView(r, rel));
}

export type LoadBalancerView = ReturnType<typeof loadBalancerView>;

/**
 * The statistics the API serves: sums of what heartbeats stored per (listener, amphora)
 * (providers/amphora/health/stats.ts writes them), so a failover keeps the old amphora's history.
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';

type Q = Kysely<Database> | Transaction<Database>;

/** The body of `GET …/stats`. */
export interface ApiStats {
  bytes_in: number;
  bytes_out: number;
  active_connections: number;
  total_connections: number;
  request_errors: number;
}

const sums = [
  sql<string | number | null>`sum(bytes_in)`.as('bytes_in'),
  sql<string | number | null>`sum(bytes_out)`.as('bytes_out'),
  sql<string | number | null>`sum(active_connections)`.as('active_connections'),
  sql<string | number | null>`sum(total_connections)`.as('total_connections'),
  sql<string | number | null>`sum(request_errors)`.as('request_errors'),
];

/** PostgreSQL returns sums of bigint as numeric text; no row sums to null. */
const count = (v: string | number | null | undefined): number => Number(v ?? 0);

type Sums = Partial<Record<keyof ApiStats, string | number | null>>;

const statsOf = (row: Sums | undefined): ApiStats => ({
  bytes_in: count(row?.bytes_in),
  bytes_out: count(row?.bytes_out),
  active_connections: count(row?.active_connections),
  total_connections: count(row?.total_connections),
  request_errors: count(row?.request_errors),
});

/** Sums over every amphora that served the listener (or every listener of the LB); zeros when none reported. */
export async function statsTotals(db: Q, scope: { listenerId: string } | { loadBalancerId: string }): Promise<ApiStats> {
  const listeners = 'listenerId' in scope ? [scope.listenerId] : db.selectFrom('listener').select('id').where('load_balancer_id', '=', scope.loadBalancerId);
  return statsOf(await db.selectFrom('listener_statistics').select(sums).where('listener_id', 'in', listeners).executeTakeFirst());
}

/** Each listener's `statsTotals` in one query: every id given has an entry, zeros when none reported. */
export async function statsByListener(db: Q, listenerIds: readonly string[]): Promise<Map<string, ApiStats>> {
  const rows = listenerIds.length ? await db.selectFrom('listener_statistics').select('listener_id').select(sums).where('listener_id', 'in', listenerIds).groupBy('listener_id').execute() : [];
  const reported = new Map(rows.map((r) => [r.listener_id, r]));
  return new Map(listenerIds.map((id) => [id, statsOf(reported.get(id))]));
}

/** `amphora_stats` rows of one amphora: one per listener it served that still exists. */
export async function amphoraStats(db: Q, amphoraId: string) {
  const rows = await db
    .selectFrom('listener_statistics as s')
    .innerJoin('listener as l', 'l.id', 's.listener_id')
    .select(['s.listener_id', 'l.load_balancer_id', 's.active_connections', 's.bytes_in', 's.bytes_out', 's.request_errors', 's.total_connections'])
    .where('s.amphora_id', '=', amphoraId)
    .orderBy('s.listener_id')
    .execute();
  return rows.map((r) => ({
    id: amphoraId,
    listener_id: r.listener_id,
    loadbalancer_id: r.load_balancer_id,
    active_connections: count(r.active_connections),
    bytes_in: count(r.bytes_in),
    bytes_out: count(r.bytes_out),
    request_errors: count(r.request_errors),
    total_connections: count(r.total_connections),
  }));
}

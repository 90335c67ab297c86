/**
 * Listener statistics: heartbeats carry deltas since the previous message (and the current
 * connection count), accumulated per (listener, amphora) so a failover keeps the history of
 * the old amphora; the API serves their sums.
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../db/schema.js';

type Q = Kysely<Database> | Transaction<Database>;

export type StatsDelta = {
  bytesIn: number;
  bytesOut: number;
  /** Current, not a delta: the newest report replaces it. */
  activeConnections: number;
  totalConnections: number;
  requestErrors: number;
};

/** The body of `GET …/stats`. */
export interface ApiStats {
  bytes_in: number;
  bytes_out: number;
  active_connections: number;
  total_connections: number;
  request_errors: number;
}

/**
 * Adds a newer report to what is pending. A negative delta cannot be a count of traffic
 * (the agent resets its baseline when HAProxy restarts), so it adds nothing.
 */
export function addDelta(pending: StatsDelta | undefined, newer: StatsDelta): StatsDelta {
  const add = (a: number | undefined, b: number) => (a ?? 0) + Math.max(0, b);
  return {
    bytesIn: add(pending?.bytesIn, newer.bytesIn),
    bytesOut: add(pending?.bytesOut, newer.bytesOut),
    activeConnections: Math.max(0, newer.activeConnections),
    totalConnections: add(pending?.totalConnections, newer.totalConnections),
    requestErrors: add(pending?.requestErrors, newer.requestErrors),
  };
}

export interface StatsRow {
  listenerId: string;
  amphoraId: string;
  delta: StatsDelta;
}

/** One upsert per (listener, amphora): counters grow by the delta, active connections are replaced. */
export async function writeStats(db: Q, rows: readonly StatsRow[], now: number): Promise<void> {
  for (const { listenerId, amphoraId, delta } of rows) {
    await db
      .insertInto('listener_statistics')
      .values({
        listener_id: listenerId,
        amphora_id: amphoraId,
        bytes_in: delta.bytesIn,
        bytes_out: delta.bytesOut,
        active_connections: delta.activeConnections,
        total_connections: delta.totalConnections,
        request_errors: delta.requestErrors,
        updated_at: now,
      })
      .onConflict((oc) =>
        oc.columns(['listener_id', 'amphora_id']).doUpdateSet({
          bytes_in: sql`listener_statistics.bytes_in + excluded.bytes_in`,
          bytes_out: sql`listener_statistics.bytes_out + excluded.bytes_out`,
          active_connections: sql`excluded.active_connections`,
          total_connections: sql`listener_statistics.total_connections + excluded.total_connections`,
          request_errors: sql`listener_statistics.request_errors + excluded.request_errors`,
          updated_at: sql`excluded.updated_at`,
        }),
      )
      .execute();
  }
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

/** Sums over every amphora that served the listener (or every listener of the LB); zeros when none reported. */
export async function statsTotals(db: Q, scope: { listenerId: string } | { loadBalancerId: string }): Promise<ApiStats> {
  const listeners = 'listenerId' in scope ? [scope.listenerId] : db.selectFrom('listener').select('id').where('load_balancer_id', '=', scope.loadBalancerId);
  const row = await db.selectFrom('listener_statistics').select(sums).where('listener_id', 'in', listeners).executeTakeFirst();
  return {
    bytes_in: count(row?.bytes_in),
    bytes_out: count(row?.bytes_out),
    active_connections: count(row?.active_connections),
    total_connections: count(row?.total_connections),
    request_errors: count(row?.request_errors),
  };
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

/**
 * Listener statistics: heartbeats carry deltas since the previous message (and the current
 * connection count), accumulated per (listener, amphora) so a failover keeps the history of
 * the old amphora. The API reads their sums (api/views/stats.ts).
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../../../db/schema.js';

type Q = Kysely<Database> | Transaction<Database>;

export type StatsDelta = {
  bytesIn: number;
  bytesOut: number;
  /** Current, not a delta: the newest report replaces it. */
  activeConnections: number;
  totalConnections: number;
  requestErrors: number;
};

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

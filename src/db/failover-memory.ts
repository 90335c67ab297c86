/**
 * A load balancer's memory of its failed failovers. It is kept per load balancer, not per
 * amphora: every failover builds a new amphora, so a count per amphora starts at zero on each
 * replacement and never slows anything down. It lives in the database, so a restarted health
 * manager does not forget it either.
 *
 * A failover that fails on configuration (the new amphora's agent refused what we sent) would
 * fail the same way on every amphora: it is not retried until something changes, i.e. until a
 * job is enqueued for the load balancer by anyone but the health manager (a change to its
 * tree, its deletion, an operator's failover). Any other failure (boot, agent unreachable, …)
 * is retried after a delay that doubles with each failure, up to a bound. A failover that
 * succeeds forgets it all.
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from './schema.js';
import type { FailoverMemoryRecord } from './records/failover-memory.js';

type Q = Kysely<Database> | Transaction<Database>;

export type FailureKind = FailoverMemoryRecord['kind'];
export type FailoverMemory = FailoverMemoryRecord;

/** The longest delay between two automatic failovers of one load balancer after infrastructure failures. */
export const MAX_FAILOVER_BACKOFF_MS = 10 * 60_000;

export async function rememberFailure(db: Q, loadBalancerId: string, kind: FailureKind, now = Date.now()): Promise<void> {
  await db
    .insertInto('failover_memory')
    .values({ load_balancer_id: loadBalancerId, kind, failures: 1, failed_at: now })
    .onConflict((oc) => oc.column('load_balancer_id').doUpdateSet({ kind, failed_at: now, failures: sql`failover_memory.failures + 1` }))
    .execute();
}

/** After a failover that succeeded, and when anyone but the health manager enqueues a job for the load balancer. */
export async function forgetFailovers(db: Q, loadBalancerId: string): Promise<void> {
  await db.deleteFrom('failover_memory').where('load_balancer_id', '=', loadBalancerId).execute();
}

export async function failoverMemories(db: Q): Promise<Map<string, FailoverMemory>> {
  const rows = await db.selectFrom('failover_memory').selectAll().execute();
  return new Map(rows.map((r) => [r.load_balancer_id, { ...r, failures: Number(r.failures), failed_at: Number(r.failed_at) }]));
}

/**
 * When the health manager may fail the load balancer over again: never (until something
 * changes) after a configuration failure; else 2, 4, 8 … heartbeat timeouts after the last failure.
 */
export function nextFailoverAt(memory: FailoverMemory | undefined, timeoutMs: number): number {
  if (!memory) return 0;
  if (memory.kind === 'configuration') return Infinity;
  return memory.failed_at + Math.min(MAX_FAILOVER_BACKOFF_MS, timeoutMs * 2 ** Math.min(memory.failures, 30));
}

/**
 * A write to a load balancer's tree: `fn` runs in one transaction (lock, quota, rows and the
 * job it enqueues), and the workers are woken once that has committed. Waking earlier could
 * let a worker look before the job exists; not waking would leave the job to the lease timer.
 */
import type { Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import type { ApiDeps } from './context.js';

export async function change<T>(deps: Pick<ApiDeps, 'db' | 'jobs'>, fn: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
  const result = await deps.db.kysely.transaction().execute(fn);
  deps.jobs.notify();
  return result;
}

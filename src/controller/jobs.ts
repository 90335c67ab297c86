/** The persisted job queue: rows claimed with a lease, so any worker can resume another's job. */
import { jobCodec } from '../db/records/job.js';
import { randomUUID } from 'node:crypto';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import type { JobRow } from '../db/records/job.js';
import type { Db } from '../db/database.js';
import type { JobPayload, Operation } from '../provider-contract/operations.js';
import { preciseTimestamp, timestamp } from '../domain/time.js';
import { forgetFailovers } from '../db/failover-memory.js';
import { sessionEnded } from './worker-session.js';

export type Job = JobRow;
export type JobState = 'queued' | 'running' | 'done' | 'failed';

interface JobRequest<O extends Operation> {
  loadBalancerId: string;
  provider: string;
  operation: O;
  /**
   * The health manager's own failovers. Any other job is a change to the load balancer (or an
   * operator's decision), which lifts what its failed failovers left (see db/failover-memory.ts).
   * Kept in the payload, so the failover history tells the health manager's from an operator's.
   */
  automatic?: boolean;
}

/** A job of one operation with that operation's payload, which may be left out when none of its fields is required. */
export type EnqueueRequest = {
  [O in Operation]: JobRequest<O> & ({} extends JobPayload<O> ? { payload?: JobPayload<O> } : { payload: JobPayload<O> });
}[Operation];

let sequence = 0;
/** Millisecond time plus a per-process counter, so jobs enqueued within one millisecond keep their order. */
function enqueueStamp(): string {
  sequence = (sequence + 1) % 1_000_000;
  return `${preciseTimestamp()}.${String(sequence).padStart(6, '0')}`;
}

/** Called inside the API's transaction: the job exists iff the rows it acts on were written. */
export async function enqueue(trx: Transaction<Database> | Kysely<Database>, req: EnqueueRequest): Promise<string> {
  const id = randomUUID();
  await trx
    .insertInto('job')
    .values({
      id,
      load_balancer_id: req.loadBalancerId,
      provider: req.provider,
      operation: req.operation,
      payload: jobCodec.encode({ payload: { ...req.payload, ...(req.automatic && { automatic: true }) } }).payload,
      state: 'queued',
      next_step: 0,
      attempts: 0,
      lease_owner: null,
      lease_expires_at: null,
      error: null,
      created_at: enqueueStamp(),
      updated_at: null,
    })
    .execute();
  if (!req.automatic) await forgetFailovers(trx, req.loadBalancerId);
  return id;
}

/**
 * The jobs a worker may take, oldest first: queued, or running under an owner that is gone (its
 * lease expired, or on PostgreSQL its database session ended). None while another job of the same
 * load balancer is leased, so one LB's operations run in order.
 */
function runnable(db: Db, trx: Kysely<Database>, now: number) {
  return trx
    .selectFrom('job as j')
    .selectAll('j')
    .where((eb) => {
      const expired = eb('j.lease_expires_at', '<', now);
      const gone = db.dialect === 'postgres' ? eb.or([expired, sessionEnded(sql.ref('j.lease_owner'))]) : expired;
      return eb.or([eb('j.state', '=', 'queued'), eb.and([eb('j.state', '=', 'running'), gone])]);
    })
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('job as o')
            .select('o.id')
            .whereRef('o.load_balancer_id', '=', 'j.load_balancer_id')
            .where('o.state', '=', 'running')
            .where('o.lease_expires_at', '>=', now)
            .whereRef('o.id', '!=', 'j.id'),
        ),
      ),
    )
    .orderBy('j.created_at');
}

/** Whether a worker would claim a job now: what wakes idle workers when another's session ends, as no one announces that. */
export async function runnableJobExists(db: Db): Promise<boolean> {
  return (await runnable(db, db.kysely, Date.now()).limit(1).executeTakeFirst()) !== undefined;
}

/** Claims the oldest runnable job (see runnable), adopting it from a dead worker if it was running. */
export async function claimNext(db: Db, owner: string, leaseMs: number): Promise<Job | undefined> {
  const now = Date.now();
  return db.kysely.transaction().execute(async (trx) => {
    let q = runnable(db, trx, now).limit(1);
    if (db.dialect === 'postgres') q = q.forUpdate().skipLocked();
    const job = await q.executeTakeFirst();
    if (!job) return undefined;
    const claimed = await trx
      .updateTable('job')
      .set({ state: 'running', lease_owner: owner, lease_expires_at: now + leaseMs, attempts: sql`attempts + 1`, updated_at: timestamp() })
      .where('id', '=', job.id)
      .where('state', '=', job.state)
      .where((eb) => (job.lease_owner === null ? eb('lease_owner', 'is', null) : eb('lease_owner', '=', job.lease_owner)))
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) !== 1) return undefined;
    if (job.state === 'running') {
      const why = job.lease_expires_at !== null && job.lease_expires_at < now ? 'stopped renewing its lease' : 'lost its database session';
      await closeInterruptedSteps(trx, job.id, `interrupted: worker ${job.lease_owner} ${why}`);
    }
    return { ...job, state: 'running', lease_owner: owner, lease_expires_at: now + leaseMs, attempts: job.attempts + 1 };
  });
}

/** The steps a dead worker left open end with why, so the trace never shows them as still running. */
async function closeInterruptedSteps(trx: Transaction<Database>, jobId: string, error: string): Promise<void> {
  await trx.updateTable('job_step').set({ finished_at: preciseTimestamp(), error }).where('job_id', '=', jobId).where('finished_at', 'is', null).execute();
}

/**
 * Only one process opens an SQLite database (`ostia up`), so at its start every running job's
 * worker is dead: its jobs are adopted at once instead of after their lease.
 */
export async function adoptOrphanedJobs(db: Db): Promise<number> {
  if (db.dialect !== 'sqlite') return 0;
  const r = await db.kysely.updateTable('job').set({ lease_expires_at: 0 }).where('state', '=', 'running').executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/** Extends our lease; false when another worker has taken the job over. */
export async function renewLease(db: Db, jobId: string, owner: string, leaseMs: number): Promise<boolean> {
  const r = await db.kysely
    .updateTable('job')
    .set({ lease_expires_at: Date.now() + leaseMs })
    .where('id', '=', jobId)
    .where('lease_owner', '=', owner)
    .where('state', '=', 'running')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function recordProgress(db: Db, jobId: string, owner: string, nextStep: number): Promise<void> {
  await db.kysely.updateTable('job').set({ next_step: nextStep, updated_at: timestamp() }).where('id', '=', jobId).where('lease_owner', '=', owner).execute();
}

export async function finish(db: Db, jobId: string, owner: string, state: 'done' | 'failed', error: string | null = null): Promise<void> {
  await db.kysely
    .updateTable('job')
    .set({ state, error, lease_owner: null, lease_expires_at: null, updated_at: timestamp() })
    .where('id', '=', jobId)
    .where('lease_owner', '=', owner)
    .execute();
}

/** Hands a job back to the queue at its persisted step (the worker is stopping). */
export async function release(db: Db, jobId: string, owner: string): Promise<void> {
  await db.kysely
    .updateTable('job')
    .set({ state: 'queued', lease_owner: null, lease_expires_at: null, updated_at: timestamp() })
    .where('id', '=', jobId)
    .where('lease_owner', '=', owner)
    .where('state', '=', 'running')
    .execute();
}

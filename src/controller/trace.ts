/** The provisioning trace: one row per step run, read back by `ostia trace` and the API. */
import { randomBytes } from 'node:crypto';
import type { Db } from '../db/database.js';
import { preciseTimestamp } from '../domain/time.js';

let sequence = 0;
/**
 * Step ids sort in the order steps started, even within one millisecond (epoch ms, then a
 * per-process counter, then randomness so two workers never collide).
 */
function stepId(): string {
  sequence = (sequence + 1) % 1_000_000;
  return `${String(Date.now()).padStart(13, '0')}-${String(sequence).padStart(6, '0')}-${randomBytes(4).toString('hex')}`;
}

export async function stepStarted(db: Db, jobId: string, lbId: string, step: string): Promise<{ id: string; t0: number }> {
  const id = stepId();
  await db.kysely
    .insertInto('job_step')
    .values({ id, job_id: jobId, load_balancer_id: lbId, step, started_at: preciseTimestamp(), finished_at: null, duration_ms: null, error: null })
    .execute();
  return { id, t0: performance.now() };
}

export async function stepFinished(db: Db, run: { id: string; t0: number }, error: string | null = null): Promise<void> {
  await db.kysely
    .updateTable('job_step')
    .set({ finished_at: preciseTimestamp(), duration_ms: Math.round((performance.now() - run.t0) * 1000) / 1000, error })
    .where('id', '=', run.id)
    .execute();
}

export interface TraceEntry {
  job_id: string;
  operation: string;
  step: string;
  started_at: string;
  finished_at: string | null;
  duration_ms: number | null;
  error: string | null;
}

/** The steps of a load balancer's jobs, oldest first. */
export async function readTrace(db: Db, lbId: string): Promise<TraceEntry[]> {
  return db.kysely
    .selectFrom('job_step as s')
    .innerJoin('job as j', 'j.id', 's.job_id')
    .select(['s.job_id', 'j.operation', 's.step', 's.started_at', 's.finished_at', 's.duration_ms', 's.error'])
    .where('s.load_balancer_id', '=', lbId)
    .orderBy('s.id')
    .execute();
}

/**
 * The failover history (`GET /v2/ostia/failovers`): every amphora and load balancer failover job,
 * newest first, with its steps. Why it ran is what the health manager recorded in the job (the text
 * it also wrote to the amphora's status_reason, which later changes overwrite); an operator's failover
 * through the API records none.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { jobCodec } from '../../db/records/job.js';
import type { JobState } from '../../domain/enums.js';
import type { Operation, StepPayload } from '../../provider-contract/operations.js';

const FAILOVERS: readonly Operation[] = ['amphora.failover', 'loadbalancer.failover'];

/** The reason of a failover nobody recorded one for: an operator asked (`… failover` of the admin API). */
export const REQUESTED = 'requested through the API';

export interface FailoverStep {
  step: string;
  started_at: string;
  finished_at: string | null;
  duration_ms: number | null;
  error: string | null;
}

export interface Failover {
  job_id: string;
  load_balancer_id: string;
  /** null: a load balancer failover (every amphora of it). */
  amphora_id: string | null;
  /** Queued by the health manager, not by a request. */
  automatic: boolean;
  state: JobState;
  reason: string;
  /** Millisecond UTC timestamps, as the provisioning trace's. */
  created_at: string;
  /** The start of its first step; null while queued. */
  started_at: string | null;
  /** The end of its last step once done or failed; null before. */
  finished_at: string | null;
  error: string | null;
  steps: FailoverStep[];
}

/** A job's enqueue stamp carries a sequence number after the milliseconds (controller/jobs.ts): the wire shows the time. */
const timeOf = (stamp: string) => stamp.slice(0, 23);

export async function failoverHistory(db: Kysely<Database>, opts: { loadBalancerId?: string; limit: number }): Promise<Failover[]> {
  const jobs = await db
    .selectFrom('job')
    .select(['id', 'load_balancer_id', 'payload', 'state', 'error', 'created_at', 'updated_at'])
    .where('operation', 'in', FAILOVERS)
    .$if(opts.loadBalancerId !== undefined, (q) => q.where('load_balancer_id', '=', opts.loadBalancerId!))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(opts.limit)
    .execute();
  const steps = jobs.length
    ? await db.selectFrom('job_step').select(['job_id', 'step', 'started_at', 'finished_at', 'duration_ms', 'error']).where('job_id', 'in', jobs.map((j) => j.id)).orderBy('id').execute()
    : [];
  const stepsOf = new Map<string, FailoverStep[]>();
  for (const { job_id: jobId, ...step } of steps) {
    if (!stepsOf.has(jobId)) stepsOf.set(jobId, []);
    stepsOf.get(jobId)!.push(step);
  }
  return jobs.map((job) => {
    const payload = jobCodec.decode(job).payload as StepPayload;
    const own = stepsOf.get(job.id) ?? [];
    const ended = job.state === 'done' || job.state === 'failed';
    return {
      job_id: job.id,
      load_balancer_id: job.load_balancer_id,
      amphora_id: payload.amphora_id ?? null,
      automatic: payload.automatic === true,
      state: job.state,
      reason: payload.reason ?? REQUESTED,
      created_at: timeOf(job.created_at),
      started_at: own[0]?.started_at ?? null,
      finished_at: ended ? (own.map((s) => s.finished_at).filter((t): t is string => t !== null).sort().at(-1) ?? job.updated_at) : null,
      error: job.error,
      steps: own,
    };
  });
}

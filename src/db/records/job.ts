/** Persisted provider work and its trace. The payload's type per operation is the provider contract's (provider-contract/operations.ts). */
import type { JobState } from '../../domain/enums.js';
import { codec, type Row } from './codec.js';

/** A unit of provider work: claimed with a lease, resumed after a crash. */
export interface JobRecord {
  id: string;
  load_balancer_id: string;
  provider: string;
  operation: string;
  payload: Readonly<Record<string, unknown>>;
  state: JobState;
  /** Index of the next step to run: the flow's persisted progress. */
  next_step: number;
  attempts: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  error: string | null;
  created_at: string;
  updated_at: string | null;
}

export type JobRow = Row<JobRecord>;

export const jobCodec = codec<JobRecord>({ payload: 'json' });

/** One row per flow step run: the provisioning trace. */
export interface JobStepRecord {
  id: string;
  job_id: string;
  load_balancer_id: string;
  step: string;
  started_at: string;
  finished_at: string | null;
  duration_ms: number | null;
  error: string | null;
}

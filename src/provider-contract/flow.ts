/**
 * A flow is an ordered list of small idempotent steps, which a provider supplies per operation
 * and the worker (controller/worker.ts) runs. The worker persists progress after every step, so
 * a worker that dies mid-flow is replaced by one that resumes at the first unfinished step; on
 * failure it reverts the finished steps in reverse order.
 */
import type { Db } from '../db/database.js';
import type { Logger } from 'pino';
import type { StepPayload } from './operations.js';

export interface StepContext {
  readonly db: Db;
  readonly jobId: string;
  readonly loadBalancerId: string;
  readonly operation: string;
  readonly payload: StepPayload;
  /** Aborted when the worker stops, loses its lease or loses its database session: long steps must honour it. */
  readonly signal: AbortSignal;
  /** Extends the lease; long steps call it while they wait. */
  heartbeat(): Promise<void>;
  readonly log: Logger;
}

export interface Step {
  readonly name: string;
  run(ctx: StepContext): Promise<void>;
  revert?(ctx: StepContext): Promise<void>;
}

export interface Flow {
  readonly steps: readonly Step[];
  /** Runs after a failure has been reverted: leaves the objects in ERROR with the reason. */
  onFailure(ctx: StepContext, failedStep: string, error: Error): Promise<void>;
}

/**
 * The controller worker: claims jobs, runs their provider's flow step by step, persists
 * progress after each step and keeps its lease alive. Stopping it aborts the running steps;
 * their jobs are resumed by the next worker to claim them. On PostgreSQL it holds a database
 * session (worker-session.ts) whose end tells the other workers at once that its jobs are theirs.
 */
import { jobCodec } from '../db/records/job.js';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as pause } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Db } from '../db/database.js';
import type { ProviderLookup } from '../provider-contract/provider.js';
import type { Operation, StepPayload } from '../provider-contract/operations.js';
import type { JobSignal } from './signal.js';
import type { StepContext } from '../provider-contract/flow.js';
import { adoptOrphanedJobs, claimNext, finish, recordProgress, release, renewLease, runnableJobExists, type Job } from './jobs.js';
import { stepFinished, stepStarted } from './trace.js';
import { forgetEndedSessions, WorkerSessions } from './worker-session.js';

export interface WorkerOptions {
  db: Db;
  providers: ProviderLookup;
  signal: JobSignal;
  log: Logger;
  leaseMs: number;
  concurrency: number;
  /**
   * On PostgreSQL: the database the worker holds its session on, and how often it looks for jobs
   * to adopt, as nothing announces a session's end.
   */
  sessions?: { url: string; checkMs: number };
}

/** Who claims and runs jobs: the owner name their leases carry, and on PostgreSQL the end of the session that name stands for. */
interface Claimant {
  owner: string;
  ended?: AbortSignal;
}

export class Worker {
  readonly id = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly stop = new AbortController();
  private loops: Promise<void>[] = [];
  private readonly sessions: WorkerSessions | undefined;

  constructor(private readonly opts: WorkerOptions) {
    this.sessions = opts.sessions && new WorkerSessions({ db: opts.db, url: opts.sessions.url, id: this.id, log: opts.log, stop: this.stop.signal });
  }

  start(): void {
    if (this.opts.sessions) this.loops.push(this.watch(this.opts.sessions.checkMs));
    const adopted = adoptOrphanedJobs(this.opts.db).then(
      (n) => {
        if (n) this.opts.log.info({ jobs: n }, 'adopting the jobs the previous process left running');
      },
      (err: unknown) => this.opts.log.error({ err }, 'adopting the jobs of the previous process failed; they resume when their lease expires'),
    );
    for (let i = 0; i < this.opts.concurrency; i++) this.loops.push(adopted.then(() => this.loop()));
  }

  async close(): Promise<void> {
    this.stop.abort();
    await Promise.all(this.loops);
    await this.sessions?.close();
  }

  private async claimant(): Promise<Claimant | undefined> {
    if (!this.sessions) return { owner: this.id };
    const session = await this.sessions.current();
    return session && { owner: session.owner, ended: session.ended };
  }

  private async loop(): Promise<void> {
    const { db, signal, leaseMs, log } = this.opts;
    while (!this.stop.signal.aborted) {
      const claimant = await this.claimant();
      if (!claimant) return;
      let job: Job | undefined;
      try {
        job = await claimNext(db, claimant.owner, leaseMs);
      } catch (e) {
        log.error({ err: e }, 'claiming a job failed');
      }
      if (job) {
        await this.run(job, claimant);
        continue;
      }
      // Idle: wake on the next enqueue, or after half a lease to adopt jobs of dead workers (sooner on PostgreSQL: see watch).
      await signal.wait(leaseMs / 2, this.stop.signal);
    }
  }

  /**
   * Wakes this worker's idle loops when a job is runnable: how they learn that another worker's
   * session ended. Also forgets the sessions whose jobs are all adopted.
   */
  private async watch(checkMs: number): Promise<void> {
    const { db, signal, log } = this.opts;
    while (!this.stop.signal.aborted) {
      await pause(checkMs, undefined, { signal: this.stop.signal }).catch(() => undefined);
      if (this.stop.signal.aborted) return;
      try {
        if (await runnableJobExists(db)) signal.wake();
        await forgetEndedSessions(db);
      } catch (err) {
        log.warn({ err }, 'looking for jobs of ended worker sessions failed');
      }
    }
  }

  /** Runs one job from its persisted next step to the end, or reverts it on failure. */
  private async run(job: Job, { owner, ended: sessionEnded }: Claimant): Promise<void> {
    const { db, providers, leaseMs } = this.opts;
    const log = this.opts.log.child({ job: job.id, lb: job.load_balancer_id, op: job.operation });
    const lost = new AbortController();
    const signal = AbortSignal.any([this.stop.signal, lost.signal, ...(sessionEnded ? [sessionEnded] : [])]);
    const heartbeat = async () => {
      if (!(await renewLease(db, job.id, owner, leaseMs))) lost.abort(new Error('lease lost'));
    };
    const timer = setInterval(() => heartbeat().catch(() => undefined), leaseMs / 3);
    const ctx: StepContext = {
      db,
      jobId: job.id,
      loadBalancerId: job.load_balancer_id,
      operation: job.operation,
      payload: jobCodec.decode(job).payload as StepPayload,
      signal,
      heartbeat,
      log,
    };
    try {
      const driver = providers.forLoadBalancer(job.provider);
      const ended = await driver.jobHook?.begin(ctx);
      const flow = driver.flow(job.operation as Operation, ctx.payload);
      let i = job.next_step;
      for (; i < flow.steps.length; i++) {
        const step = flow.steps[i]!;
        signal.throwIfAborted();
        const run = await stepStarted(db, job.id, job.load_balancer_id, step.name);
        try {
          await step.run(ctx);
          await stepFinished(db, run);
        } catch (e) {
          const err = e instanceof Error ? e : new Error(String(e));
          if (signal.aborted) {
            // Not a failure of the step: the job resumes at this step, here after a restart or
            // on another worker (at once if we are stopping or lost our session, after the lease if we lost it).
            await stepFinished(db, run, `interrupted: ${err.message}`);
            if (this.stop.signal.aborted) await release(db, job.id, owner);
            log.warn('step interrupted; the job will resume at this step');
            return;
          }
          await stepFinished(db, run, err.message);
          log.error({ err, step: step.name }, 'step failed; reverting');
          for (let j = i - 1; j >= 0; j--) {
            const done = flow.steps[j]!;
            if (!done.revert) continue;
            const rev = await stepStarted(db, job.id, job.load_balancer_id, `revert:${done.name}`);
            try {
              await done.revert(ctx);
              await stepFinished(db, rev);
            } catch (re) {
              await stepFinished(db, rev, (re as Error).message);
            }
          }
          await flow.onFailure(ctx, step.name, err);
          await finish(db, job.id, owner, 'failed', `${step.name}: ${err.message}`);
          await ended?.();
          return;
        }
        await recordProgress(db, job.id, owner, i + 1);
      }
      await finish(db, job.id, owner, 'done');
      await ended?.();
    } catch (e) {
      log.error({ err: e }, 'job aborted');
    } finally {
      clearInterval(timer);
    }
  }
}

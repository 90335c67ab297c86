/**
 * Stale detection: amphorae silent for longer than the heartbeat timeout (and amphorae in
 * ERROR) are failed over through the same job the admin API enqueues. Storm protection:
 * nothing during the first timeout after start (heartbeats have not had a chance yet); a
 * circuit breaker when too large a share of the load balancers is silent at once (the fault
 * is then in the network or in us, and rebuilding everything would make it worse); a cap on
 * failovers in flight; nothing while our own heartbeat pipeline is dropping reports; and each
 * load balancer's memory of its failed failovers (db/failover-memory.ts): after a failure on
 * configuration none until it changes, after any other a back-off that grows.
 */
import type { Transaction } from 'kysely';
import type { Logger } from 'pino';
import type { Db } from '../../../db/database.js';
import type { Database } from '../../../db/schema.js';
import type { ProviderLookup } from '../../../provider-contract/provider.js';
import type { JobPayload } from '../../../provider-contract/operations.js';
import { lockLoadBalancer } from '../../../db/lb-lock.js';
import { ApiError, apiError } from '../../../domain/errors.js';
import { timestamp } from '../../../domain/time.js';
import { failoverMemories, nextFailoverAt } from '../../../db/failover-memory.js';
import type { AmphoraStatus } from '../../../domain/enums.js';

/**
 * The controller's job queue as the detector uses it, passed in by whoever starts the role
 * (runtime.ts passes controller/jobs.ts's `enqueue` and the job signal): providers sit beside the
 * controller, not above it.
 */
export type EnqueueFailover = (
  trx: Transaction<Database>,
  job: { loadBalancerId: string; provider: string; operation: 'amphora.failover'; payload: JobPayload<'amphora.failover'>; automatic: true },
) => Promise<unknown>;

export interface StaleDetectorOptions {
  db: Db;
  /** Wakes workers once the transactions that queued failovers have committed. */
  jobs: { notify(): void };
  enqueue: EnqueueFailover;
  providers: ProviderLookup;
  log: Logger;
  timeoutMs: number;
  maxConcurrentFailovers: number;
  circuitBreakerFraction: number;
  /** False while heartbeats may have been lost on our side (queue overflow, failed writes). */
  receiverHealthy?: () => boolean;
  now?: () => number;
}

export type CheckOutcome =
  | { kind: 'grace' }
  | { kind: 'receiver-degraded' }
  | { kind: 'circuit-open'; silent: string[]; total: number }
  | { kind: 'checked'; silent: string[]; triggered: string[] };

interface Candidate {
  id: string;
  load_balancer_id: string;
  status: AmphoraStatus;
  reason: string;
}

const WATCHED: readonly AmphoraStatus[] = ['ALLOCATED', 'FAILOVER_STOPPED'];

export class StaleDetector {
  private readonly now: () => number;
  private graceFrom: number;

  constructor(private readonly opts: StaleDetectorOptions) {
    this.now = opts.now ?? Date.now;
    this.graceFrom = this.now();
  }

  /** After losing the database we have not been recording heartbeats: wait a full timeout again. */
  restartGrace(): void {
    this.graceFrom = this.now();
  }

  async check(): Promise<CheckOutcome> {
    const { db, timeoutMs } = this.opts;
    const now = this.now();
    if (now - this.graceFrom < timeoutMs) return { kind: 'grace' };
    if (this.opts.receiverHealthy && !this.opts.receiverHealthy()) return { kind: 'receiver-degraded' };
    const cutoff = now - timeoutMs;
    const memories = await failoverMemories(db.kysely);
    // Stopped on configuration: its silence is known and answered; it must not trip the breaker for the others.
    const stopped = (lbId: string) => nextFailoverAt(memories.get(lbId), timeoutMs) === Infinity;
    const watched = db.kysely.selectFrom('amphora').where('load_balancer_id', 'is not', null).where('status', 'in', WATCHED);
    const watchedLbs = new Set((await watched.select('load_balancer_id').distinct().execute()).map((a) => a.load_balancer_id!).filter((lb) => !stopped(lb)));
    const silent = await watched
      .select(['id', 'load_balancer_id', 'status', 'last_heartbeat_at'])
      .where((eb) =>
        eb.or([
          eb('last_heartbeat_at', '<', cutoff),
          // Never heard from: counted from when it became what it is now.
          eb.and([eb('last_heartbeat_at', 'is', null), eb(eb.fn.coalesce('updated_at', 'created_at'), '<', timestamp(new Date(cutoff)))]),
        ]),
      )
      .orderBy('last_heartbeat_at')
      .execute();
    const silentIds = silent.map((a) => a.id);

    // Counted per load balancer: the amphorae of one (two with ACTIVE_STANDBY, and the replacements of each other) are one fault.
    const silentLbs = new Set(silent.map((a) => a.load_balancer_id!).filter((lb) => !stopped(lb)));
    if (silentLbs.size > 1 && silentLbs.size / watchedLbs.size > this.opts.circuitBreakerFraction) {
      await this.openCircuit(silent.filter((a) => silentLbs.has(a.load_balancer_id!)).map((a) => a.id), silentLbs.size, watchedLbs.size);
      return { kind: 'circuit-open', silent: silentIds, total: watchedLbs.size };
    }

    const errored = await db.kysely.selectFrom('amphora').select(['id', 'load_balancer_id', 'status']).where('load_balancer_id', 'is not', null).where('status', '=', 'ERROR').execute();
    const candidates: Candidate[] = [
      ...silent.map((a) => ({ ...a, load_balancer_id: a.load_balancer_id!, reason: silenceReason(a.last_heartbeat_at, now) })),
      ...errored.map((a) => ({ ...a, load_balancer_id: a.load_balancer_id!, reason: 'failover of an amphora in ERROR' })),
    ].filter((a) => nextFailoverAt(memories.get(a.load_balancer_id), timeoutMs) <= now);
    const triggered: string[] = [];
    let slots = this.opts.maxConcurrentFailovers - (await this.failoversInFlight());
    for (const candidate of candidates) {
      if (slots <= 0) break;
      if (!(await this.trigger(candidate))) continue;
      slots--;
      triggered.push(candidate.id);
    }
    if (triggered.length) this.opts.jobs.notify();
    return { kind: 'checked', silent: silentIds, triggered };
  }

  private async openCircuit(ids: string[], silentLbs: number, total: number): Promise<void> {
    const share = Math.round(this.opts.circuitBreakerFraction * 100);
    const reason = `failover suspended by the circuit breaker: ${silentLbs} of ${total} load balancers have a silent amphora (more than ${share}%)`;
    await this.opts.db.kysely.updateTable('amphora').set({ status: 'FAILOVER_STOPPED', status_reason: reason, updated_at: timestamp() }).where('id', 'in', ids).where('status', '=', 'ALLOCATED').execute();
    this.opts.log.warn({ silent: silentLbs, total }, reason);
  }

  private async failoversInFlight(): Promise<number> {
    const row = await this.opts.db.kysely
      .selectFrom('job')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('operation', '=', 'amphora.failover')
      .where('state', 'in', ['queued', 'running'])
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /**
   * Locks the load balancer (ACTIVE or ERROR → PENDING_UPDATE) and enqueues the failover in
   * one transaction. The lock is the claim: of several health managers, one wins; the others
   * find the LB pending and move on, as they do when another operation is in flight.
   */
  private async trigger(amp: Candidate): Promise<boolean> {
    const { db, providers, log, enqueue } = this.opts;
    const lb = await db.kysely.selectFrom('load_balancer').select(['id', 'provider']).where('id', '=', amp.load_balancer_id).executeTakeFirst();
    if (!lb) return false;
    try {
      providers.forLoadBalancer(lb.provider).checks.operation?.('amphora.failover');
      await db.kysely.transaction().execute(async (trx) => {
        await lockLoadBalancer(trx, lb.id, ['ACTIVE', 'ERROR'], 'PENDING_UPDATE');
        const still = await trx.updateTable('amphora').set({ status_reason: amp.reason }).where('id', '=', amp.id).where('status', '=', amp.status).executeTakeFirst();
        if (Number(still.numUpdatedRows) !== 1) throw apiError('CONFLICT', `amphora ${amp.id} changed meanwhile`);
        await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'amphora.failover', payload: { amphora_id: amp.id, reason: amp.reason }, automatic: true });
      });
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      log.debug({ amphora: amp.id, lb: lb.id, reason: e.message }, 'failover not triggered');
      return false;
    }
    log.warn({ amphora: amp.id, lb: lb.id, reason: amp.reason }, 'amphora failover triggered');
    return true;
  }
}

function silenceReason(lastHeartbeatAt: number | null, now: number): string {
  return lastHeartbeatAt === null ? 'no heartbeat ever received' : `no heartbeat for ${((now - lastHeartbeatAt) / 1000).toFixed(1)} s`;
}

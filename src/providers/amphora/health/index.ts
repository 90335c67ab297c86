/**
 * The health manager (`ostia health`, and inside `ostia up` when the amphora provider is
 * enabled): receives heartbeats, keeps operating status and statistics current, and fails
 * over amphorae that fall silent.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Config } from '../../../config.js';
import type { Db } from '../../../db/database.js';
import type { ProviderLookup } from '../../../provider-contract/provider.js';
import { HeartbeatReceiver } from './receiver.js';
import { StaleDetector, type CheckOutcome, type StaleDetectorOptions } from './stale.js';
import { writeHeartbeats } from './store.js';
import { registerHealthMetrics, type HealthCounters } from './metrics.js';

export type { HealthCounters };

export interface HealthManagerDeps {
  db: Db;
  config: Config;
  jobs: StaleDetectorOptions['jobs'];
  enqueue: StaleDetectorOptions['enqueue'];
  providers: ProviderLookup;
  log: Logger;
  /** This process's metrics registry, where the counters are exported. */
  metrics?: Registry;
}

/** How often queued reports are written: well inside a heartbeat interval. */
const FLUSH_FRACTION_OF_INTERVAL = 4;
/** Amphorae whose reports may wait for one write; beyond that the oldest are dropped. */
const MAX_PENDING_AMPHORAE = 10_000;

export class HealthManager {
  private readonly receiver: HeartbeatReceiver;
  private readonly detector: StaleDetector;
  private incompleteReports = 0;
  private failoversTriggered = 0;
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> = Promise.resolve();

  constructor(private readonly deps: HealthManagerDeps) {
    const { db, config, log } = deps;
    const { healthListen, heartbeatIntervalMs, heartbeatTimeoutMs } = config.amphora;
    this.receiver = new HeartbeatReceiver({
      listen: healthListen,
      heartbeatSecret: config.amphora.heartbeatSecret,
      maxSkewMs: heartbeatTimeoutMs,
      flushMs: Math.max(10, Math.floor(heartbeatIntervalMs / FLUSH_FRACTION_OF_INTERVAL)),
      maxPending: MAX_PENDING_AMPHORAE,
      write: async (batch) => {
        const outcome = await writeHeartbeats(db, batch);
        this.incompleteReports += outcome.incomplete.length;
        return outcome;
      },
      log,
    });
    this.detector = new StaleDetector({
      db,
      jobs: deps.jobs,
      enqueue: deps.enqueue,
      providers: deps.providers,
      log,
      timeoutMs: heartbeatTimeoutMs,
      maxConcurrentFailovers: config.amphora.maxConcurrentFailovers,
      circuitBreakerFraction: config.amphora.failoverCircuitBreakerFraction,
      receiverHealthy: () => this.receiver.healthySince(heartbeatTimeoutMs),
    });
    if (deps.metrics) registerHealthMetrics(deps.metrics, () => this.counters());
  }

  /** Binds the heartbeat socket and starts checking for silent amphorae; returns where it listens. */
  async start(): Promise<{ address: string; port: number }> {
    const bound = await this.receiver.start();
    this.timer = setInterval(() => {
      this.checking = this.checking.then(() => this.check());
    }, checkPeriodMs(this.deps.config.amphora.heartbeatTimeoutMs));
    this.deps.log.info({ listen: `${bound.address}:${bound.port}` }, 'health manager receiving heartbeats');
    return bound;
  }

  counters(): HealthCounters {
    return { ...this.receiver.counters, incompleteReports: this.incompleteReports, failoversTriggered: this.failoversTriggered };
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.checking;
    await this.receiver.close();
  }

  private async check(): Promise<void> {
    let outcome: CheckOutcome;
    try {
      outcome = await this.detector.check();
    } catch (err) {
      this.deps.log.error({ err }, 'stale amphora check failed; waiting a full heartbeat timeout before failing anything over');
      this.detector.restartGrace();
      return;
    }
    if (outcome.kind === 'checked') this.failoversTriggered += outcome.triggered.length;
    if (outcome.kind === 'receiver-degraded') this.deps.log.warn({ counters: this.counters() }, 'heartbeats were dropped or not written recently: no failover until that clears');
  }
}

/**
 * How often silence is judged. An amphora is failed over at most one period after its timeout,
 * so the period is a small fraction of it (250 ms at the default 3 s): one indexed query each time.
 */
export function checkPeriodMs(heartbeatTimeoutMs: number): number {
  return Math.max(50, Math.floor(heartbeatTimeoutMs / 12));
}

/**
 * Housekeeping (`ostia housekeeping`, and inside `ostia up` when the amphora provider is
 * enabled): the orphan reaper every REAP_INTERVAL_MS, agent certificate rotation every
 * ROTATE_INTERVAL_MS, expiry warnings for the certificates listeners and pools use every
 * EXPIRY_INTERVAL_MS, each once at start; and, with amphora.sparePoolSize set, the spare pool
 * refilled every SPARE_INTERVAL_MS, apart from the others so a long rotation never delays it;
 * with acme.directoryUrl set, listeners' managed certificates ordered and renewed every
 * acme.checkIntervalSeconds, apart too (an order waits for validation).
 * Several housekeepers may run: every action is idempotent or claimed in the database.
 */
import type { Logger } from 'pino';
import type { Config } from '../../../config.js';
import type { Db } from '../../../db/database.js';
import type { ComputeDriver } from '../../../compute/compute-driver.js';
import type { NetworkDriver } from '../../../network/network-driver.js';
import type { CertificateAuthority } from '../../../pki/ca.js';
import type { AmphoraDeps } from '../deps.js';
import { OrphanReaper, type ReapOutcome } from './orphans.js';
import { CertRotator, type RotationOutcome, type RotationTarget } from './certs.js';
import { CertificateExpiryWarner, type ExpiryWarning } from '../../../certificate-use/expiry-warner.js';
import { SparePool } from '../spares.js';
import { AcmeManager, type EnqueueListenerUpdate } from '../acme/manager.js';
import { AcmeOrderer } from '../acme/orderer.js';
import { pkiDir } from '../../../config.js';
import { join } from 'node:path';

/** As often as Octavia's DB cleanup. */
export const REAP_INTERVAL_MS = 30_000;
/** As often as Octavia's cert_interval. */
export const ROTATE_INTERVAL_MS = 60 * 60_000;
/** Thresholds are days apart: hourly is early enough. */
export const EXPIRY_INTERVAL_MS = 60 * 60_000;
/** A spare taken is replaced within this (plus its boot): a round with nothing to do is one indexed read. */
export const SPARE_INTERVAL_MS = 1000;

export interface HousekeeperDeps {
  db: Db;
  config: Config;
  log: Logger;
  compute: ComputeDriver;
  network: NetworkDriver;
  ca: Pick<CertificateAuthority, 'issueAmphoraCert'>;
  /** How a new certificate reaches an agent. */
  push(amp: RotationTarget, pem: string): Promise<void>;
  /** The spare pool to keep full, when amphora.sparePoolSize asks for one. */
  spares?: SparePool;
  /** Managed certificates to keep, when acme.directoryUrl names an ACME server. */
  acme?: AcmeManager;
  now?: () => number;
}

export class Housekeeper {
  readonly reaper: OrphanReaper;
  readonly rotator: CertRotator;
  readonly expiry: CertificateExpiryWarner;
  private readonly timers: NodeJS.Timeout[] = [];
  private running: Promise<unknown> = Promise.resolve();
  /** The rounds of the loops kept apart from the hourly tasks, and their next timers. */
  private readonly loops: Array<{ round: Promise<unknown>; timer?: NodeJS.Timeout }> = [];
  private closed = false;

  constructor(private readonly deps: HousekeeperDeps) {
    const { db, log, ca, config } = deps;
    this.reaper = new OrphanReaper({ db, log, compute: deps.compute, network: deps.network, now: deps.now });
    this.rotator = new CertRotator({
      db,
      log,
      issue: (id, address, days) => ca.issueAmphoraCert(id, address, days),
      push: deps.push,
      validityDays: config.amphora.certValidityDays,
      rotateBeforeDays: config.amphora.certRotateBeforeDays,
      now: deps.now,
    });
    this.expiry = new CertificateExpiryWarner({ db, log, now: deps.now });
  }

  start(): void {
    const every = (ms: number, task: () => Promise<unknown>) => {
      this.schedule(task);
      this.timers.push(setInterval(() => this.schedule(task), ms));
    };
    every(REAP_INTERVAL_MS, () => this.reaper.run());
    every(ROTATE_INTERVAL_MS, () => this.rotator.run());
    every(EXPIRY_INTERVAL_MS, () => this.expiry.run());
    const { spares, acme } = this.deps;
    if (spares) this.loop(() => spares.run(), SPARE_INTERVAL_MS, 'keeping the spare amphorae');
    if (acme) this.loop(() => acme.run(), this.deps.config.acme.checkIntervalSeconds * 1000, 'keeping the managed certificates');
  }

  /** A round, then the next `pauseMs` after it ended: rounds that outlast the pause (a boot, an ACME validation) never overlap. */
  private loop(round: () => Promise<unknown>, pauseMs: number, what: string): void {
    const loop: (typeof this.loops)[number] = { round: Promise.resolve() };
    this.loops.push(loop);
    const next = () => {
      if (this.closed) return;
      loop.round = round()
        .catch((err: unknown) => this.deps.log.error({ err }, `${what} failed; retrying on the next round`))
        .then(() => {
          if (!this.closed) loop.timer = setTimeout(next, pauseMs);
        });
    };
    next();
  }

  /** Every task once, in order (what `start` does first). */
  async runOnce(): Promise<{ orphans: ReapOutcome; certs: RotationOutcome; expiry: ExpiryWarning[] }> {
    return { orphans: await this.reaper.run(), certs: await this.rotator.run(), expiry: await this.expiry.run() };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.deps.spares?.close();
    for (const t of this.timers) clearInterval(t);
    for (const loop of this.loops) clearTimeout(loop.timer);
    await Promise.all([this.running, ...this.loops.map((loop) => loop.round)]);
  }

  /** One task at a time: a slow rotation delays the next reap rather than overlapping it. */
  private schedule(task: () => Promise<unknown>): void {
    this.running = this.running.then(task).catch((err: unknown) => this.deps.log.error({ err }, 'housekeeping task failed; retrying on its next run'));
  }
}

/** Sends a rotated certificate to its amphora through the provider's agent clients. */
export function certificatePush(agent: AmphoraDeps['agent']): HousekeeperDeps['push'] {
  return async (amp, pem) => {
    const client = await agent({ id: amp.id, agentUrl: amp.agent_url! });
    try {
      await client.putCertificate(pem);
    } finally {
      client.close();
    }
  };
}

/**
 * A housekeeper over the amphorae the amphora provider keeps: the same compute, network, CA
 * and agent clients the runtime gives its flows.
 */
export function openHousekeeper(db: Db, config: Config, log: Logger, amphora: AmphoraDeps, jobs: { notify(): void }, enqueue: EnqueueListenerUpdate): Housekeeper {
  const size = config.amphora.sparePoolSize;
  const spares = size > 0 ? new SparePool({ db, log, amphora, size }) : undefined;
  const acme = config.acme.directoryUrl
    ? new AcmeManager({
        db, settings: config.acme, log: log.child({ task: 'acme' }), jobs, enqueue, keyManager: amphora.keyManager, agent: amphora.agent,
        orderer: new AcmeOrderer(config.acme, join(pkiDir(config), 'acme-account.key')),
      })
    : undefined;
  return new Housekeeper({ db, config, log, compute: amphora.compute, network: amphora.network, ca: amphora.ca, push: certificatePush(amphora.agent), spares, acme });
}

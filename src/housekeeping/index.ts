/**
 * Housekeeping (`ostia housekeeping`, and inside `ostia up` when the amphora provider is
 * enabled): the orphan reaper every REAP_INTERVAL_MS, certificate rotation every
 * ROTATE_INTERVAL_MS, both once at start. Several housekeepers may run: every action is
 * idempotent or claimed in the database.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import type { ComputeDriver } from '../compute/driver.js';
import type { NetworkDriver } from '../network/driver.js';
import { CertificateAuthority } from '../pki/ca.js';
import { AgentClient } from '../amphora/client.js';
import { LocalCompute } from '../compute/local/driver.js';
import { LoopbackNetwork } from '../network/loopback/driver.js';
import { OrphanReaper, type ReapOutcome } from './orphans.js';
import { CertRotator, type RotationOutcome, type RotationTarget } from './certs.js';

/** As often as Octavia's DB cleanup. */
export const REAP_INTERVAL_MS = 30_000;
/** As often as Octavia's cert_interval. */
export const ROTATE_INTERVAL_MS = 60 * 60_000;

export interface HousekeeperDeps {
  db: Db;
  config: Config;
  log: Logger;
  compute: ComputeDriver;
  network: NetworkDriver;
  ca: CertificateAuthority;
  /** How a new certificate reaches an agent; by default over mutual TLS with AgentClient. */
  push?(amp: RotationTarget, pem: string): Promise<void>;
  now?: () => number;
}

export class Housekeeper {
  readonly reaper: OrphanReaper;
  readonly rotator: CertRotator;
  private readonly timers: NodeJS.Timeout[] = [];
  private running: Promise<unknown> = Promise.resolve();

  constructor(private readonly deps: HousekeeperDeps) {
    const { db, log, ca, config } = deps;
    this.reaper = new OrphanReaper({ db, log, compute: deps.compute, network: deps.network, now: deps.now });
    this.rotator = new CertRotator({
      db,
      log,
      issue: (id, address, days) => ca.issueAmphoraCert(id, address, days),
      push: deps.push ?? ((amp, pem) => pushOverMutualTls(ca, amp, pem)),
      validityDays: config.amphora.certValidityDays,
      rotateBeforeDays: config.amphora.certRotateBeforeDays,
      now: deps.now,
    });
  }

  start(): void {
    const every = (ms: number, task: () => Promise<unknown>) => {
      this.schedule(task);
      this.timers.push(setInterval(() => this.schedule(task), ms));
    };
    every(REAP_INTERVAL_MS, () => this.reaper.run());
    every(ROTATE_INTERVAL_MS, () => this.rotator.run());
  }

  /** Both tasks once, in order (what `start` does first). */
  async runOnce(): Promise<{ orphans: ReapOutcome; certs: RotationOutcome }> {
    return { orphans: await this.reaper.run(), certs: await this.rotator.run() };
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    await this.running;
  }

  /** One task at a time: a slow rotation delays the next reap rather than overlapping it. */
  private schedule(task: () => Promise<unknown>): void {
    this.running = this.running.then(task).catch((err: unknown) => this.deps.log.error({ err }, 'housekeeping task failed; retrying on its next run'));
  }
}

/**
 * A housekeeper over this machine's amphorae: compute `local` in DATA_DIR/amphorae, network
 * `loopback`, the CA in DATA_DIR/pki — where the amphora provider keeps them.
 */
export async function openHousekeeper(db: Db, config: Config, log: Logger): Promise<Housekeeper> {
  return new Housekeeper({
    db,
    config,
    log,
    compute: new LocalCompute(join(config.dataDir, 'amphorae')),
    network: new LoopbackNetwork(config.amphora.managementNetwork),
    ca: await CertificateAuthority.open(join(config.dataDir, 'pki')),
  });
}

async function pushOverMutualTls(ca: CertificateAuthority, amp: RotationTarget, pem: string): Promise<void> {
  const credentials = await ca.controllerClientCert();
  const client = new AgentClient({ url: amp.agent_url!, amphoraId: amp.id, serverCaPem: ca.serverCaPem, clientCertPem: credentials.certPem, clientKeyPem: credentials.keyPem });
  try {
    await client.putCertificate(pem);
  } finally {
    client.close();
  }
}

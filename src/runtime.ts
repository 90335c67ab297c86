/**
 * Wires the pieces of one process together from a validated config: database, network
 * catalog, providers, job signal, and whichever roles this process plays: the API, the worker,
 * and the background roles of the enabled providers (each provider's `roles.ts`).
 */
import { apiError } from './domain/errors.js';
import { join } from 'node:path';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import pino, { type Logger } from 'pino';
import { Registry } from 'prom-client';
import type { Config } from './config.js';
import { amphoraRootDir, computeIsNoop, ConfigError, pkiDir, publicUrl as configuredUrl } from './config.js';
import { openDatabase, migrate, type Db } from './db/database.js';
import { NetworkCatalog } from './network/catalog.js';
import { networkService } from './network/from-config.js';
import { ProviderRegistry } from './providers/registry.js';
import { amphoraeRun, ovnProviderEnabled, RoleStartError, type BackgroundRole } from './providers/background-roles.js';
import { LocalJobSignal, PostgresJobSignal, type JobSignal } from './controller/signal.js';
import { Worker } from './controller/worker.js';
import { enqueue } from './controller/jobs.js';
import { buildApp } from './api/app.js';
import type { ApiDeps } from './api/context.js';
import type { RequestContext } from './domain/context.js';
import { amphoraDriver } from './providers/amphora/driver.js';
import { agentClients, noopAgentClients, type AmphoraDeps, type AmphoraDepsLoader } from './providers/amphora/deps.js';
import { openOnce } from './providers/open-once.js';
import { createKeyManager, KEY_MANAGER_PREFIX, type KeyManager } from './keymanager/index.js';
import { ovnDriver } from './providers/ovn/driver.js';
import type { OvnDeps } from './providers/ovn/deps.js';
import { ovnMachinery } from './providers/ovn/machinery.js';
import { noopDriver } from './providers/noop/driver.js';
import { certificateBookkeeping } from './providers/certificate-bookkeeping.js';
import { providerMoves } from './providers/provider-moves.js';
import { startAmphoraHealth, startAmphoraHousekeeping } from './providers/amphora/roles.js';

export interface RuntimeOptions {
  api?: boolean;
  worker?: boolean;
  /** Overrides the authenticator built from config (tests use Octavia's "testing" mode). */
  authenticate?: (headers: Record<string, string | string[] | undefined>) => Promise<RequestContext>;
  mounts?: Array<{ prefix: string; plugin: FastifyPluginAsync }>;
  logger?: Logger | false;
}


export interface RunningRole {
  readonly role: BackgroundRole;
  /** Where the amphora health manager receives heartbeats (`host:port`). */
  readonly listen?: string;
  close(): Promise<void>;
}

export interface Runtime {
  readonly config: Config;
  readonly db: Db;
  readonly deps: ApiDeps;
  readonly app?: FastifyInstance;
  readonly worker?: Worker;
  readonly log: Logger;
  /** The amphora provider's compute, network, CA and agent clients, opened on first use. */
  readonly amphora: AmphoraDepsLoader;
  /** Certificates and keys by reference: the embedded Barbican subset, or a real Barbican. */
  readonly keyManager: KeyManager;
  /** The ovn provider's Northbound connection and network view, opened on first use. */
  readonly ovn: () => Promise<OvnDeps>;
  /** Starts listening (api) and claiming jobs (worker); returns the bound URL if any. */
  start(): Promise<string | undefined>;
  /**
   * Starts the background roles asked for that the enabled providers run, on this runtime's
   * database and job signal: `health` is the amphora health manager (when amphorae run) and OVN
   * member health, `housekeeping` the amphora provider's. If one fails, those started are closed.
   */
  startRoles(asked: { health?: boolean; housekeeping?: boolean }): Promise<RunningRole[]>;
  close(): Promise<void>;
}

/**
 * The amphora provider's machinery on this machine: the CA under DATA_DIR/pki, amphorae under
 * DATA_DIR/amphorae as local processes on loopback addresses (compute.driver local), or in
 * namespaces of their own on the management bridge (netns, with network.driver bridge, whose
 * fabric is built here), or nothing booted and no agent spoken to (noop). Loaded and opened by
 * the first flow that needs it, so API-only processes neither load nor touch it.
 */
function amphoraDeps(config: Config, keyManager: KeyManager): AmphoraDepsLoader {
  const machinery = amphoraMachinery(config);
  return openOnce(async () => ({ ...(await machinery()), keyManager }));
}

/** The amphora deps but the key manager: what booting an amphora needs (`ostia doctor --boot-test` boots one as the flows do). */
export function amphoraMachinery(config: Config): () => Promise<Omit<AmphoraDeps, 'keyManager'>> {
  return openOnce(async () => {
    const { CertificateAuthority } = await import('./pki/ca.js');
    const ca = await CertificateAuthority.open(pkiDir(config));
    const rootDir = amphoraRootDir(config);
    const common = { settings: config.amphora, ca };
    if (config.compute.driver === 'netns') {
      const [{ BridgeNetwork }, { NetnsCompute }] = await Promise.all([import('./network/bridge-network/bridge-network.js'), import('./compute/netns-compute/netns-compute.js')]);
      let network: InstanceType<typeof BridgeNetwork>;
      try {
        network = new BridgeNetwork(config.dataDir, config.amphora.managementNetwork, new NetworkCatalog(config.network), config.ovn);
      } catch (e) {
        // Settings the bridge cannot carry: the configuration's to fix, not a bug.
        throw new ConfigError((e as Error).message);
      }
      await network.open();
      const compute = new NetnsCompute(rootDir, { management: network.management, dataDir: config.dataDir });
      return { ...common, network, dataPlane: true, activeStandby: true, compute, amphoraDir: (id) => compute.amphoraDir(id), agent: agentClients(ca) };
    }
    const { LoopbackNetwork } = await import('./network/loopback-network/loopback-network.js');
    // Management addresses only under compute.driver noop, whose flows plug no VIP (the one way network.driver noop goes with amphorae).
    const network = new LoopbackNetwork(config.amphora.managementNetwork);
    if (computeIsNoop(config)) {
      const { NoopCompute } = await import('./compute/noop-compute/noop-compute.js');
      // Nothing is written there: the directory only names the amphora in messages.
      return { ...common, network, dataPlane: false, activeStandby: true, compute: new NoopCompute(), amphoraDir: (id) => join(rootDir, id), agent: noopAgentClients };
    }
    const { LocalCompute } = await import('./compute/local-compute/local-compute.js');
    const compute = new LocalCompute(rootDir);
    return { ...common, network, dataPlane: true, activeStandby: false, compute, amphoraDir: (id) => compute.amphoraDir(id), agent: agentClients(ca) };
  });
}

export async function createRuntime(config: Config, opts: RuntimeOptions): Promise<Runtime> {
  const log = opts.logger || pino({ level: opts.logger === false ? 'silent' : config.log.level });
  const db = await openDatabase(config.database.url);
  await migrate(db);
  const signal: JobSignal = db.dialect === 'postgres' ? await PostgresJobSignal.connect(config.database.url) : new LocalJobSignal();
  let boundUrl: string | undefined;
  const publicUrl = () => boundUrl ?? configuredUrl(config);
  const { keyManager, api: keyManagerApi } = createKeyManager(config, { db, publicUrl });
  const amphora = amphoraDeps(config, keyManager);
  const network = new NetworkCatalog(config.network);
  // A worker reconciles the Northbound database with ours when it connects and after every reconnection.
  const ovn = ovnMachinery(config, network, db, log.child({ role: opts.worker ? 'worker' : 'api' }), { reconcile: !!opts.worker });
  const bookkeeping = certificateBookkeeping(keyManager);
  const moves = providerMoves(config, amphora, ovn.load);
  const providers = new ProviderRegistry(config.api.enabledProviders, config.api.defaultProvider, {
    noop: () => noopDriver(bookkeeping),
    amphora: () => amphoraDriver(amphora, config.compute.driver, bookkeeping, moves),
    ovn: () => ovnDriver(ovn.load, network, config, bookkeeping, moves),
  });
  const deps: ApiDeps = {
    db,
    config,
    providers,
    network: networkService(config.network, network),
    jobs: signal,
    publicUrl,
    keyManager,
    metrics: new Registry(),
    // Only an API runtime serves requests; it is given an authenticator (checked below).
    authenticate: opts.authenticate ?? (() => Promise.reject(apiError('UNAUTHORIZED'))),
  };
  let app: FastifyInstance | undefined;
  if (opts.api) {
    if (!opts.authenticate) throw new Error('an api runtime needs an authenticator');
    const mounts = [...(opts.mounts ?? []), ...(keyManagerApi ? [{ prefix: KEY_MANAGER_PREFIX, plugin: keyManagerApi(opts.authenticate), ownProtocol: true }] : [])];
    app = await buildApp({ ...deps, mounts, logger: opts.logger === false ? false : log });
  }
  const roleStarters = (asked: { health?: boolean; housekeeping?: boolean }) => {
    const starters: Array<[BackgroundRole, () => Promise<Omit<RunningRole, 'role'>>]> = [];
    if (asked.health && amphoraeRun(config))
      starters.push([
        'amphora health',
        async () => {
          // Under network.driver bridge heartbeats arrive on the management bridge, which opening the machinery builds.
          if (config.network.driver === 'bridge') await amphora();
          return startAmphoraHealth({ db, config, jobs: signal, enqueue, providers, log: log.child({ role: 'health' }), metrics: deps.metrics });
        },
      ]);
    if (asked.health && ovnProviderEnabled(config))
      starters.push(['ovn health', async () => (await import('./providers/ovn/roles.js')).startOvnHealth(db, config, ovn.load, log.child({ role: 'health', provider: 'ovn' }))]);
    if (asked.housekeeping) starters.push(['amphora housekeeping', async () => startAmphoraHousekeeping(db, config, log.child({ role: 'housekeeping' }), await amphora(), signal, enqueue)]);
    return starters;
  };
  const worker = opts.worker
    ? new Worker({
        db, providers, signal, log: log.child({ role: 'worker' }), leaseMs: config.worker.leaseSeconds * 1000, concurrency: config.worker.concurrency,
        sessions: db.dialect === 'postgres' ? { url: config.database.url, checkMs: config.worker.adoptCheckSeconds * 1000 } : undefined,
      })
    : undefined;
  return {
    config, db, deps, app, worker, log, amphora, keyManager, ovn: ovn.load,
    async start() {
      worker?.start();
      if (worker && ovnProviderEnabled(config)) ovn.warmUp();
      if (!app) return undefined;
      await app.listen({ host: config.api.host, port: config.api.port });
      const addr = app.server.address();
      if (addr && typeof addr === 'object' && !config.api.publicUrl) boundUrl = `http://${config.api.host}:${addr.port}`;
      return deps.publicUrl();
    },
    async startRoles(asked) {
      const running: RunningRole[] = [];
      for (const [role, start] of roleStarters(asked)) {
        try {
          running.push({ role, ...(await start()) });
        } catch (e) {
          for (const started of running.reverse()) await started.close();
          throw new RoleStartError(role, e);
        }
      }
      return running;
    },
    async close() {
      await app?.close();
      await worker?.close();
      await ovn.close();
      await signal.close();
      await db.close();
    },
  };
}

/**
 * Wires the pieces of one process together from a validated config: database, network
 * catalog, providers, job signal, and whichever roles this process plays.
 */
import { join } from 'node:path';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import pino, { type Logger } from 'pino';
import { Registry } from 'prom-client';
import type { Config } from './config.js';
import { computeIsNoop, publicUrl as configuredUrl } from './config.js';
import { openDatabase, migrate, type Db } from './db/database.js';
import { NetworkCatalog } from './network/catalog.js';
import { networkService } from './network/from-config.js';
import { providerEnabled, ProviderRegistry } from './providers/registry.js';
import { LocalJobSignal, PostgresJobSignal, type JobSignal } from './controller/signal.js';
import { Worker } from './controller/worker.js';
import { buildApp } from './api/app.js';
import type { ApiDeps } from './api/context.js';
import type { RequestContext } from './domain/context.js';
import { amphoraDriver } from './providers/amphora/driver.js';
import { agentClients, noopAgentClients, type AmphoraDepsLoader } from './providers/amphora/deps.js';
import { openOnce } from './providers/open-once.js';
import { createKeyManager, KEY_MANAGER_PREFIX, type KeyManager } from './keymanager/index.js';
import { ovnDriver } from './providers/ovn/driver.js';
import type { OvnDeps } from './providers/ovn/deps.js';
import { ovnMachinery } from './providers/ovn/machinery.js';
import { noopDriver } from './providers/noop/driver.js';
import { certificateBookkeeping } from './providers/certificate-bookkeeping.js';

export interface RuntimeOptions {
  api?: boolean;
  worker?: boolean;
  /** Overrides the authenticator built from config (tests use Octavia's "testing" mode). */
  authenticate?: (headers: Record<string, string | string[] | undefined>) => Promise<RequestContext>;
  mounts?: Array<{ prefix: string; plugin: FastifyPluginAsync }>;
  logger?: Logger | false;
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
  close(): Promise<void>;
}

/**
 * The amphora provider's machinery on this machine: the CA under DATA_DIR/pki, amphorae as
 * local processes under DATA_DIR/amphorae (or, under compute.driver noop, nothing booted and no
 * agent spoken to), addresses on loopback. Loaded and opened by the first flow that needs it,
 * so API-only processes neither load nor touch it.
 */
function amphoraDeps(config: Config, keyManager: KeyManager): AmphoraDepsLoader {
  return openOnce(async () => {
    const [{ CertificateAuthority }, { LoopbackNetwork }] = await Promise.all([import('./pki/ca.js'), import('./network/loopback/driver.js')]);
    const ca = await CertificateAuthority.open(join(config.dataDir, 'pki'));
    // Management addresses only under compute.driver noop, whose flows plug no VIP (the one way network.driver noop goes with amphorae).
    const common = { settings: config.amphora, network: new LoopbackNetwork(config.amphora.managementNetwork), ca, keyManager };
    if (computeIsNoop(config)) {
      const { NoopCompute } = await import('./compute/noop/driver.js');
      // Nothing is written there: the directory only names the amphora in messages.
      return { ...common, dataPlane: false, compute: new NoopCompute(), amphoraDir: (id) => join(config.dataDir, 'amphorae', id), agent: noopAgentClients };
    }
    const { LocalCompute } = await import('./compute/local/driver.js');
    const compute = new LocalCompute(join(config.dataDir, 'amphorae'));
    return { ...common, dataPlane: true, compute, amphoraDir: (id) => compute.amphoraDir(id), agent: agentClients(ca) };
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
  const providers = new ProviderRegistry(config.api.enabledProviders, config.api.defaultProvider, {
    noop: () => noopDriver(bookkeeping),
    amphora: () => amphoraDriver(amphora, config.compute.driver, bookkeeping),
    ovn: () => ovnDriver(ovn.load, network, config, bookkeeping),
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
  };
  let app: FastifyInstance | undefined;
  if (opts.api) {
    if (!opts.authenticate) throw new Error('an api runtime needs an authenticator');
    const mounts = [...(opts.mounts ?? []), ...(keyManagerApi ? [{ prefix: KEY_MANAGER_PREFIX, plugin: keyManagerApi(opts.authenticate), ownProtocol: true }] : [])];
    app = await buildApp({ ...deps, authenticate: opts.authenticate, mounts, logger: opts.logger === false ? false : log });
  }
  const worker = opts.worker ? new Worker({ db, providers, signal, log: log.child({ role: 'worker' }), leaseMs: config.worker.leaseSeconds * 1000, concurrency: config.worker.concurrency }) : undefined;
  return {
    config, db, deps, app, worker, log, amphora, keyManager, ovn: ovn.load,
    async start() {
      worker?.start();
      if (worker && providerEnabled(config.api.enabledProviders, 'ovn')) ovn.warmUp();
      if (!app) return undefined;
      await app.listen({ host: config.api.host, port: config.api.port });
      const addr = app.server.address();
      if (addr && typeof addr === 'object' && !config.api.publicUrl) boundUrl = `http://${config.api.host}:${addr.port}`;
      return deps.publicUrl();
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

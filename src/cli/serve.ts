/**
 * The life of a serving process (`up`, `api`, `worker`): build the runtime with the identity
 * the config asks for, start it, say where it is, and shut down cleanly on SIGINT/SIGTERM.
 * Logs go to stderr so stdout carries only what the command prints (tests parse its JSON).
 * Commands import this module lazily, so `--help` does not wait for Fastify and the drivers.
 */
import { join, resolve } from 'node:path';
import pino, { type Logger } from 'pino';
import { parse as parseYaml } from 'yaml';
import { driverChoice, testModes, type Config } from '../config.js';
import { DASHBOARD_PREFIX } from '../domain/dashboard.js';
import { amphoraeRun, ovnProviderEnabled } from '../providers/background-roles.js';
import { createRuntime, type Runtime, type RuntimeOptions } from '../runtime.js';
import { cloudsYaml, createAuthenticator, Directory, IDENTITY_PREFIX, keystone, TokenService } from '../identity/index.js';
import { CliError, printJson } from './command.js';
import { roleStartFailure } from './roles.js';
import { databaseError, prepareDataDir, redactUrl, sqlitePath, withHeartbeatSecret, withKeyManagerKey, withTokenSecret, writePrivateFile } from './settings.js';
import { stopSignal } from './signals.js';
import { claimBlock, withBlock } from './address-block.js';

export interface Roles {
  api: boolean;
  worker: boolean;
  /** The background roles: `ostia health` (amphora heartbeats, OVN member health), `ostia housekeeping` (amphorae), or both inside `ostia up`. */
  health?: boolean;
  housekeeping?: boolean;
  /** `ostia up` with the amphora provider: addresses left at their defaults come from the data directory's block (address-block.ts). */
  addressBlock?: boolean;
}

export interface Announcement {
  url: string | null;
  clouds_yaml: string | null;
  pid: number;
  /** Where heartbeats are received, when this process runs the amphora health manager (never under compute.driver noop). */
  health_listen?: string;
  /** The test modes on (compute.driver noop, network.driver noop, identity.mode testing), each said in full. */
  test_mode?: string;
}

interface Service {
  listen?: string;
  close(): Promise<void>;
}

export async function serve(options: Config, roles: Roles, json: boolean): Promise<number> {
  // Listening first, so a signal that arrives while starting still shuts down cleanly.
  const stopped = stopSignal();
  // A worker over PostgreSQL keeps nothing on disk; the api keeps its token secret and clouds.yaml.
  // A no-op amphora runs no HAProxy and keeps no sockets.
  // Everything this process and its amphorae create is owner-only, whatever the caller's umask.
  process.umask(0o077);
  if (roles.worker && amphoraeRun(options)) await preflightAmphorae(options);
  const fixed = roles.api || sqlitePath(options) || roles.addressBlock ? prepareDataDir(options) : [];
  const placed = roles.addressBlock ? withBlock(options, claimBlock(options.dataDir)) : options;
  const config = withHeartbeat(withSealingKey(roles.api ? withTokenSecret(placed) : placed, roles), roles);
  const log = pino({ level: config.log.level }, pino.destination({ dest: 2, sync: true }));
  for (const line of fixed) log.warn(`data directory was open to other users: ${line}`);
  const runtime = await openRuntime(config, roles, log);
  let url: string | undefined;
  try {
    url = await runtime.start();
  } catch (e) {
    await runtime.close();
    throw listenError(e, config);
  }
  const services = await startServices(runtime, roles);
  const healthListen = services.find((s) => s.listen)?.listen;
  const clouds = url && servesKeystone(config) ? cloudsYaml(url, config) : null;
  const cloudsFile = clouds ? join(config.dataDir, 'clouds.yaml') : null;
  if (clouds && cloudsFile) writePrivateFile(cloudsFile, clouds);
  const drivers = driverChoice(config);
  if (drivers) log.info(drivers);
  const notices = testModes(config).map((m) => m.notice);
  for (const notice of notices) log.warn(notice);
  const testMode = notices.length ? notices.join(' ') : undefined;
  const announcement: Announcement = {
    url: url ?? null,
    clouds_yaml: cloudsFile,
    pid: process.pid,
    ...(healthListen && { health_listen: healthListen }),
    ...(testMode && { test_mode: testMode }),
  };
  if (json) printJson(announcement);
  else process.stdout.write(describe(config, roles, announcement, runtime, clouds));

  const signal = await stopped;
  log.info({ signal }, 'shutting down');
  for (const service of services.reverse()) await service.close();
  await runtime.close();
  return 0;
}

/**
 * The worker (which gives each amphora its heartbeat key) and the health manager (which checks
 * it) derive keys from one secret. In one process it may live in the data directory; run apart,
 * they share only the config file, so it must be there.
 */
function withHeartbeat(config: Config, roles: Roles): Config {
  if (!amphoraeRun(config) || !(roles.worker || roles.health) || config.amphora.heartbeatSecret) return config;
  if (roles.worker && roles.health) return withHeartbeatSecret(config);
  throw new CliError(
    `runs the ${roles.worker ? 'worker' : 'health manager'} of the amphora provider apart from the ${roles.worker ? 'health manager' : 'worker'}, but amphora.heartbeatSecret is empty: both must derive the amphorae's heartbeat keys from one secret`,
    "Set amphora.heartbeatSecret (e.g. from 'openssl rand -hex 32') in the config file that every Ostia process reads.",
  );
}

/**
 * The api seals the key manager's payloads and the worker opens them to ship certificates to its
 * amphorae. In one process the key may live in the data directory; run apart, they share only the
 * config file, so it must be there.
 */
function withSealingKey(config: Config, roles: Roles): Config {
  if (config.keyManager.mode === 'external' || config.keyManager.encryptionKey) return config;
  if (roles.api) return withKeyManagerKey(config);
  if (!roles.worker || !amphoraeRun(config)) return config;
  throw new CliError(
    "runs the worker of the amphora provider apart from the api, but keyManager.encryptionKey is empty: the worker opens the certificates the api's key manager sealed, so both need its key",
    "Set keyManager.encryptionKey (e.g. from 'openssl rand -base64 32') in the config file that every Ostia process reads.",
  );
}

/** A worker that boots amphorae fails at start, not at the first load balancer, when they could not run. */
async function preflightAmphorae(config: Config): Promise<void> {
  const [{ findAmphoraProgram }, { HAPROXY_SOCKET_PATH_MAX, longestSocketPath }] = await Promise.all([
    import('../compute/process-compute.js'),
    import('../amphora-agent/layout.js'),
  ]);
  if (!findAmphoraProgram(config.amphora.haproxyBinary))
    throw new CliError(
      `the amphora provider is enabled but its HAProxy ('${config.amphora.haproxyBinary}', amphora.haproxyBinary) is not installed`,
      "Install it (apt-get install haproxy, or 'npm run up' does), set amphora.haproxyBinary to its path, or enable only the noop provider (api.enabledProviders: [noop]).",
    );
  const dataDir = resolve(config.dataDir);
  const socket = longestSocketPath(join(dataDir, 'amphorae'));
  if (socket.length > HAPROXY_SOCKET_PATH_MAX) {
    const room = dataDir.length - (socket.length - HAPROXY_SOCKET_PATH_MAX);
    throw new CliError(
      `the data directory ${dataDir} is too long for the amphorae's HAProxy sockets (${socket.length} bytes, HAProxy takes at most ${HAPROXY_SOCKET_PATH_MAX})`,
      `Use a data directory path of at most ${room} characters, e.g. --data-dir /var/lib/ostia`,
    );
  }
}

/** The background roles the runtime starts, and the health manager's own /metrics when no API serves them. */
async function startServices(runtime: Runtime, roles: Roles): Promise<Service[]> {
  const services: Service[] = [];
  try {
    services.push(...(await runtime.startRoles({ health: roles.health, housekeeping: roles.housekeeping })));
    const metricsListen = runtime.config.amphora.healthMetricsListen;
    // With the API in the process, its authenticated /metrics serves this registry.
    if (roles.health && !roles.api && metricsListen) {
      const { serveProcessMetrics } = await import('./process-metrics.js');
      const metrics = await serveProcessMetrics(runtime.deps.metrics, metricsListen);
      runtime.log.info({ listen: metrics.listen }, "serving the health manager's metrics at /metrics");
      services.push({ close: () => metrics.close() });
    }
  } catch (e) {
    for (const service of services.reverse()) await service.close();
    await runtime.close();
    throw roleStartFailure(e, runtime.config);
  }
  return services;
}

async function openRuntime(config: Config, roles: Roles, logger: Logger): Promise<Runtime> {
  const options: RuntimeOptions = { api: roles.api, worker: roles.worker, logger };
  // The keystone plugin reports the URL clients reach us at, known only once listening.
  let runtime: Runtime | undefined;
  if (roles.api) Object.assign(options, identityFor(config, () => runtime!.deps.publicUrl()));
  try {
    runtime = await createRuntime(config, options);
  } catch (e) {
    throw databaseError(e, config);
  }
  return runtime;
}

/**
 * Where clients log in at our own Keystone (and so where clouds.yaml can work): embedded, and
 * noauth, whose tokens are ignored but whose callers are all admin. Not external (the clouds log
 * in at the deployment's Keystone), nor testing, where the caller's project and roles come from
 * headers, so a token-only client would be refused everything.
 */
function servesKeystone(config: Config): boolean {
  return config.identity.mode === 'embedded' || config.identity.mode === 'noauth';
}

/** The authenticator, plus the embedded Keystone where clients log in (servesKeystone). */
function identityFor(config: Config, publicUrl: () => string): Pick<RuntimeOptions, 'authenticate' | 'mounts'> {
  if (!servesKeystone(config)) return { authenticate: createAuthenticator(config), mounts: [] };
  const tokens = new TokenService(config.identity.tokenSecret, config.identity.tokenTtlSeconds);
  const directory = new Directory(config.identity);
  return {
    authenticate: createAuthenticator(config, { tokens, directory }),
    mounts: [{ prefix: IDENTITY_PREFIX, plugin: keystone({ publicUrl, region: config.identity.region, directory, tokens }) }],
  };
}

function describe(config: Config, roles: Roles, a: Announcement, runtime: Runtime, clouds: string | null): string {
  const store = sqlitePath(config) ? `SQLite ${sqlitePath(config)}` : redactUrl(config.database.url);
  const what = [roles.api && 'api', roles.worker && 'worker', roles.health && 'health', roles.housekeeping && 'housekeeping'].filter(Boolean).join(' + ');
  const lines = [
    a.url ? `Ostia (${what}) is listening on ${a.url}, database ${store}.`
    : runtime.worker ? `Ostia worker ${runtime.worker.id} is running jobs from ${store}.`
    : `Ostia ${what} is running over ${store}.`,
  ];
  if (a.url && config.identity.mode !== 'noauth' && config.identity.mode !== 'testing') lines.push(`The dashboard is at ${a.url}${DASHBOARD_PREFIX} (log in as a user of Keystone${clouds ? ', e.g. one of the clouds.yaml below' : ''}).`);
  if (a.health_listen) lines.push(`Amphora heartbeats are received on ${a.health_listen} (UDP).`);
  if (a.test_mode) lines.push(`Test mode: ${a.test_mode}`);
  if (ovnProviderEnabled(config) && roles.worker) lines.push(`OVN load balancers are written to ${config.ovn.nbConnection}.`);
  if (ovnProviderEnabled(config) && roles.health) lines.push(`OVN member health is read from ${config.ovn.sbConnection}.`);
  if (clouds) {
    const names = Object.keys((parseYaml(clouds) as { clouds: object }).clouds);
    lines.push(
      '',
      'Use it with the openstack CLI:',
      `  export OS_CLIENT_CONFIG_FILE=${a.clouds_yaml}`,
      '  openstack --os-cloud ostia loadbalancer list',
      '',
      `Clouds in that file: ${names.join(', ')}.`,
    );
  } else if (a.url && config.identity.mode === 'testing') {
    lines.push('', `No tokens: callers name their project and roles in headers, e.g. curl -H 'X-Project-Id: demo' -H 'X-Roles: load-balancer_member' ${a.url}/v2/lbaas/loadbalancers`);
  } else if (a.url) {
    lines.push('', `Clients authenticate with the Keystone at ${config.identity.external.authUrl}; point their catalog's load-balancer endpoint at ${a.url}.`);
  }
  lines.push('Stop with Ctrl-C (SIGINT) or SIGTERM.', '');
  return lines.join('\n');
}


function listenError(e: unknown, config: Config): unknown {
  const code = (e as NodeJS.ErrnoException).code;
  const where = `${config.api.host}:${config.api.port}`;
  if (code === 'EADDRINUSE') return new CliError(`cannot listen on ${where}: the address is already in use`, 'Stop the other process, or pass --port (0 picks a free port).');
  if (code === 'EACCES') return new CliError(`cannot listen on ${where}: permission denied`, 'Use a port above 1023, or pass --port.');
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return new CliError(`cannot listen on ${where}: no such local address`, 'Pass a --host this machine has, e.g. 127.0.0.1 or 0.0.0.0.');
  return e;
}

/**
 * Options → defaults → validated config. Every process role reads the same shape: a YAML
 * or JSON file (`--config` or OSTIA_CONFIG) merged over the embedded defaults, then checked
 * against one TypeBox schema so a typo fails at start with the path that is wrong.
 */
import { readFileSync } from 'node:fs';
import { resolve, join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { createHash, randomBytes } from 'node:crypto';
import { Type, type Static, type TProperties, type TSchema } from '@sinclair/typebox';
import { Value, type ValueError } from '@sinclair/typebox/value';
import { parse as parseYaml } from 'yaml';
import { QuotaResources, StatusWaiting } from './domain/defaults.js';
import { isIpAddress, parseCidr, parseHostPort } from './domain/net.js';
import { PolicyModes } from './domain/context.js';
import { HEARTBEAT_MIN_INTERVAL_MS, VRRP_ADVERT_INTERVAL_MS } from './domain/amphora-config.js';
import { namespacesUnavailable } from './linux-net/ip.js';
import { SECURITY_GROUP_DIRECTIONS, SECURITY_GROUP_ETHERTYPES, SECURITY_GROUP_PROTOCOLS, securityGroupRuleProblem } from './domain/security-group-rule.js';

/** Config objects refuse unknown keys, so a misspelt key fails at start instead of being ignored. */
const Closed = <T extends TProperties>(props: T) => Type.Object(props, { additionalProperties: false });

const Subnet = Closed({
  id: Type.String(),
  name: Type.String(),
  cidr: Type.String(),
  gateway_ip: Type.Union([Type.String(), Type.Null()]),
  /** Addresses handed out are taken from here; the rest of the CIDR is reserved. */
  allocation_pools: Type.Array(Closed({ start: Type.String(), end: Type.String() })),
});

const Network = Closed({
  id: Type.String(),
  name: Type.String(),
  /** Projects that may use it; empty = shared with every project. */
  projects: Type.Array(Type.String()),
  subnets: Type.Array(Subnet),
});

/** A rule of a configured security group, in Neutron's fields (src/domain/security-group-rule.ts). */
const SecurityGroupRuleSchema = Closed({
  direction: Type.Union(SECURITY_GROUP_DIRECTIONS.map((d) => Type.Literal(d))),
  ethertype: Type.Union(SECURITY_GROUP_ETHERTYPES.map((e) => Type.Literal(e))),
  protocol: Type.Union([...SECURITY_GROUP_PROTOCOLS.map((p) => Type.Literal(p)), Type.Null()]),
  port_range_min: Type.Union([Type.Integer({ minimum: 1, maximum: 65535 }), Type.Null()]),
  port_range_max: Type.Union([Type.Integer({ minimum: 1, maximum: 65535 }), Type.Null()]),
  remote_ip_prefix: Type.Union([Type.String(), Type.Null()]),
});

const SecurityGroup = Closed({
  id: Type.String(),
  name: Type.String(),
  /** What a VIP port with the group (a load balancer's vip_sg_ids) admits: its ingress rules; none: nothing. */
  rules: Type.Optional(Type.Array(SecurityGroupRuleSchema)),
});

const Project = Closed({ id: Type.String(), name: Type.String(), description: Type.String() });
const User = Closed({
  id: Type.String(),
  name: Type.String(),
  password: Type.String(),
  /** project name → role names */
  roles: Type.Record(Type.String(), Type.Array(Type.String())),
});

export /** How Ostia logs in to a Keystone as a service (to validate tokens, or to read secrets from Barbican). */
const ServiceCredentials = {
  authUrl: Type.String(),
  username: Type.String(),
  password: Type.String(),
  projectName: Type.String(),
  userDomainName: Type.String(),
  projectDomainName: Type.String(),
};

const ComputeDrivers = ['local', 'netns', 'noop'] as const;

const ConfigSchema = Closed({
  dataDir: Type.String(),
  database: Closed({ url: Type.String() }),
  api: Closed({
    host: Type.String(),
    port: Type.Integer({ minimum: 0, maximum: 65535 }),
    /** The URL clients reach us at; derived from host/port when empty. */
    publicUrl: Type.String(),
    paginationMaxLimit: Type.Integer({ minimum: 1 }),
    defaultProvider: Type.String(),
    enabledProviders: Type.Array(Type.String()),
    healthcheckEnabled: Type.Boolean(),
    allowTerminatedHttps: Type.Boolean(),
    allowPrometheusListeners: Type.Boolean(),
    allowPingHealthMonitors: Type.Boolean(),
    /** Which of Octavia's RBAC policies applies (src/identity/policy.ts); ignored under noauth, where every caller is admin. */
    policy: Type.Union(PolicyModes.map((m) => Type.Literal(m))),
    /** How often an event stream checks its caller's token again (a revoked or expired one ends it). */
    eventStreamRecheckSeconds: Type.Integer({ minimum: 1 }),
  }),
  identity: Closed({
    /** testing: Octavia's auth_strategy of that name, the caller's project and roles taken from headers; for tests only. */
    mode: Type.Union([Type.Literal('embedded'), Type.Literal('external'), Type.Literal('noauth'), Type.Literal('testing')]),
    region: Type.String(),
    /** Signs embedded tokens; every api process of a deployment must share it. */
    tokenSecret: Type.String(),
    tokenTtlSeconds: Type.Integer({ minimum: 60 }),
    projects: Type.Array(Project),
    users: Type.Array(User),
    external: Closed({
      ...ServiceCredentials,
      cacheSeconds: Type.Integer({ minimum: 0 }),
    }),
  }),
  network: Closed({
    /**
     * catalog: the networks below are the only ones, amphorae on loopback; bridge: the same networks, and
     * the amphorae's management network a Linux bridge in a namespace of Ostia's (root only, with
     * compute.driver netns); noop: any UUID is a network, subnet, port, QoS policy or security group as
     * well (Octavia's network_noop_driver, a test mode).
     */
    driver: Type.Union([Type.Literal('catalog'), Type.Literal('bridge'), Type.Literal('noop')]),
    networks: Type.Array(Network),
    qosPolicies: Type.Array(Closed({ id: Type.String(), name: Type.String() })),
    securityGroups: Type.Array(SecurityGroup),
    reservedMemberAddresses: Type.Array(Type.String()),
    /**
     * Labs only: members may be addresses of the control plane (the management network, the API's
     * and health manager's addresses, loopback outside the configured subnets); see src/domain/rules/member-address.ts.
     */
    allowControlPlaneMembers: Type.Boolean(),
  }),
  quotas: Closed(Object.fromEntries(QuotaResources.map((r) => [r, Type.Integer({ minimum: -1 })])) as Record<(typeof QuotaResources)[number], ReturnType<typeof Type.Integer>>),
  amphora: Closed({
    /**
     * Management addresses of amphorae; agents listen there. Inside 127.0.0.0/8 for network.driver catalog;
     * a real IPv4 network for bridge, whose first address is the controller's (default: a /24 of 198.18.0.0/15).
     */
    managementNetwork: Closed({ cidr: Type.String(), start: Type.String(), end: Type.String() }),
    agentPort: Type.Integer({ minimum: 1, maximum: 65535 }),
    /** Where `ostia health` receives heartbeats (host:port); amphorae send there. */
    healthListen: Type.String(),
    /**
     * `host:port` where `ostia health` run apart from the API serves its own Prometheus metrics
     * (heartbeats received, refused by reason, dropped; failovers), unauthenticated: a loopback
     * or management address. Empty: not served. Under `ostia up` the API's `/metrics` has them.
     */
    healthMetricsListen: Type.String(),
    heartbeatIntervalMs: Type.Integer({ minimum: HEARTBEAT_MIN_INTERVAL_MS }),
    /**
     * Each amphora's heartbeat key is derived from this and its id, so no key is stored. At least
     * 32 characters; empty means DATA_DIR/heartbeat-secret, generated on first start (`ostia up`).
     * `ostia worker` and `ostia health` run apart must both be given the same one.
     */
    heartbeatSecret: Type.String(),
    /** An amphora silent this long is stale and is failed over. */
    heartbeatTimeoutMs: Type.Integer({ minimum: 200 }),
    /** How long a new amphora's agent may take to answer. */
    bootTimeoutMs: Type.Integer({ minimum: 1000 }),
    /**
     * Spare amphorae kept booted, with no load balancer, for creates and failovers to adopt instead of
     * booting their own (Octavia's spare_amphora_pool_size); housekeeping refills the pool. Each costs an
     * idle amphora's memory. 0: none (as Octavia's default).
     */
    sparePoolSize: Type.Integer({ minimum: 0 }),
    certValidityDays: Type.Integer({ minimum: 1 }),
    certRotateBeforeDays: Type.Integer({ minimum: 0 }),
    /** Storm protection: at most this many failovers at once… */
    maxConcurrentFailovers: Type.Integer({ minimum: 1 }),
    /** …and none at all while more than this fraction of amphorae is stale (the problem is then elsewhere). */
    failoverCircuitBreakerFraction: Type.Number({ minimum: 0, maximum: 1 }),
    haproxyBinary: Type.String(),
    /** Per HAProxy process; this machine's FD hard limit (20000) caps it near 9,900. */
    maxconn: Type.Integer({ minimum: 1, maximum: 9900 }),
    /**
     * ACTIVE_STANDBY: how often the MASTER's keepalived advertises (VRRPv3, a multiple of 10 ms); the
     * BACKUP takes the VIP after three silent intervals. Octavia's default is 1 s.
     */
    vrrpAdvertIntervalMs: Type.Integer({ ...VRRP_ADVERT_INTERVAL_MS, multipleOf: 10 }),
  }),
  compute: Closed({
    /**
     * What the amphora provider boots amphorae with: `local` runs each as processes on this machine;
     * `netns` as processes in a network and mount namespace of their own, under a uid of their own (root
     * only, with network.driver bridge); `noop` is Octavia's compute_noop_driver + amphora_noop_driver, a test mode (see COMPUTE_NOOP_NOTICE).
     */
    driver: Type.Union(ComputeDrivers.map((d) => Type.Literal(d))),
    /**
     * What an amphora of each compute flavor (a flavor profile's `compute_flavor`) reserves on its host, as
     * `ostia plan` counts it: on a cloud the Nova flavor's vCPUs, RAM and disk. `default` is for amphorae whose
     * flavor names none (Octavia's `amp_flavor_id`); its default is Octavia's amphora flavor. Amphorae of
     * `local` and `netns` are processes: the plan counts their memory and disk as measured, when any run.
     */
    flavors: Type.Record(Type.String(), Closed({ vcpus: Type.Integer({ minimum: 1 }), ramMiB: Type.Integer({ minimum: 1 }), diskGiB: Type.Integer({ minimum: 0 }) })),
  }),
  ovn: Closed({
    /**
     * The Northbound database, as ovn-nbctl's --db: `tcp:IP:PORT`, `ssl:IP:PORT` or `unix:PATH`,
     * several comma-separated to try in turn. Required when the ovn provider is enabled.
     */
    nbConnection: Type.String(),
    /** The Southbound database, where member health comes from (Service_Monitor). */
    sbConnection: Type.String(),
    /** Client key, certificate and CA (PEM files) for ssl: remotes. */
    sslPrivateKey: Type.String(),
    sslCertificate: Type.String(),
    sslCaCertificate: Type.String(),
    /** Our echo after this much silence from the database; 0 turns probing off. */
    probeIntervalMs: Type.Integer({ minimum: 0 }),
    /**
     * Which OVN logical switch each Ostia network is (what Neutron's `neutron-<network id>`
     * switches are in a Neutron cloud). Routers are found as Neutron leaves them: router ports
     * on these switches.
     */
    networks: Type.Array(Closed({ networkId: Type.String(), logicalSwitch: Type.String() })),
    /**
     * Where amphorae plug into OVN (compute.driver netns, network.driver bridge): the Open vSwitch
     * database of this machine's integration bridge, as ovs-vsctl's --db, and the network namespace
     * the bridge is in ('' for this machine's own). Set, an amphora's ports on the networks above are
     * ports of their logical switches, as Nova's are in a Neutron cloud, so a load balancer can move
     * between the amphora and ovn providers with its VIP; empty, those networks are Linux bridges too.
     */
    integrationBridge: Closed({ ovsdb: Type.String(), bridge: Type.String({ minLength: 1 }), namespace: Type.String() }),
  }),
  worker: Closed({
    /** How long a claimed job is ours without a heartbeat. */
    leaseSeconds: Type.Number({ exclusiveMinimum: 0 }),
    /**
     * On PostgreSQL, how often a worker looks for jobs to adopt: a dead worker's, whose database
     * session ended (resumed without waiting for its lease), or one whose lease expired.
     */
    adoptCheckSeconds: Type.Number({ exclusiveMinimum: 0 }),
    concurrency: Type.Integer({ minimum: 1 }),
  }),
  log: Closed({ level: Type.String() }),
  /** Managed certificates (listeners' acme_domains), ordered by the housekeeper: providers/amphora/acme/. */
  acme: Closed({
    /** The ACME directory (RFC 8555), e.g. Let's Encrypt's https://acme-v02.api.letsencrypt.org/directory; empty: acme_domains is refused. */
    directoryUrl: Type.String(),
    /** A PEM file of the CAs the directory's HTTPS certificate chains to, for a private ACME server; empty: Node's own list. */
    caFile: Type.String(),
    /** The account's contact (an e-mail address), or empty. */
    email: Type.String(),
    /** A certificate is renewed once this fraction of its lifetime has passed (Let's Encrypt advises 2/3). */
    renewAtFraction: Type.Number({ exclusiveMinimum: 0, exclusiveMaximum: 1 }),
    /** After a failed attempt the next waits this, doubled for each failure in a row, up to retryMaxSeconds. */
    retryMinSeconds: Type.Integer({ minimum: 1 }),
    retryMaxSeconds: Type.Integer({ minimum: 1 }),
    /** How often the housekeeper looks for certificates to order. */
    checkIntervalSeconds: Type.Integer({ minimum: 1 }),
    /** How long one order may take (validation, finalization, download) before it counts as failed. */
    orderTimeoutSeconds: Type.Integer({ minimum: 10 }),
  }),
  keyManager: Closed({
    /** embedded: the Barbican v1 subset at /key-manager; external: a real Barbican. */
    mode: Type.Union([Type.Literal('embedded'), Type.Literal('external')]),
    /** Base64 of 32 bytes; empty means DATA_DIR/key-manager-key, generated on first start. */
    encryptionKey: Type.String(),
    /** Keys rotated out: still decrypt what they encrypted, never encrypt. */
    previousEncryptionKeys: Type.Array(Type.String()),
    external: Closed({
      /** The Barbican endpoint, e.g. https://barbican.example:9311 (without /v1). */
      url: Type.String(),
      /** Service credentials; an empty authUrl or username means identity.external's. */
      ...ServiceCredentials,
    }),
  }),
});

export type Config = Static<typeof ConfigSchema>;

/** What `compute.driver: noop` means, said wherever it shows (ostia config, ostia up, the README). */
export const COMPUTE_NOOP_NOTICE =
  'compute.driver noop is a test mode with no data plane: the amphora provider runs its flows and keeps amphora rows, certificates and management addresses, but boots nothing, so no VIP answers and operating statuses stay OFFLINE.';
export const NETWORK_NOOP_NOTICE =
  'network.driver noop is a test mode: any UUID is a subnet, network or port, and VIPs get synthetic addresses (198.51.100.0/24, 2001:db8::/64) that nothing serves.';
export const IDENTITY_TESTING_NOTICE =
  "identity.mode testing is a test mode: callers name their own project and roles in X-Project-Id and X-Roles, so anyone can claim any role; never use it outside tests.";

/** The compute.flavors entry of amphorae whose flavor names no compute_flavor. */
export const DEFAULT_COMPUTE_FLAVOR = 'default';

/** The management plane's certificate authorities (src/pki/ca.ts), under the data directory. */
export const pkiDir = (config: Pick<Config, 'dataDir'>): string => join(config.dataDir, 'pki');

/** Where the local and netns compute drivers keep each amphora's directory. */
export const amphoraRootDir = (config: Pick<Config, 'dataDir'>): string => join(config.dataDir, 'amphorae');

export const computeIsNoop = (config: Pick<Config, 'compute'>): boolean => config.compute.driver === 'noop';

export interface TestMode {
  /** The top-level config section the setting lives in. */
  section: 'compute' | 'network' | 'identity';
  notice: string;
}

/** Octavia's test modes this configuration turns on, each with what it means: `ostia config` and `ostia up` say them. */
export function testModes(config: Pick<Config, 'compute' | 'network' | 'identity'>): TestMode[] {
  const modes: TestMode[] = [];
  if (computeIsNoop(config)) modes.push({ section: 'compute', notice: COMPUTE_NOOP_NOTICE });
  if (config.network.driver === 'noop') modes.push({ section: 'network', notice: NETWORK_NOOP_NOTICE });
  if (config.identity.mode === 'testing') modes.push({ section: 'identity', notice: IDENTITY_TESTING_NOTICE });
  return modes;
}

// Stable ids so a restarted `ostia up` keeps its projects, users and networks.
export const ADMIN_PROJECT_ID = '0a9b1a8e6f1e4c1c9b3f1c2d3e4f5a60';
export const DEMO_PROJECT_ID = '5c5d3e6f7a8b4c9d8e0f1a2b3c4d5e61';
export const ALT_PROJECT_ID = '7e8f9a0b1c2d4e3f9a8b7c6d5e4f3a62';
export const VIP_NETWORK_ID = '1f0e2d3c-4b5a-4968-8776-655443322110';
export const VIP_SUBNET_ID = '2a1b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d';
export const MEMBER_NETWORK_ID = '3b2c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e';
export const MEMBER_SUBNET_ID = '4c3d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f';

export function defaultConfig(dataDir: string): Config {
  return {
    dataDir,
    database: { url: `sqlite:${join(dataDir, 'ostia.db')}` },
    api: {
      host: '127.0.0.1',
      port: 9876,
      publicUrl: '',
      paginationMaxLimit: 1000,
      // A real data plane unless told otherwise, as with Octavia; noop stays available for API-only use.
      defaultProvider: 'amphora',
      enabledProviders: ['amphora', 'noop'],
      healthcheckEnabled: true,
      allowTerminatedHttps: true,
      allowPrometheusListeners: true,
      allowPingHealthMonitors: true,
      policy: 'advanced',
      eventStreamRecheckSeconds: StatusWaiting.recheckSeconds,
    },
    identity: {
      mode: 'embedded',
      region: 'RegionOne',
      tokenSecret: '',
      tokenTtlSeconds: 86400,
      projects: [
        { id: ADMIN_PROJECT_ID, name: 'admin', description: 'Cloud administrators' },
        { id: DEMO_PROJECT_ID, name: 'demo', description: 'A tenant project' },
        { id: ALT_PROJECT_ID, name: 'alt', description: 'A second tenant project' },
      ],
      users: [
        { id: 'a0000000000000000000000000000001', name: 'admin', password: 'secret', roles: { admin: ['admin', 'member', 'reader'] } },
        { id: 'a0000000000000000000000000000002', name: 'demo', password: 'secret', roles: { demo: ['member', 'reader', 'load-balancer_member'] } },
        { id: 'a0000000000000000000000000000003', name: 'demo-reader', password: 'secret', roles: { demo: ['reader', 'load-balancer_observer'] } },
        { id: 'a0000000000000000000000000000004', name: 'alt', password: 'secret', roles: { alt: ['member', 'reader', 'load-balancer_member'] } },
      ],
      external: { authUrl: '', username: '', password: '', projectName: 'service', userDomainName: 'Default', projectDomainName: 'Default', cacheSeconds: 300 },
    },
    network: {
      driver: 'catalog',
      networks: [
        {
          id: VIP_NETWORK_ID,
          name: 'public',
          projects: [],
          subnets: [{ id: VIP_SUBNET_ID, name: 'public-subnet', cidr: '127.16.0.0/16', gateway_ip: null, allocation_pools: [{ start: '127.16.0.10', end: '127.16.255.250' }] }],
        },
        {
          id: MEMBER_NETWORK_ID,
          name: 'private',
          projects: [],
          subnets: [{ id: MEMBER_SUBNET_ID, name: 'private-subnet', cidr: '127.32.0.0/16', gateway_ip: null, allocation_pools: [{ start: '127.32.0.10', end: '127.32.255.250' }] }],
        },
      ],
      qosPolicies: [{ id: '5d4e6f7a-8b9c-4d0e-9f1a-2b3c4d5e6f70', name: 'default-qos' }],
      // Neutron's default group, but its ingress from the group's own ports, which no client of a VIP is.
      securityGroups: [
        {
          id: '6e5f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a81',
          name: 'default',
          rules: SECURITY_GROUP_ETHERTYPES.map((ethertype) => ({ direction: 'egress', ethertype, protocol: null, port_range_min: null, port_range_max: null, remote_ip_prefix: null })),
        },
      ],
      reservedMemberAddresses: ['169.254.169.254'],
      allowControlPlaneMembers: false,
    },
    quotas: { load_balancer: -1, listener: -1, pool: -1, health_monitor: -1, member: -1, l7policy: -1, l7rule: -1 },
    amphora: {
      managementNetwork: { cidr: '127.80.0.0/16', start: '127.80.0.10', end: '127.80.255.250' },
      agentPort: 9443,
      healthListen: '127.0.0.1:5555',
      healthMetricsListen: '',
      heartbeatIntervalMs: 1000,
      heartbeatSecret: '',
      heartbeatTimeoutMs: 3000,
      bootTimeoutMs: 30000,
      sparePoolSize: 0,
      certValidityDays: 30,
      certRotateBeforeDays: 7,
      maxConcurrentFailovers: 2,
      failoverCircuitBreakerFraction: 0.5,
      haproxyBinary: 'haproxy',
      maxconn: 8000,
      vrrpAdvertIntervalMs: 100,
    },
    compute: { driver: 'local', flavors: { [DEFAULT_COMPUTE_FLAVOR]: { vcpus: 1, ramMiB: 1024, diskGiB: 2 } } },
    ovn: { nbConnection: '', sbConnection: '', sslPrivateKey: '', sslCertificate: '', sslCaCertificate: '', probeIntervalMs: 60_000, networks: [], integrationBridge: { ovsdb: '', bridge: 'br-int', namespace: '' } },
    worker: { leaseSeconds: 30, adoptCheckSeconds: 1, concurrency: 8 },
    log: { level: 'info' },
    acme: { directoryUrl: '', caFile: '', email: '', renewAtFraction: 2 / 3, retryMinSeconds: 60, retryMaxSeconds: 3600, checkIntervalSeconds: 60, orderTimeoutSeconds: 300 },
    keyManager: {
      mode: 'embedded',
      encryptionKey: '',
      previousEncryptionKeys: [],
      external: { url: '', authUrl: '', username: '', password: '', projectName: 'service', userDomainName: 'Default', projectDomainName: 'Default' },
    },
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Objects merge key by key; arrays and scalars from the file replace the default. */
export function deepMerge<T>(base: T, over: unknown): T {
  if (!isObject(base) || !isObject(over)) return (over === undefined ? base : over) as T;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = k in base ? deepMerge((base as Record<string, unknown>)[k], v) : v;
  return out as T;
}

export class ConfigError extends Error {}

export interface ConfigOptions {
  dataDir?: string;
  file?: string;
  /** Applied last: flags of the command line. */
  overrides?: unknown;
}

export function loadConfig(opts: ConfigOptions = {}): Config {
  const dataDir = resolve(opts.dataDir ?? process.env.OSTIA_DATA_DIR ?? '.ostia');
  let merged: unknown = defaultConfig(dataDir);
  const file = opts.file ?? process.env.OSTIA_CONFIG;
  let fromFile: unknown = {};
  if (file) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw new ConfigError(`cannot read config file ${file}: ${(e as Error).message}`);
    }
    fromFile = parseYaml(text);
    merged = deepMerge(merged, fromFile);
  }
  if (process.env.OSTIA_DATABASE_URL) merged = deepMerge(merged, { database: { url: process.env.OSTIA_DATABASE_URL } });
  merged = deepMerge(merged, opts.overrides);
  return validateConfig(driversChosen(merged as Config, [fromFile, opts.overrides]));
}

/**
 * Where neither compute.driver nor network.driver is set, and amphorae run: netns and bridge when this
 * machine can make namespaces (root), each amphora then a boundary of its own on real networks; local
 * and catalog otherwise, amphorae as processes of this user on loopback. `driverChoice` says which and why.
 */
function driversChosen(config: Config, sources: readonly unknown[]): Config {
  const set = (section: 'compute' | 'network') => sources.some((src) => (src as Record<string, { driver?: unknown } | undefined> | undefined)?.[section]?.driver !== undefined);
  if (set('compute') || set('network') || !amphoraProviderIn(config) || namespacesUnavailable()) return config;
  return { ...config, compute: { ...config.compute, driver: 'netns' }, network: { ...config.network, driver: 'bridge' } };
}

const amphoraProviderIn = (config: Pick<Config, 'api'>) => config.api.enabledProviders.includes('amphora');

/** One sentence for `ostia up`: how amphorae are built, and, for the defaults, why. */
export function driverChoice(config: Pick<Config, 'api' | 'compute' | 'network'>): string | null {
  if (!amphoraProviderIn(config)) return null;
  const { driver } = config.compute;
  if (driver === 'netns') return 'amphorae: compute.driver netns, network.driver bridge: each amphora in network and mount namespaces of its own under its own uid, on bridge networks (the default as root)';
  if (driver === 'local') {
    const why = namespacesUnavailable();
    return `amphorae: compute.driver local, network.driver ${config.network.driver}: processes of this user on loopback addresses, without isolation${why ? ` (the default here: ${why}; run as root for isolated amphorae)` : ' (set in the configuration)'}`;
  }
  return null;
}

export function validateConfig(candidate: unknown): Config {
  const errors = [...Value.Errors(ConfigSchema, candidate)];
  if (errors.length) {
    const lines = errors.slice(0, 10).map((e) => `  ${e.path || '/'}: ${describeError(e)}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  const config = candidate as Config;
  if (!config.api.enabledProviders.includes(config.api.defaultProvider))
    throw new ConfigError(`api.defaultProvider '${config.api.defaultProvider}' is not in api.enabledProviders`);
  if (config.identity.mode === 'external' && !config.identity.external.authUrl)
    throw new ConfigError('identity.mode is external but identity.external.authUrl is empty');
  checkHealthListen(config.amphora.healthListen);
  if (config.amphora.healthMetricsListen) checkListen(config.amphora.healthMetricsListen, 'amphora.healthMetricsListen');
  checkHeartbeatSecret(config.amphora.heartbeatSecret);
  checkKeyManager(config);
  checkOvn(config);
  checkNetworkDriver(config);
  checkSecurityGroups(config);
  const bridged = withBridgeDefaults(config);
  checkNamespaceDrivers(bridged);
  checkMemberAddressSettings(bridged);
  return bridged;
}

/** 8 hex digits naming a data directory: its fabric namespace, its management network under network.driver bridge. */
export function dataDirTag(dataDir: string): string {
  return createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 8);
}

/** The /24 `n` (0–2) of the three of 198.18.0.0/15 a data directory's bridge networks take. */
function bridgeBlock(dataDir: string, n: number): string {
  const block = (parseInt(dataDirTag(dataDir).slice(0, 4), 16) % 170) * 3 + n;
  return `198.${18 + (block >> 8)}.${block & 255}`;
}

/**
 * The management network network.driver bridge uses when amphora.managementNetwork is left at its loopback
 * default: one /24 of 198.18.0.0/15 chosen by the data directory. That range is reserved for benchmarking
 * (RFC 2544): no site routes it, unlike the private ranges that VPNs, Docker and cloud VPCs (172.31.0.0/16
 * is AWS's default) already use on the machines Ostia runs on. Its .1 is the controller, which also receives
 * heartbeats there.
 */
export function bridgeManagementNetwork(dataDir: string): { managementNetwork: Config['amphora']['managementNetwork']; controllerAddress: string } {
  const base = bridgeBlock(dataDir, 0);
  return { managementNetwork: { cidr: `${base}.0/24`, start: `${base}.10`, end: `${base}.250` }, controllerAddress: `${base}.1` };
}

/**
 * The default networks (`public`, `private`) under network.driver bridge: the next two /24s of the same
 * block, each with its gateway, .1, on this machine's leg into the bridge.
 */
export function bridgeTenantNetworks(dataDir: string): Config['network']['networks'] {
  return defaultConfig(dataDir).network.networks.map((network, i) => {
    const base = bridgeBlock(dataDir, i + 1);
    return { ...network, subnets: network.subnets.map((sub) => ({ ...sub, cidr: `${base}.0/24`, gateway_ip: `${base}.1`, allocation_pools: [{ start: `${base}.10`, end: `${base}.250` }] })) };
  });
}

/** Under network.driver bridge, the networks, the management network and the heartbeat address still at their loopback defaults move onto bridges. */
function withBridgeDefaults(config: Config): Config {
  if (config.network.driver !== 'bridge') return config;
  const defaults = defaultConfig(config.dataDir);
  const bridge = bridgeManagementNetwork(config.dataDir);
  const amphora = { ...config.amphora };
  if (isDeepStrictEqual(amphora.managementNetwork, defaults.amphora.managementNetwork)) amphora.managementNetwork = bridge.managementNetwork;
  if (amphora.healthListen === defaults.amphora.healthListen) amphora.healthListen = `${bridge.controllerAddress}:${parseHostPort(defaults.amphora.healthListen, 'amphora.healthListen').port}`;
  const network = isDeepStrictEqual(config.network.networks, defaults.network.networks) ? { ...config.network, networks: bridgeTenantNetworks(config.dataDir) } : config.network;
  return { ...config, amphora, network };
}

/** compute.driver netns and network.driver bridge go together (an amphora in a namespace is reached only over the bridge) and need root. */
export function checkNamespaceDrivers(config: Pick<Config, 'compute' | 'network'>, uid?: number): void {
  const netns = config.compute.driver === 'netns';
  const bridge = config.network.driver === 'bridge';
  if (netns && !bridge)
    throw new ConfigError(`compute.driver netns needs network.driver bridge (its amphorae are reached over the management bridge; now '${config.network.driver}')`);
  if (bridge && !netns)
    throw new ConfigError(`network.driver bridge needs compute.driver netns (amphorae of '${config.compute.driver}' cannot plug into its bridges)`);
  if (!netns) return;
  const why = namespacesUnavailable(uid);
  if (why) throw new ConfigError(`compute.driver netns and network.driver bridge cannot run here: ${why}. Run Ostia as root, or use compute.driver local and network.driver catalog`);
}

/** A rule Neutron would refuse fails at start, not when a load balancer first uses its group. */
function checkSecurityGroups(config: Config): void {
  for (const [g, group] of config.network.securityGroups.entries())
    for (const [r, rule] of (group.rules ?? []).entries()) {
      const problem = securityGroupRuleProblem(rule);
      if (problem) throw new ConfigError(`network.securityGroups[${g}].rules[${r}] (group ${group.name}): ${problem}`);
    }
}

/** The member address rule (src/domain/rules/member-address.ts) judges by these; a typo would silently let addresses through. */
function checkMemberAddressSettings(config: Config): void {
  for (const [i, a] of config.network.reservedMemberAddresses.entries())
    if (!isIpAddress(a)) throw new ConfigError(`network.reservedMemberAddresses[${i}] '${a}' is not an IP address`);
  if (!parseCidr(config.amphora.managementNetwork.cidr))
    throw new ConfigError(`amphora.managementNetwork.cidr '${config.amphora.managementNetwork.cidr}' is not a CIDR: members on the management network could not be refused`);
}

/**
 * Enabled providers whose data plane would have to serve the VIPs, each with what to set instead.
 * network.driver noop hands out addresses (198.51.100.0/24, random UUID subnets) that no
 * amphora or OVN switch can answer on, so it goes only with providers that bind nothing.
 */
export function providersNeedingRealNetwork(config: Config): Array<{ provider: string; remedy: string }> {
  const needing: Array<{ provider: string; remedy: string }> = [];
  const enabled = config.api.enabledProviders;
  if (enabled.includes('amphora') && config.compute.driver !== 'noop')
    needing.push({ provider: 'amphora', remedy: `set compute.driver: noop (amphora flows without booting anything; now '${config.compute.driver}')` });
  if (enabled.includes('ovn')) needing.push({ provider: 'ovn', remedy: 'remove ovn from api.enabledProviders (OVN writes the VIPs into real logical switches)' });
  return needing;
}

function checkNetworkDriver(config: Config): void {
  if (config.network.driver !== 'noop') return;
  const needing = providersNeedingRealNetwork(config);
  if (needing.length)
    throw new ConfigError(
      `network.driver is noop (any UUID is a subnet, VIPs are synthetic addresses nothing serves), but ${needing.map((n) => `the ${n.provider} provider would have to serve them: ${n.remedy}`).join('; ')}; ` +
        "or remove those providers from api.enabledProviders (e.g. enabledProviders: [noop], defaultProvider: noop), or set network.driver: catalog",
    );
}

/** A choice among fixed values is said with its values, where the schema's own message would only say 'Expected union value'. */
function describeError(e: ValueError): string {
  const options = (e.schema.anyOf as TSchema[] | undefined)?.map((s) => s.const);
  if (options?.length && options.every((o) => typeof o === 'string')) return `${JSON.stringify(e.value)} is not one of ${options.join(', ')}`;
  return e.message;
}

/** The ovn provider cannot start without its databases, and maps only networks Ostia knows. */
function checkOvn(config: Config): void {
  const { ovn } = config;
  if (config.api.enabledProviders.includes('ovn')) {
    if (!ovn.nbConnection || !ovn.sbConnection)
      throw new ConfigError('the ovn provider is enabled but ovn.nbConnection or ovn.sbConnection is empty: set them to the OVN databases (e.g. unix:/var/run/ovn/ovnnb_db.sock)');
    if ([ovn.nbConnection, ovn.sbConnection].some((c) => c.split(',').some((r) => r.trim().startsWith('ssl:'))) && !(ovn.sslPrivateKey && ovn.sslCertificate && ovn.sslCaCertificate))
      throw new ConfigError('an ovn ssl: connection needs ovn.sslPrivateKey, ovn.sslCertificate and ovn.sslCaCertificate');
  }
  const known = new Set(config.network.networks.map((n) => n.id));
  const seen = new Set<string>();
  for (const [i, m] of ovn.networks.entries()) {
    if (!known.has(m.networkId)) throw new ConfigError(`ovn.networks[${i}]: network ${m.networkId} is not in network.networks`);
    if (seen.has(m.networkId)) throw new ConfigError(`ovn.networks[${i}]: network ${m.networkId} is mapped twice`);
    seen.add(m.networkId);
  }
  if (ovn.integrationBridge.ovsdb && !(config.compute.driver === 'netns' && config.network.driver === 'bridge'))
    throw new ConfigError('ovn.integrationBridge.ovsdb plugs netns amphorae into OVN: it needs compute.driver netns and network.driver bridge, or leave it empty');
  if (ovn.integrationBridge.ovsdb && !ovn.nbConnection) throw new ConfigError('ovn.integrationBridge.ovsdb is set but ovn.nbConnection is empty: amphorae\'s switch ports are written there');
}

/** A key that is not 32 bytes would only fail at the first secret stored; fail at start instead. */
function checkKeyManager(config: Config): void {
  const km = config.keyManager;
  const keys: Array<[path: string, key: string]> = km.previousEncryptionKeys.map((k, i) => [`keyManager.previousEncryptionKeys[${i}]`, k]);
  if (km.encryptionKey) keys.push(['keyManager.encryptionKey', km.encryptionKey]);
  for (const [path, key] of keys)
    if (!/^[A-Za-z0-9+/]{43}=$/.test(key)) throw new ConfigError(`${path} must be the base64 of 32 random bytes (e.g. from 'openssl rand -base64 32')`);
  if (km.mode !== 'external') return;
  if (!km.external.url) throw new ConfigError('keyManager.mode is external but keyManager.external.url is empty');
  if (!(km.external.authUrl || config.identity.external.authUrl) || !(km.external.username || config.identity.external.username))
    throw new ConfigError('keyManager.mode is external but no service credentials are set: fill keyManager.external.authUrl/username/password (or identity.external)');
}

/**
 * A secret the config does not set is generated once per data directory: what `read` finds there,
 * else 32 random bytes, which `write` keeps for the next start.
 */
function secretOnce(read: () => string | null, write: (s: string) => void, encoding: 'hex' | 'base64'): string {
  const secret = read() ?? randomBytes(32).toString(encoding);
  write(secret);
  return secret;
}

export function ensureKeyManagerKey(config: Config, read: () => string | null, write: (s: string) => void): Config {
  if (config.keyManager.encryptionKey || config.keyManager.mode === 'external') return config;
  return { ...config, keyManager: { ...config.keyManager, encryptionKey: secretOnce(read, write, 'base64') } };
}

/** A short secret could be guessed from one heartbeat, and every amphora's key with it. */
function checkHeartbeatSecret(secret: string): void {
  if (secret && secret.length < HEARTBEAT_SECRET_MIN_LENGTH)
    throw new ConfigError(`amphora.heartbeatSecret must be at least ${HEARTBEAT_SECRET_MIN_LENGTH} characters (e.g. from 'openssl rand -hex 32')`);
}

const HEARTBEAT_SECRET_MIN_LENGTH = 32;

export function ensureHeartbeatSecret(config: Config, read: () => string | null, write: (s: string) => void): Config {
  if (config.amphora.heartbeatSecret) return config;
  return { ...config, amphora: { ...config.amphora, heartbeatSecret: secretOnce(read, write, 'hex') } };
}

function checkListen(listen: string, field: string): number {
  try {
    return parseHostPort(listen, field).port;
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
}

/** Amphorae outlive the controller and keep sending to the address they were given, so it must be fixed. */
function checkHealthListen(listen: string): void {
  const port = checkListen(listen, 'amphora.healthListen');
  if (port === 0)
    throw new ConfigError(`amphora.healthListen '${listen}' has port 0: amphorae are told this address and keep it across restarts, so set a fixed free UDP port`);
}

export function ensureTokenSecret(config: Config, read: () => string | null, write: (s: string) => void): Config {
  if (config.identity.tokenSecret) return config;
  return { ...config, identity: { ...config.identity, tokenSecret: secretOnce(read, write, 'hex') } };
}

export function publicUrl(config: Config, boundPort?: number): string {
  if (config.api.publicUrl) return config.api.publicUrl.replace(/\/$/, '');
  return `http://${config.api.host}:${boundPort ?? config.api.port}`;
}

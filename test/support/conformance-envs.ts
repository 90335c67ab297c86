/**
 * The worlds the conformance suite runs in. amphora: the in-process harness with the amphora
 * provider (real `ostia agent` and HAProxy processes) and the health manager, VIPs and backends on
 * 127.x loopback. amphora-netns: the same provider with amphorae in namespaces on the bridge
 * fabric (compute.driver netns, network.driver bridge, as root), backends in namespaces on the
 * private bridge, traffic from this machine through its leg on the public bridge. ovn: the OVN lab (a real OVN, hosts in network namespaces) with the harness
 * pointed at it, traffic sent from the lab's client host.
 */
import { bridgeDataDir } from './bridge-data-dir.js';
import { readdirSync } from 'node:fs';
import { MEMBER_NETWORK_ID, MEMBER_SUBNET_ID, VIP_NETWORK_ID, VIP_SUBNET_ID, bridgeTenantNetworks, defaultConfig, type Config } from '../../src/config.js';
import { deleteNetns, ensureNetns, ip, netnsPids, plugPort } from '../../src/linux-net/ip.js';
import { BridgeNetwork } from '../../src/network/bridge-network/bridge-network.js';
import { NetworkCatalog } from '../../src/network/catalog.js';
import { freeUdpPort, httpGet, randomPort, startBackend, udpAsk, type Backend } from './amphora-fixtures.js';
import { httpEcho, udpEcho, type After } from './netns-lab.js';
import type { CapabilityTable } from '../../src/providers/capability-table.js';
import { amphoraCapabilities } from '../../src/providers/amphora/capabilities.js';
import { noopCapabilities } from '../../src/providers/noop/capabilities.js';
import { ovnCapabilities } from '../../src/providers/ovn/capabilities.js';
import { randomManagementNetwork } from './amphora-config.js';
import { Api, type MemberSpec, type ProviderEnv, type Refusal } from './conformance-api.js';
import { admin, startHarness, type Harness } from './harness.js';
import { WITH_KEY_MANAGER, storeContainer } from './tls-secrets.js';
import { createTestPki } from './test-pki.js';
import { BACKENDS, CLIENT, HTTP_PORT, PRIVATE_SUBNET, PUBLIC_SUBNET, UDP_PORT, startOvnLab } from './ovn-lab.js';
import { unmet } from './requirements.js';

export interface World {
  api: Api;
  env: ProviderEnv;
}

export interface ProviderWorld {
  /** What the suite is named after: the provider, and how its data plane runs when it has more than one world. */
  name: string;
  provider: string;
  /** Why this world cannot run here, or false. */
  missing(): string | false;
  start(): Promise<World>;
}

/** `networks` (the loopback defaults unless given) with `subnet` added to the member network. */
function withMemberSubnet(subnet: Config['network']['networks'][number]['subnets'][number], networks = defaultConfig('/unused').network.networks): Config['network']['networks'] {
  return networks.map((n) => (n.id === MEMBER_NETWORK_ID ? { ...n, subnets: [...n.subnets, subnet] } : n));
}

/**
 * The PostgreSQL pass runs the suite on the loopback amphora world only: the worlds differ in their data
 * planes, which the first pass covered, not in what they store.
 */
const storedOnceAlready = () => (process.env.OSTIA_TEST_DATABASE_URL ? 'the PostgreSQL pass runs the conformance suite on the amphora world only' : false);

const octet = () => 2 + Math.floor(Math.random() * 250);
const faultstring = (provider: string, kind: 'option' | 'action', text: string) => `Provider '${provider}' does not support a requested ${kind}: ${text}`;

/** Closes what was started, last first, whatever fails; rethrows the first failure. */
async function closeAll(closers: Array<() => Promise<unknown>>): Promise<void> {
  const failures: unknown[] = [];
  for (const close of closers.reverse()) await close().catch((e: unknown) => failures.push(e));
  if (failures.length > 0) throw failures[0];
}

/** Every provider's capability table, noop's included: the skips of each world come from its provider's. */
export const CAPABILITY_TABLES: readonly CapabilityTable[] = [noopCapabilities, amphoraCapabilities('local'), amphoraCapabilities('netns'), ovnCapabilities];

/** A table's refusals, each with the faultstring of its kind: what a world skips, and the 501 it checks first. */
export function refusalsOf(table: CapabilityTable): Refusal[] {
  return table.unsupported().map((u) => ({ ...u, faultstring: faultstring(table.provider, u.kind, u.reason) }));
}

/** `count` GETs from this machine, each on a new connection. */
async function httpFromHost(vip: string, port: number, count: number, path = '/'): Promise<string[]> {
  const bodies: string[] = [];
  for (let i = 0; i < count; i++) bodies.push((await httpGet(vip, port, path)).body);
  return bodies;
}

/** One certificate container in the harness's key manager, made on first use. */
function tlsContainerIn(h: Harness): () => Promise<string> {
  let ref: Promise<string> | undefined;
  return () =>
    (ref ??= (async () => {
      const pki = createTestPki();
      const leaf = pki.leaf({ cn: 'www.example.com', dnsNames: ['www.example.com'], key: 'ec-p256' });
      return storeContainer(h, admin, { certificate: leaf.certPem, private_key: leaf.keyPem, intermediates: pki.intermediate.certPem });
    })());
}

const amphora: ProviderWorld = {
  name: 'amphora',
  provider: 'amphora',
  missing: () => unmet('haproxy'),
  async start() {
    const closers: Array<() => Promise<unknown>> = [];
    try {
      // One /24 of the members' range for this run: other test files use the same loopback ranges.
      const net = `127.32.${octet()}`;
      const host = octet() % 200;
      const backends: Backend[] = [];
      for (const [i, name] of ['be1', 'be2'].entries()) backends.push(await startBackend(name, `${net}.${host + i + 1}`));
      const v6 = await startBackend('be6', '::1');
      for (const b of [...backends, v6]) closers.push(() => b.close());
      const h: Harness = await startHarness({
        ...WITH_KEY_MANAGER,
        api: { enabledProviders: ['noop', 'amphora'], defaultProvider: 'amphora' },
        // The IPv6 member is on ::1, which the API refuses unless a configured subnet holds it.
        network: { networks: withMemberSubnet({ id: 'c0ffee00-0000-4000-8000-000000000006', name: 'loopback-v6', cidr: '::1/128', gateway_ip: null, allocation_pools: [] }) },
        amphora: { managementNetwork: randomManagementNetwork(), agentPort: randomPort(), healthListen: `127.0.0.1:${await freeUdpPort()}`, heartbeatIntervalMs: 500, heartbeatTimeoutMs: 2000 },
      });
      closers.push(() => h.close());
      for (const role of await h.runtime.startRoles({ health: true })) closers.push(() => role.close());
      const member = (b: Backend): MemberSpec => ({ name: b.name, address: b.address, port: b.port, subnetId: MEMBER_SUBNET_ID });
      const env: ProviderEnv = {
        provider: 'amphora',
        vipSubnetId: VIP_SUBNET_ID,
        vipAddress: () => `127.16.${octet()}.${octet()}`,
        listenerPort: randomPort,
        tcpMembers: [member(backends[0]!), member(backends[1]!)],
        // Port 9 (discard) of an address of ours where nothing listens.
        closedMember: { name: 'silent', address: `${net}.${host + 3}`, port: 9, subnetId: MEMBER_SUBNET_ID },
        ipv6Member: { name: v6.name, address: v6.address, port: v6.port },
        clientCidr: '127.0.0.0/8',
        http: httpFromHost,
        tlsContainer: tlsContainerIn(h),
        refusals: refusalsOf(amphoraCapabilities('local')),
        close: () => closeAll(closers),
      };
      return { api: new Api(h), env };
    } catch (e) {
      await closeAll(closers).catch(() => undefined);
      throw e;
    }
  },
};

/** The ports the backends of the namespace world serve on. */
const NETNS_HTTP_PORT = 8000;
const NETNS_UDP_PORT = 5353;
/** The private network's IPv6 subnet in the namespace world, and its member: the fabric is the run's own, so the range is too. */
const NETNS_V6_SUBNET = { id: 'c0ffee00-0000-4000-8000-000000000016', name: 'private-v6', cidr: 'fd00:6::/64', gateway_ip: null, allocation_pools: [{ start: 'fd00:6::10', end: 'fd00:6::ff' }] };
const NETNS_V6_MEMBER = 'fd00:6::6';

const amphoraNetns: ProviderWorld = {
  name: 'amphora-netns',
  provider: 'amphora',
  missing: () => unmet('namespaces') || unmet('haproxy') || unmet('keepalived') || storedOnceAlready(),
  async start() {
    const closers: Array<() => Promise<unknown>> = [];
    // Servers in the namespaces are killed when the namespaces go (below), their callbacks first.
    const t: After = { after: (fn) => closers.push(async () => fn()) };
    try {
      // Short: HAProxy's sockets live under it (at most 31 characters).
      const { dir: dataDir, release } = bridgeDataDir('/tmp/ostia-cf-');
      closers.push(async () => release());
      // The management network and heartbeat address are the bridge defaults of the data directory; the networks too, with an IPv6 subnet on the private one for the IPv6 member.
      const h: Harness = await startHarness({
        ...WITH_KEY_MANAGER,
        dataDir,
        api: { enabledProviders: ['noop', 'amphora'], defaultProvider: 'amphora' },
        compute: { driver: 'netns' },
        network: { driver: 'bridge', networks: withMemberSubnet(NETNS_V6_SUBNET, bridgeTenantNetworks(dataDir)) },
        amphora: { heartbeatIntervalMs: 500, heartbeatTimeoutMs: 2000 },
      });
      closers.push(() => h.close());
      const net = new BridgeNetwork(h.config.dataDir, h.config.amphora.managementNetwork, new NetworkCatalog(h.config.network));
      // Amphorae outlive their controller by design: every namespace of the fabric goes, then the fabric.
      closers.push(async () => {
        for (const ns of readdirSync('/run/netns').filter((n) => n.startsWith(`${net.fabric}-`))) {
          for (const pid of netnsPids(ns)) process.kill(pid, 'SIGKILL');
          await deleteNetns(ns);
        }
        await net.destroy();
      });
      // Opening the amphora machinery (the health role does) builds the fabric the members plug into.
      for (const role of await h.runtime.startRoles({ health: true })) closers.push(() => role.close());
      const members = net.tenantBridge(MEMBER_NETWORK_ID);
      const prefix = members.gateway!.replace(/\.1$/, '');
      const backends = ['be1', 'be2'].map((name, i) => ({ name, address: `${prefix}.${200 + i}` }));
      for (const b of backends) {
        const ns = `${net.fabric}-${b.name}`;
        await ensureNetns(ns);
        await plugPort(members, b.name, ns, b.address);
        await httpEcho(t, ns, b.name, b.address, NETNS_HTTP_PORT);
        await udpEcho(t, ns, b.name, b.address, NETNS_UDP_PORT);
      }
      const v6 = { name: 'be6', address: NETNS_V6_MEMBER };
      const v6Ns = `${net.fabric}-${v6.name}`;
      await ensureNetns(v6Ns);
      // No duplicate address detection: the server binds the address at once.
      await ip('netns', 'exec', v6Ns, 'sysctl', '-qw', 'net.ipv6.conf.default.accept_dad=0');
      await plugPort({ ...members, prefixLength: 64 }, v6.name, v6Ns, v6.address);
      await httpEcho(t, v6Ns, v6.name, v6.address, NETNS_HTTP_PORT);
      const member = (b: (typeof backends)[number], port: number): MemberSpec => ({ ...b, port, subnetId: MEMBER_SUBNET_ID });
      const env: ProviderEnv = {
        provider: 'amphora',
        vipSubnetId: VIP_SUBNET_ID,
        vipAddress: () => undefined,
        listenerPort: randomPort,
        tcpMembers: [member(backends[0]!, NETNS_HTTP_PORT), member(backends[1]!, NETNS_HTTP_PORT)],
        // be1's namespace listens on the HTTP and UDP ports only: port 9 answers with a reset.
        closedMember: { ...member(backends[0]!, 9), name: 'silent' },
        ipv6Member: { ...v6, port: NETNS_HTTP_PORT, subnetId: NETNS_V6_SUBNET.id },
        // Requests leave this machine from its leg on the public network, the subnet's gateway.
        clientCidr: `${net.tenantBridge(VIP_NETWORK_ID).gateway}/32`,
        http: httpFromHost,
        udp: {
          members: [member(backends[0]!, NETNS_UDP_PORT), member(backends[1]!, NETNS_UDP_PORT)],
          async ask(vip, port, count) {
            const answers: string[] = [];
            for (let i = 0; i < count; i++) answers.push(await udpAsk(vip, port));
            return answers;
          },
        },
        tlsContainer: tlsContainerIn(h),
        refusals: refusalsOf(amphoraCapabilities('netns')),
        close: () => closeAll(closers),
      };
      return { api: new Api(h), env };
    } catch (e) {
      await closeAll(closers).catch(() => undefined);
      throw e;
    }
  },
};

const FAILED = /^FAIL:/;

const ovn: ProviderWorld = {
  name: 'ovn',
  provider: 'ovn',
  missing: () => unmet('ovn-sandbox') || storedOnceAlready(),
  async start() {
    const lab = await startOvnLab();
    const closers: Array<() => Promise<unknown>> = [() => lab.close()];
    let h: Harness;
    try {
      h = await startHarness({ ...lab.config, ...WITH_KEY_MANAGER });
      closers.push(() => h.close());
      // Member health from the Southbound Service_Monitor rows, as `ostia health` runs it beside the API.
      for (const role of await h.runtime.startRoles({ health: true })) closers.push(() => role.close());
    } catch (e) {
      await closeAll(closers).catch(() => undefined);
      throw e;
    }
    // Flows follow the Northbound database asynchronously: traffic waits for the chassis to catch up.
    const synced = () => lab.sb.nbctl('--wait=hv', 'sync');
    const member = (name: keyof typeof BACKENDS, port: number): MemberSpec => ({ name, address: BACKENDS[name], port, subnetId: PRIVATE_SUBNET });
    const env: ProviderEnv = {
      provider: 'ovn',
      vipSubnetId: PUBLIC_SUBNET,
      vipAddress: () => undefined,
      listenerPort: () => 80,
      tcpMembers: [member('be1', HTTP_PORT), member('be2', HTTP_PORT)],
      // be1's host listens on HTTP_PORT only: port 9 answers with a reset.
      closedMember: { name: 'silent', address: BACKENDS.be1, port: 9, subnetId: PRIVATE_SUBNET },
      clientCidr: `${CLIENT.ip}/32`,
      async http(vip, port, count, path = '/') {
        await synced();
        return (await lab.sb.httpGets(CLIENT.name, `http://${vip}:${port}${path}`, count, 1_500)).map((a) => (FAILED.test(a) ? '' : a));
      },
      udp: {
        members: [member('be1', UDP_PORT), member('be2', UDP_PORT)],
        async ask(vip, port, count) {
          await synced();
          return (await lab.sb.udpAsks(CLIENT.name, vip, port, count, 1_000)).map((a) => (FAILED.test(a) ? '' : a));
        },
      },
      tlsContainer: tlsContainerIn(h),
      refusals: refusalsOf(ovnCapabilities),
      close: () => closeAll(closers),
    };
    return { api: new Api(h), env };
  },
};

export const PROVIDER_WORLDS: readonly ProviderWorld[] = [amphora, amphoraNetns, ovn];

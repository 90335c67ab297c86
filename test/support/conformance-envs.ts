/**
 * The two worlds the conformance suite runs in. amphora: the in-process harness with the amphora
 * provider (real `ostia agent` and HAProxy processes) and the health manager, VIPs and backends on
 * 127.x loopback. ovn: the OVN lab (a real OVN, hosts in network namespaces) with the harness
 * pointed at it, traffic sent from the lab's client host.
 */
import { MEMBER_NETWORK_ID, MEMBER_SUBNET_ID, VIP_SUBNET_ID, defaultConfig, type Config } from '../../src/config.js';
import { freeUdpPort, httpGet, randomPort, startBackend, type Backend } from './amphora-fixtures.js';
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
  provider: string;
  /** Why this world cannot run here, or false. */
  missing(): string | false;
  start(): Promise<World>;
}

/** The default networks with `subnet` added to the member network. */
function withMemberSubnet(subnet: Config['network']['networks'][number]['subnets'][number]): Config['network']['networks'] {
  return defaultConfig('/unused').network.networks.map((n) => (n.id === MEMBER_NETWORK_ID ? { ...n, subnets: [...n.subnets, subnet] } : n));
}

const octet = () => 2 + Math.floor(Math.random() * 250);
const faultstring = (provider: string, kind: 'option' | 'action', text: string) => `Provider '${provider}' does not support a requested ${kind}: ${text}`;

/** Closes what was started, last first, whatever fails; rethrows the first failure. */
async function closeAll(closers: Array<() => Promise<unknown>>): Promise<void> {
  const failures: unknown[] = [];
  for (const close of closers.reverse()) await close().catch((e: unknown) => failures.push(e));
  if (failures.length > 0) throw failures[0];
}

/** Every provider's capability table, noop's included: the skips of each world come from its provider's. */
export const CAPABILITY_TABLES: readonly CapabilityTable[] = [noopCapabilities, amphoraCapabilities('local'), ovnCapabilities];

/** A table's refusals, each with the faultstring of its kind: what a world skips, and the 501 it checks first. */
export function refusalsOf(table: CapabilityTable): Refusal[] {
  return table.unsupported().map((u) => ({ ...u, faultstring: faultstring(table.provider, u.kind, u.reason) }));
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
        async http(vip, port, count, path = '/') {
          const bodies: string[] = [];
          for (let i = 0; i < count; i++) bodies.push((await httpGet(vip, port, path)).body);
          return bodies;
        },
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

const FAILED = /^FAIL:/;

const ovn: ProviderWorld = {
  provider: 'ovn',
  missing: () => unmet('ovn-sandbox'),
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

export const PROVIDER_WORLDS: readonly ProviderWorld[] = [amphora, ovn];

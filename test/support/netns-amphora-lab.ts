/**
 * A netns amphora lab, as root: a data directory with its BridgeNetwork fabric and management bridge,
 * a CA, the health manager's heartbeat receiver and a plain socket on the controller's management
 * address, a NetnsCompute, the spec of one amphora sending heartbeats to both, and a tenant bridge
 * built by hand (until the bridge driver builds tenant networks) with the amphora's VIP port and
 * host namespaces on it. Everything is removed in t.after, also on failure.
 */
import { createSocket, type RemoteInfo } from 'node:dgram';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { bridgeManagementNetwork } from '../../src/config.js';
import { AgentClient } from '../../src/amphora-client/client.js';
import { HeartbeatReceiver, type AcceptedHeartbeat } from '../../src/providers/amphora/health/receiver.js';
import { heartbeatKey } from '../../src/providers/amphora/heartbeat-key.js';
import { CertificateAuthority } from '../../src/pki/ca.js';
import { BridgeNetwork } from '../../src/network/bridge-network/bridge-network.js';
import { deleteNetns, ensureNetns, ip, netnsPids, plugPort, type BridgeAttachment } from '../../src/linux-net/ip.js';
import type { AmphoraSpec } from '../../src/compute/compute-driver.js';
import { NetnsCompute } from '../../src/compute/netns-compute/netns-compute.js';
import { ids } from './render-fixtures.js';

/** The amphora the render fixtures' configurations are for. */
export const AMPHORA_ID = ids.amphora(1);
const HEARTBEAT_SECRET = 'netns-compute-test-'.padEnd(40, 's');

interface After {
  after(fn: () => Promise<void> | void): void;
}

export interface Lab {
  dataDir: string;
  net: BridgeNetwork;
  ca: CertificateAuthority;
  compute: NetnsCompute;
  spec: AmphoraSpec;
  /** Datagrams on a plain socket of the controller's management address, with their sender… */
  datagrams: RemoteInfo[];
  /** …and what the health manager's receiver, on the same address, accepted. */
  accepted: AcceptedHeartbeat[];
}

export async function startLab(t: After): Promise<Lab> {
  // Short: HAProxy's sockets live in the amphora's directory under it.
  const dataDir = mkdtempSync('/tmp/ostia-nc-');
  const { managementNetwork, controllerAddress } = bridgeManagementNetwork(dataDir);
  const net = new BridgeNetwork(dataDir, managementNetwork);
  const compute = new NetnsCompute(join(dataDir, 'amphorae'), { management: net.management, dataDir, stopGraceMs: 2_000 });
  const socket = createSocket('udp4');
  const accepted: AcceptedHeartbeat[] = [];
  const receiver = new HeartbeatReceiver({
    listen: `${controllerAddress}:0`,
    heartbeatSecret: HEARTBEAT_SECRET,
    maxSkewMs: 3_000,
    flushMs: 10,
    maxPending: 10,
    write: async (batch) => {
      accepted.push(...batch);
      return { unknown: [] };
    },
    log: pino({ level: 'silent' }),
  });
  t.after(async () => {
    socket.close();
    await receiver.close();
    for (const { computeId } of await compute.list()) await compute.delete(computeId);
    await net.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  });
  await net.open();
  const receiving = await receiver.start();
  const datagrams: RemoteInfo[] = [];
  socket.on('message', (_datagram, from) => datagrams.push(from));
  socket.bind(0, controllerAddress);
  await once(socket, 'listening');
  const ca = await CertificateAuthority.open(join(dataDir, 'pki'));
  const managementAddress = managementNetwork.start;
  const issued = await ca.issueAmphoraCert(AMPHORA_ID, managementAddress, 1);
  const spec: AmphoraSpec = {
    amphoraId: AMPHORA_ID,
    dir: compute.amphoraDir(AMPHORA_ID),
    managementAddress,
    agentPort: 9443,
    certPem: issued.certPem,
    keyPem: issued.keyPem,
    clientCaPem: ca.clientCaPem,
    heartbeat: { key: heartbeatKey(HEARTBEAT_SECRET, AMPHORA_ID), targets: [`${controllerAddress}:${receiving.port}`, `${controllerAddress}:${socket.address().port}`], intervalMs: 100 },
    haproxyBinary: '/usr/sbin/haproxy',
    maxconn: 1000,
  };
  return { dataDir, net, ca, compute, spec, datagrams, accepted };
}

/** Boots the lab's amphora and waits for its agent. */
export async function bootAmphora(l: Lab): Promise<string> {
  const computeId = await l.compute.boot(l.spec, AbortSignal.timeout(10_000));
  await l.compute.started(computeId, AbortSignal.timeout(10_000));
  return computeId;
}

/** A client of the lab amphora's agent, as the controller's; closed in t.after. */
export async function agentClient(l: Lab, t: After): Promise<AgentClient> {
  const { certPem, keyPem } = await l.ca.controllerClientCert();
  const client = new AgentClient({ url: `https://${l.spec.managementAddress}:${l.spec.agentPort}`, amphoraId: AMPHORA_ID, serverCaPem: l.ca.serverCaPem, clientCertPem: certPem, clientKeyPem: keyPem });
  t.after(() => client.close());
  return client;
}

/**
 * A tenant bridge in the fabric with the amphora's VIP port (eth1) and one namespace per host, each
 * with its address on the bridge. Returns the hosts' namespace names, by host.
 */
export async function tenantNetwork<H extends string>(l: Lab, t: After, vip: { address: string; prefixLength: number }, hosts: Record<H, string>): Promise<Record<H, string>> {
  const tenant: BridgeAttachment = { namespace: l.net.fabric, bridge: 'br-tenant', prefixLength: vip.prefixLength };
  const namespaces = Object.fromEntries(Object.keys(hosts).map((h) => [h, `${l.net.fabric}-${h}`])) as Record<H, string>;
  t.after(async () => {
    for (const ns of Object.values<string>(namespaces)) {
      for (const pid of netnsPids(ns)) process.kill(pid, 'SIGKILL');
      await deleteNetns(ns);
    }
  });
  await ip('-n', tenant.namespace, 'link', 'add', tenant.bridge, 'type', 'bridge');
  await ip('-n', tenant.namespace, 'link', 'set', tenant.bridge, 'up');
  await plugPort(tenant, 'vip', l.compute.namespaceOf(AMPHORA_ID), vip.address, 'eth1');
  for (const [host, address] of Object.entries<string>(hosts)) {
    await ensureNetns(namespaces[host as H]);
    await plugPort(tenant, host, namespaces[host as H], address);
  }
  return namespaces;
}

export async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

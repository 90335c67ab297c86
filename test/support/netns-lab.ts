/**
 * A lab for netns amphorae, as root: a data directory, its BridgeNetwork fabric with the management
 * bridge, a CA, the health manager's heartbeat receiver and a plain socket on the controller's
 * management address, a NetnsCompute, and the spec of any amphora sending heartbeats to both; and a
 * tenant bridge built by hand in the fabric with a namespace per host (a member serving HTTP and a
 * client, or hosts of the test's naming with UDP servers).
 * Everything is removed in t.after, also when the test fails.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket, type RemoteInfo } from 'node:dgram';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { bridgeManagementNetwork } from '../../src/config.js';
import { bridgeDataDir } from './bridge-data-dir.js';
import { AgentClient } from '../../src/amphora-client/client.js';
import { HeartbeatReceiver, type AcceptedHeartbeat } from '../../src/providers/amphora/health/receiver.js';
import { heartbeatKey } from '../../src/providers/amphora/heartbeat-key.js';
import { CertificateAuthority } from '../../src/pki/ca.js';
import { BridgeNetwork } from '../../src/network/bridge-network/bridge-network.js';
import { deleteNetns, ensureNetns, IP, ip, netnsPids, plugPort, type BridgeAttachment } from '../../src/linux-net/ip.js';
import type { AmphoraSpec } from '../../src/compute/compute-driver.js';
import { NetnsCompute } from '../../src/compute/netns-compute/netns-compute.js';
import { ipToBigInt, bigIntToIp } from '../../src/domain/net.js';

const HEARTBEAT_SECRET = 'netns-compute-test-'.padEnd(40, 's');

export interface After {
  after(fn: () => Promise<void> | void): void;
}

export interface NetnsLab {
  dataDir: string;
  net: BridgeNetwork;
  ca: CertificateAuthority;
  compute: NetnsCompute;
  /** The spec of an amphora: the n-th management address (0 is the first of the range). */
  specFor(amphoraId: string, n?: number): Promise<AmphoraSpec>;
  /** Datagrams on a plain socket of the controller's management address, with their sender… */
  datagrams: RemoteInfo[];
  /** …and what the health manager's receiver, on the same address, accepted. */
  accepted: AcceptedHeartbeat[];
}

export async function netnsLab(t: After): Promise<NetnsLab> {
  // Short: HAProxy's sockets live in the amphora's directory under it.
  const { dir: dataDir, release } = bridgeDataDir('/tmp/ostia-nc-');
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
    release();
  });
  await net.open();
  const receiving = await receiver.start();
  const datagrams: RemoteInfo[] = [];
  socket.on('message', (_datagram, from) => datagrams.push(from));
  socket.bind(0, controllerAddress);
  await once(socket, 'listening');
  const ca = await CertificateAuthority.open(join(dataDir, 'pki'));
  const specFor = async (amphoraId: string, n = 0): Promise<AmphoraSpec> => {
    const managementAddress = bigIntToIp(ipToBigInt(managementNetwork.start) + BigInt(n), 4);
    const issued = await ca.issueAmphoraCert(amphoraId, managementAddress, 1);
    return {
      amphoraId,
      dir: compute.amphoraDir(amphoraId),
      managementAddress,
      agentPort: 9443,
      certPem: issued.certPem,
      keyPem: issued.keyPem,
      clientCaPem: ca.clientCaPem,
      heartbeat: { key: heartbeatKey(HEARTBEAT_SECRET, amphoraId), targets: [`${controllerAddress}:${receiving.port}`, `${controllerAddress}:${socket.address().port}`], intervalMs: 100 },
      haproxyBinary: '/usr/sbin/haproxy',
      maxconn: 1000,
    };
  };
  return { dataDir, net, ca, compute, specFor, datagrams, accepted };
}

/** The controller's client for the agent of `spec`. */
export async function agentClient(l: NetnsLab, spec: AmphoraSpec): Promise<AgentClient> {
  const { certPem, keyPem } = await l.ca.controllerClientCert();
  return new AgentClient({ url: `https://${spec.managementAddress}:${spec.agentPort}`, amphoraId: spec.amphoraId, serverCaPem: l.ca.serverCaPem, clientCertPem: certPem, clientKeyPem: keyPem });
}

export interface Tenant<H extends string> {
  attachment: BridgeAttachment;
  /** The namespace of each host, by host. */
  ns: Record<H, string>;
}

/**
 * The tenant network the bridge driver will build in a later step, by hand: a bridge in the fabric and
 * one namespace per host, each with its address on the bridge (its port there is named after it).
 */
export async function tenantBridge<H extends string>(t: After, l: NetnsLab, prefixLength: number, hosts: Record<H, string>): Promise<Tenant<H>> {
  const attachment: BridgeAttachment = { namespace: l.net.fabric, bridge: 'br-tenant', prefixLength };
  const entries = Object.entries<string>(hosts) as Array<[H, string]>;
  const ns = Object.fromEntries(entries.map(([host]) => [host, `${l.net.fabric}-${host}`])) as Record<H, string>;
  t.after(async () => {
    for (const [host] of entries) {
      for (const pid of netnsPids(ns[host])) process.kill(pid, 'SIGKILL');
      await deleteNetns(ns[host]);
    }
  });
  await ip('-n', attachment.namespace, 'link', 'add', attachment.bridge, 'type', 'bridge');
  await ip('-n', attachment.namespace, 'link', 'set', attachment.bridge, 'up');
  for (const [host, address] of entries) {
    await ensureNetns(ns[host]);
    await plugPort(attachment, host, ns[host], address);
  }
  return { attachment, ns };
}

/** A tenant bridge with a member namespace answering HTTP on `member`:8080 with "member", and a client namespace at `client`. */
export async function tenantNetwork(t: After, l: NetnsLab, addresses: { prefixLength: number; member: string; client: string }): Promise<Tenant<'member' | 'client'>> {
  const tenant = await tenantBridge(t, l, addresses.prefixLength, { member: addresses.member, client: addresses.client });
  await httpEcho(t, tenant.ns.member, 'member', addresses.member, 8080);
  return tenant;
}

/** An HTTP server in `ns` on `address`:`port` that answers every request with `name`; resolves once it listens. */
export function httpEcho(t: After, ns: string, name: string, address: string, port: number): Promise<ChildProcess> {
  return serveIn(t, ns, `require('node:http').createServer((q, s) => s.end('${name}')).listen(${port}, '${address}', () => console.log('up'))`);
}

/** A UDP server in `ns` on `address`:`port` that answers every datagram with `name`; resolves once it is bound. */
export function udpEcho(t: After, ns: string, name: string, address: string, port: number): Promise<ChildProcess> {
  return serveIn(t, ns, `const s=require('node:dgram').createSocket('udp4');s.on('message',(m,r)=>s.send('${name}',r.port,r.address));s.bind(${port},'${address}',()=>console.log('up'))`);
}

/** Node running `code` in namespace `ns`, killed in t.after; resolves once `code` prints that it serves. */
async function serveIn(t: After, ns: string, code: string): Promise<ChildProcess> {
  const child = spawn(IP, ['netns', 'exec', ns, process.execPath, '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => {
    child.kill('SIGKILL');
  });
  await once(child.stdout!, 'data', { signal: AbortSignal.timeout(10_000) });
  return child;
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

export const pidRecord = (dir: string) => JSON.parse(readFileSync(join(dir, 'agent.pid'), 'utf8')) as { pid: number; startTime: string | null };
export const statusField = (pid: number, field: string) => readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`^${field}:\\s+([0-9a-f]+)`, 'm'))?.[1];
/** The processes of a network namespace whose command is `comm`. */
export const processesNamed = (netns: string, comm: string) => netnsPids(netns).filter((pid) => {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === comm;
  } catch {
    return false;
  }
});

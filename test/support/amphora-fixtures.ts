/**
 * Fixtures for the amphora tests: private directories, loopback addresses nobody else uses,
 * small real HTTP(S) backends that say who answered, and bounded polling.
 */
import { createSocket } from 'node:dgram';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentBootConfig } from '../../src/compute/compute-driver.js';
import { httpGet } from '../../src/cli/baseline/interruption.js';
import { CertificateAuthority } from '../../src/pki/ca.js';

/** One GET on a new connection; network failures resolve as status 0. */
export { httpGet };

export function tempDir(prefix: string): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), `ostia-${prefix}-`));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** A random 127.x.y.z address (all of 127/8 is local on Linux), so parallel tests never share a port. */
export function loopbackAddress(): string {
  return `127.${octet(100, 199)}.${octet(0, 255)}.${octet(2, 254)}`;
}

/** A random address of the default member subnet (127.32.0.0/16): the API refuses other loopback addresses as members. */
export function memberSubnetAddress(): string {
  return `127.32.${octet(0, 255)}.${octet(10, 250)}`;
}

const octet = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1));

/** A port for a listener HAProxy binds itself; its own random address makes a clash unlikely. */
export function randomPort(): number {
  return 20000 + Math.floor(Math.random() * 40000);
}

/**
 * A port free right now on 127.0.0.1, for an address a process must be told before it binds.
 * Picked below the kernel's ephemeral range: outgoing connections and amphorae's heartbeat
 * sockets take ephemeral ports, handed out nearly in sequence, and one took the health port
 * while `ostia up` restarted.
 */
async function freePort(kind: 'udp' | 'tcp'): Promise<number> {
  const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 10_000 + Math.floor(Math.random() * (low - 10_000));
    if (await bindsNow(kind, port)) return port;
  }
  throw new Error(`no free ${kind.toUpperCase()} port found below ${low} in 50 tries`);
}

async function bindsNow(kind: 'udp' | 'tcp', port: number): Promise<boolean> {
  const probe = kind === 'udp' ? createSocket('udp4') : createServer();
  const free = await new Promise<boolean>((resolve) => {
    probe.once('error', () => resolve(false));
    if (kind === 'udp') (probe as ReturnType<typeof createSocket>).bind(port, '127.0.0.1', () => resolve(true));
    else (probe as ReturnType<typeof createServer>).listen(port, '127.0.0.1', () => resolve(true));
  });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return free;
}

/** For a health manager's heartbeat address. */
export const freeUdpPort = () => freePort('udp');
/** For a TCP listener of a process started apart (e.g. a metrics address). */
export const freeTcpPort = () => freePort('tcp');

export interface Backend {
  address: string;
  port: number;
  name: string;
  close(): Promise<void>;
}

/** HTTPS instead of HTTP; with `clientCa`, clients must present a certificate it issued. */
export interface BackendTls {
  certPem: string;
  keyPem: string;
  clientCa?: string;
}

/**
 * A server on `address` answering every request with its name. The headers `x-*` it received
 * come back as JSON in `x-received`, and an HTTPS backend names the client certificate's CN in
 * `x-client-cn`: what a load balancer in front added or presented.
 */
export async function startBackend(name: string, address = loopbackAddress(), tls?: BackendTls): Promise<Backend> {
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    res.setHeader('content-type', 'text/plain');
    res.setHeader('x-received', JSON.stringify(Object.fromEntries(Object.entries(req.headers).filter(([k]) => k.startsWith('x-')))));
    const peer = tls ? (req.socket as TLSSocket).getPeerCertificate() : null;
    if (peer?.subject) res.setHeader('x-client-cn', String(peer.subject.CN));
    res.end(name);
  };
  const server: Server = tls
    ? (createHttpsServer({ cert: tls.certPem, key: tls.keyPem, ...(tls.clientCa ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: true } : {}) }, handle) as unknown as Server)
    : createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, address, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    address,
    port,
    name,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** One datagram from a new socket (so a new source port); the answer, or '' when none came within `timeoutMs`. */
export function udpAsk(host: string, port: number, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve) => {
    const socket = createSocket('udp4');
    const done = (answer: string) => {
      clearTimeout(timer);
      socket.close();
      resolve(answer);
    };
    const timer = setTimeout(() => done(''), timeoutMs);
    socket.on('error', () => done(''));
    socket.on('message', (m) => done(String(m)));
    socket.send('q', port, host);
  });
}

/** The bodies of `count` sequential GETs. */
export async function collectBodies(host: string, port: number, count: number): Promise<string[]> {
  const bodies: string[] = [];
  for (let i = 0; i < count; i++) bodies.push((await httpGet(host, port)).body);
  return bodies;
}

/** Polls `probe` every `intervalMs` until it returns a truthy value; fails after `timeoutMs`. */
export async function eventually<T>(probe: () => Promise<T> | T, what: string, timeoutMs = 10_000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; attempt < Math.ceil(timeoutMs / intervalMs) + 1; attempt++) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

export interface PreparedAmphora {
  /** The amphora's directory, holding agent.json, its certificate and the client CA. */
  dir: string;
  ca: CertificateAuthority;
  boot: AgentBootConfig;
}

/**
 * What the compute driver leaves for `ostia agent --dir`: a CA under `root/pki`, the agent's
 * certificate for a fresh management address, and agent.json.
 */
export async function prepareAmphora(root: string, amphoraId: string, heartbeat: AgentBootConfig['heartbeat']): Promise<PreparedAmphora> {
  const ca = await CertificateAuthority.open(join(root, 'pki'));
  const dir = join(root, amphoraId);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const managementAddress = loopbackAddress();
  const issued = await ca.issueAmphoraCert(amphoraId, managementAddress, 1);
  const boot: AgentBootConfig = {
    amphoraId,
    managementAddress,
    agentPort: randomPort(),
    certFile: join(dir, 'server.pem'),
    keyFile: join(dir, 'server.key'),
    clientCaFile: join(dir, 'client-ca.pem'),
    heartbeat,
    haproxyBinary: '/usr/sbin/haproxy',
    maxconn: 1000,
  };
  writeFileSync(boot.certFile, issued.certPem, { mode: 0o600 });
  writeFileSync(boot.keyFile, issued.keyPem, { mode: 0o600 });
  writeFileSync(boot.clientCaFile, ca.clientCaPem, { mode: 0o600 });
  writeFileSync(join(dir, 'agent.json'), JSON.stringify(boot), { mode: 0o600 });
  return { dir, ca, boot };
}

/**
 * The controller's way to one agent, a step at a time, so a failure names the step: the route this
 * machine takes to the management address, a TCP connection to the agent port, the mutual TLS handshake
 * (the agent's certificate must chain to the server CA and name the amphora, as the controller's agent
 * client demands), and an API call over that connection, whose Date header tells the amphora's clock.
 */
import { execFile } from 'node:child_process';
import { request } from 'node:https';
import { connect as tcpConnect } from 'node:net';
import { checkServerIdentity, connect as tlsConnect, type PeerCertificate, type TLSSocket } from 'node:tls';
import { IP } from '../../linux-net/ip.js';

export interface RouteSeen {
  dev: string;
  type: string | null;
  gateway: string | null;
  prefsrc: string | null;
}

/** `ip route get ADDRESS` of this machine; null where it has no route at all (the error says so). */
export function routeTo(address: string): Promise<RouteSeen | { error: string }> {
  return new Promise((resolve) => {
    execFile(IP, ['-j', 'route', 'get', address], { timeout: 10_000 }, (e, stdout, stderr) => {
      if (e) return resolve({ error: (stderr || e.message).trim() });
      const [r] = JSON.parse(stdout) as Array<{ dev: string; type?: string; gateway?: string; prefsrc?: string }>;
      resolve({ dev: r!.dev, type: r!.type ?? null, gateway: r!.gateway ?? null, prefsrc: r!.prefsrc ?? null });
    });
  });
}

export type TcpOutcome = { open: true; ms: number } | { open: false; code: string };

/** ECONNREFUSED: nothing listens (or a reject rule); ETIMEDOUT: the SYN went unanswered, dropped on the way. */
export function probeTcp(host: string, port: number, timeoutMs: number): Promise<TcpOutcome> {
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = tcpConnect({ host, port, timeout: timeoutMs });
    socket.once('connect', () => {
      socket.destroy();
      resolve({ open: true, ms: performance.now() - started });
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve({ open: false, code: 'ETIMEDOUT' });
    });
    socket.once('error', (e: NodeJS.ErrnoException) => resolve({ open: false, code: e.code ?? e.message }));
  });
}

export interface Identity {
  serverCaPem: string;
  clientCertPem: string;
  clientKeyPem: string;
}

export type TlsOutcome =
  | { ok: true; socket: TLSSocket; peer: PeerCertificate; ms: number }
  | { ok: false; code: string; message: string };

/** The handshake the agent client makes: our client certificate, the server CA, and the amphora's id as the name. */
export function probeTls(host: string, port: number, amphoraId: string, identity: Identity, timeoutMs: number): Promise<TlsOutcome> {
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = tlsConnect({
      host,
      port,
      servername: amphoraId,
      ca: identity.serverCaPem,
      cert: identity.clientCertPem,
      key: identity.clientKeyPem,
      minVersion: 'TLSv1.2',
      rejectUnauthorized: true,
      checkServerIdentity: (_host, cert) => checkServerIdentity(amphoraId, cert),
      timeout: timeoutMs,
    });
    const fail = (code: string, message: string) => {
      socket.destroy();
      resolve({ ok: false, code, message });
    };
    socket.once('secureConnect', () => {
      socket.setTimeout(0);
      resolve({ ok: true, socket, peer: socket.getPeerCertificate(), ms: performance.now() - started });
    });
    socket.once('timeout', () => fail('ETIMEDOUT', `no handshake within ${timeoutMs} ms`));
    socket.once('error', (e: NodeJS.ErrnoException) => fail(e.code ?? 'ERR_TLS', e.message));
  });
}

export interface InfoOutcome {
  status: number;
  body: string;
  /** The agent's Date header (whole seconds), and this machine's clock before and after the call, epoch ms. */
  date: number | null;
  sentAt: number;
  answeredAt: number;
  ms: number;
}

/** GET /1.0/info over the handshaken connection (the agent client's first call). */
export function probeInfo(socket: TLSSocket, host: string, timeoutMs: number): Promise<InfoOutcome | { error: string }> {
  const sentAt = Date.now();
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request({ host, path: '/1.0/info', method: 'GET', headers: { accept: 'application/json' }, createConnection: () => socket, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        const answeredAt = Date.now();
        const date = res.headers.date ? Date.parse(res.headers.date) : NaN;
        socket.destroy();
        resolve({ status: res.statusCode ?? 0, body, date: Number.isNaN(date) ? null : date, sentAt, answeredAt, ms: performance.now() - started });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (e) => {
      socket.destroy();
      resolve({ error: e.message });
    });
    req.end();
  });
}

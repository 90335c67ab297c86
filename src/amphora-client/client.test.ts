/**
 * The client against a real HTTPS server with mutual TLS (node:https, certs from our CA):
 * the TLS checks under test are Node's, not mocks. The handlers stand in for the agent's
 * REST contract only as far as the client needs to read its answers.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import diagnostics_channel from 'node:diagnostics_channel';
import https from 'node:https';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { CertificateAuthority } from '../pki/ca.js';
import { AgentClient, AgentConnectionError, AgentHttpError } from './client.js';
import type { AmphoraConfig } from '../domain/amphora-config.js';

const AMPHORA_A = '0b6f7c4e-2b1a-4c3d-9e8f-0a1b2c3d4e5f';
const AMPHORA_B = '9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a';
const LB_ID = '1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d';

let root: string;
let ca: CertificateAuthority;
let otherCa: CertificateAuthority;
let client: { certPem: string; keyPem: string };

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'ostia-agent-client-'));
  ca = await CertificateAuthority.open(join(root, 'pki'));
  otherCa = await CertificateAuthority.open(join(root, 'other-pki'));
  client = await ca.controllerClientCert();
});
after(() => rmSync(root, { recursive: true, force: true }));

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

interface Server {
  url: string;
  port: number;
  /** Client certs the server saw, by subject CN. */
  peers: string[];
  close(): Promise<void>;
}

/** An HTTPS server that, like the agent, demands a client cert from the client CA. */
async function startServer(
  t: { after(fn: () => Promise<void>): void },
  opts: { amphoraId?: string; issuer?: CertificateAuthority; port?: number; handler: Handler },
): Promise<Server> {
  const issued = await (opts.issuer ?? ca).issueAmphoraCert(opts.amphoraId ?? AMPHORA_A, '127.0.0.1', 1);
  const peers: string[] = [];
  const server = https.createServer(
    { cert: issued.certPem, key: issued.keyPem, ca: ca.clientCaPem, requestCert: true, rejectUnauthorized: true },
    (req, res) => {
      peers.push(String((req.socket as import('node:tls').TLSSocket).getPeerCertificate().subject.CN));
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => opts.handler(req, res, body));
    },
  );
  server.listen(opts.port ?? 0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const close = async () => {
    server.closeAllConnections();
    if (server.listening) await new Promise<void>((r) => server.close(() => r()));
  };
  t.after(close);
  return { url: `https://127.0.0.1:${port}`, port, peers, close };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** Resolves once a request to 127.0.0.1:`port` has been refused: the client tried while nothing listened. */
function refusedOn(port: number): Promise<void> {
  return new Promise((resolve) => {
    const onError = (message: unknown) => {
      const { error } = message as { error: NodeJS.ErrnoException & { port?: number } };
      if (error.code !== 'ECONNREFUSED' || error.port !== port) return;
      diagnostics_channel.unsubscribe('http.client.request.error', onError);
      resolve();
    };
    diagnostics_channel.subscribe('http.client.request.error', onError);
  });
}

function clientFor(url: string, amphoraId = AMPHORA_A, timeoutMs?: number): AgentClient {
  return new AgentClient({ url, amphoraId, serverCaPem: ca.serverCaPem, clientCertPem: client.certPem, clientKeyPem: client.keyPem, timeoutMs });
}

const INFO = { amphoraId: AMPHORA_A, apiVersion: '1.0', haproxyVersion: '2.6.12', configVersion: 3 };

function sampleConfig(version: number): AmphoraConfig {
  return { version, loadBalancerId: LB_ID, amphoraId: AMPHORA_A, enabled: true, vip: { address: '127.16.0.10', additional: [] }, listeners: [], pools: [] };
}

async function freePort(): Promise<number> {
  const probe = https.createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((r) => probe.close(() => r()));
  return port;
}

test('info: GET /1.0/info over mutual TLS, presenting the controller client cert', async (t) => {
  const seen: string[] = [];
  const server = await startServer(t, { handler: (req, res) => (seen.push(`${req.method} ${req.url}`), json(res, 200, INFO)) });
  const agent = clientFor(server.url);
  t.after(() => agent.close());
  assert.deepEqual(await agent.info(), INFO);
  assert.deepEqual(seen, ['GET /1.0/info']);
  assert.deepEqual(server.peers, ['ostia-controller']);
});

test('putConfig sends the typed config as JSON and returns the apply result; getConfig reads it back', async (t) => {
  let stored: unknown = null;
  const server = await startServer(t, {
    handler: (req, res, body) => {
      if (req.method === 'PUT' && req.url === '/1.0/config') {
        assert.equal(req.headers['content-type'], 'application/json');
        stored = JSON.parse(body);
        return json(res, 200, { version: (stored as AmphoraConfig).version, applied: 'reload' });
      }
      if (req.method === 'GET' && req.url === '/1.0/config') return json(res, 200, stored);
      json(res, 404, { error: 'not found' });
    },
  });
  const agent = clientFor(server.url);
  t.after(() => agent.close());
  assert.deepEqual(await agent.putConfig(sampleConfig(4)), { version: 4, applied: 'reload' });
  assert.deepEqual(await agent.getConfig(), sampleConfig(4));
});

test('stats and putCertificate use their routes', async (t) => {
  const seen: string[] = [];
  const server = await startServer(t, {
    handler: (req, res, body) => {
      seen.push(`${req.method} ${req.url} ${body}`);
      if (req.url === '/1.0/stats') return json(res, 200, { listeners: {} });
      res.writeHead(204).end();
    },
  });
  const agent = clientFor(server.url);
  t.after(() => agent.close());
  assert.deepEqual(await agent.stats(), { listeners: {} });
  await agent.putCertificate('PEM');
  assert.deepEqual(seen, ['GET /1.0/stats ', 'PUT /1.0/certificate {"pem":"PEM"}']);
});

test("the agent's JSON errors become AgentHttpError with status, message and details (haproxy -c output) in the message", async (t) => {
  const server = await startServer(t, {
    handler: (_req, res) => json(res, 400, { error: 'invalid configuration', details: "[ALERT] parsing [haproxy.cfg:12] : unknown keyword 'bogus'" }),
  });
  const agent = clientFor(server.url);
  t.after(() => agent.close());
  const err = await agent.putConfig(sampleConfig(5)).then(() => null, (e: unknown) => e);
  assert.ok(err instanceof AgentHttpError);
  assert.equal(err.status, 400);
  assert.equal(err.agentMessage, 'invalid configuration');
  assert.equal(err.details, "[ALERT] parsing [haproxy.cfg:12] : unknown keyword 'bogus'");
  assert.equal(
    err.message,
    `PUT /1.0/config on amphora ${AMPHORA_A} (${server.url}) failed with 400: invalid configuration\n[ALERT] parsing [haproxy.cfg:12] : unknown keyword 'bogus'`,
  );
});

test('a 409 for an older version and a non-JSON error body are reported too', async (t) => {
  let call = 0;
  const server = await startServer(t, {
    handler: (_req, res) => {
      if (call++ === 0) return json(res, 409, { error: 'version 2 is older than the applied version 5' });
      res.writeHead(502, { 'content-type': 'text/plain' }).end('bad gateway');
    },
  });
  const agent = clientFor(server.url);
  t.after(() => agent.close());
  await assert.rejects(agent.putConfig(sampleConfig(2)), (e: unknown) => e instanceof AgentHttpError && e.status === 409 && e.details === null && /failed with 409: version 2 is older than the applied version 5$/.test(e.message));
  await assert.rejects(agent.info(), (e: unknown) => e instanceof AgentHttpError && e.status === 502 && e.agentMessage === 'bad gateway');
});

test('a certificate for ANOTHER amphora is refused even though our CA signed it', async (t) => {
  let handled = 0;
  const server = await startServer(t, { amphoraId: AMPHORA_B, handler: (_req, res) => (handled++, json(res, 200, INFO)) });
  const agent = clientFor(server.url, AMPHORA_A);
  t.after(() => agent.close());
  const err = await agent.info().then(() => null, (e: unknown) => e);
  assert.ok(err instanceof AgentConnectionError, String(err));
  assert.equal(err.code, 'ERR_AMPHORA_IDENTITY');
  assert.equal(err.retryable, false);
  assert.match(err.message, new RegExp(`its certificate names CN=${AMPHORA_B}, DNS:${AMPHORA_B}, IP Address:127.0.0.1, not amphora ${AMPHORA_A}`));
  assert.equal(handled, 0, 'no request reached the impostor');
  // The same server is fine for the amphora it names.
  const right = clientFor(server.url, AMPHORA_B);
  t.after(() => right.close());
  assert.deepEqual(await right.info(), INFO);
});

test('a certificate from another CA is refused, naming the chain failure', async (t) => {
  const server = await startServer(t, { issuer: otherCa, handler: (_req, res) => json(res, 200, INFO) });
  const agent = clientFor(server.url);
  t.after(() => agent.close());
  await assert.rejects(agent.info(), (e: unknown) => e instanceof AgentConnectionError && !e.retryable && /unable to verify|self.signed|UNABLE_TO_VERIFY/i.test(e.message));
});

test('a client cert the agent does not trust gets no answer', async (t) => {
  const server = await startServer(t, { handler: (_req, res) => json(res, 200, INFO) });
  const stranger = await otherCa.controllerClientCert();
  const agent = new AgentClient({ url: server.url, amphoraId: AMPHORA_A, serverCaPem: ca.serverCaPem, clientCertPem: stranger.certPem, clientKeyPem: stranger.keyPem });
  t.after(() => agent.close());
  // With TLS 1.3 the server's refusal reaches the client as a reset after the handshake.
  await assert.rejects(agent.info(), (e: unknown) => e instanceof AgentConnectionError && e.code === 'ECONNRESET');
  assert.deepEqual(server.peers, []);
});

test('a silent agent times out with a clear message', async (t) => {
  const server = await startServer(t, { handler: () => undefined });
  const agent = clientFor(server.url, AMPHORA_A, 200);
  t.after(() => agent.close());
  await assert.rejects(agent.info(), (e: unknown) => e instanceof AgentConnectionError && e.code === 'ETIMEOUT' && e.retryable && /GET \/1\.0\/info on amphora .*: no answer within 200 ms/.test(e.message));
});

test("the caller's abort signal cancels a request with its own reason", async (t) => {
  const controller = new AbortController();
  // Aborted while the agent holds the request.
  const server = await startServer(t, { handler: () => controller.abort(new Error('worker stopping')) });
  const agent = clientFor(server.url);
  t.after(() => agent.close());
  const pending = agent.info(controller.signal);
  await assert.rejects(pending, /worker stopping/);
});

test('waitReady retries while nothing listens yet, then returns the info', async (t) => {
  const port = await freePort();
  const agent = clientFor(`https://127.0.0.1:${port}`);
  t.after(() => agent.close());
  const refused = refusedOn(port);
  const ready = agent.waitReady(AbortSignal.timeout(30_000), Date.now() + 30_000);
  await refused;
  await startServer(t, { port, handler: (_req, res) => json(res, 200, INFO) });
  assert.deepEqual(await ready, INFO);
});

test('waitReady treats 503 as not ready yet', async (t) => {
  let calls = 0;
  const server = await startServer(t, { handler: (_req, res) => (++calls < 3 ? json(res, 503, { error: 'starting' }) : json(res, 200, INFO)) });
  const agent = clientFor(server.url);
  t.after(() => agent.close());
  assert.deepEqual(await agent.waitReady(AbortSignal.timeout(10_000), Date.now() + 10_000), INFO);
  assert.equal(calls, 3);
});

test('waitReady gives up at the deadline with the last error', async (t) => {
  const port = await freePort();
  const agent = clientFor(`https://127.0.0.1:${port}`);
  t.after(() => agent.close());
  const deadline = Date.now() + 400;
  const err = await agent.waitReady(AbortSignal.timeout(10_000), deadline).then(() => null, (e: unknown) => e);
  assert.ok(err instanceof AgentConnectionError);
  assert.equal(err.code, 'ECONNREFUSED');
  assert.match(err.message, new RegExp(`agent of amphora ${AMPHORA_A} at https://127\\.0\\.0\\.1:${port} was not ready by the deadline \\(\\d+ attempts\\); last error: .*ECONNREFUSED`));
  // It must not give up before the deadline (how long after it is a matter of load, not of logic).
  assert.ok(Date.now() >= deadline, `gave up ${deadline - Date.now()} ms before the deadline`);
});

test('waitReady stops at once on an identity failure instead of waiting for the deadline', async (t) => {
  const server = await startServer(t, { amphoraId: AMPHORA_B, handler: (_req, res) => json(res, 200, INFO) });
  const agent = clientFor(server.url, AMPHORA_A);
  t.after(() => agent.close());
  const t0 = Date.now();
  await assert.rejects(agent.waitReady(AbortSignal.timeout(60_000), Date.now() + 60_000), (e: unknown) => e instanceof AgentConnectionError && e.code === 'ERR_AMPHORA_IDENTITY');
  // Far below the deadline: it did not retry until the deadline.
  assert.ok(Date.now() - t0 < 30_000);
});

test('waitReady ends when the signal aborts', async (t) => {
  const port = await freePort();
  const agent = clientFor(`https://127.0.0.1:${port}`);
  t.after(() => agent.close());
  const controller = new AbortController();
  // Aborted while it retries: after an attempt nothing answered.
  void refusedOn(port).then(() => controller.abort(new Error('lease lost')));
  await assert.rejects(agent.waitReady(controller.signal, Date.now() + 30_000), /lease lost|aborted/);
});

test('the url must be https', () => {
  assert.throws(() => clientFor('http://127.0.0.1:9443'), /agent url must be https:\/\/…, got http:\/\/127\.0\.0\.1:9443/);
});

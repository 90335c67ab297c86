/**
 * The agent end to end on this machine: real HAProxy, real backends on 127.x, the controller's
 * CA and client (src/pki, src/amphora-client/client.ts) over mutual TLS, heartbeats over UDP.
 */
import { before, after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { connect } from 'node:tls';
import { request } from 'node:https';
import pino from 'pino';
import { CertificateAuthority } from '../pki/ca.js';
import { AgentClient, AgentHttpError } from '../amphora-client/client.js';
import type { AmphoraConfig } from '../domain/amphora-config.js';
import type { Heartbeat } from '../domain/amphora-config.js';
import { decodeHeartbeat } from './heartbeat.js';
import { ids, listener, listenerTls, loadBalancer, member, pool } from '../../test/support/render-fixtures.js';
import { collectBodies, eventually, loopbackAddress, prepareAmphora, randomPort, startBackend, tempDir, type Backend } from '../../test/support/amphora-fixtures.js';
import { startAgent, type RunningAgent } from './main.js';

const AMPHORA = ids.amphora(1);
const HEARTBEAT_KEY = 'integration-heartbeat-key';

interface Setup {
  dir: ReturnType<typeof tempDir>;
  ca: CertificateAuthority;
  management: string;
  agentPort: number;
  vip: string;
  port: number;
  backends: Backend[];
  heartbeats: Heartbeat[];
  heartbeatSocket: ReturnType<typeof createSocket>;
  agent: RunningAgent;
  client: AgentClient;
}

let s: Setup;
const silent = pino({ level: 'silent' });

async function clientFor(ca: CertificateAuthority, url: string): Promise<AgentClient> {
  const { certPem, keyPem } = await ca.controllerClientCert();
  return new AgentClient({ url, amphoraId: AMPHORA, serverCaPem: ca.serverCaPem, clientCertPem: certPem, clientKeyPem: keyPem, timeoutMs: 20_000 });
}

before(async () => {
  const dir = tempDir('agent');
  const heartbeats: Heartbeat[] = [];
  const heartbeatSocket = createSocket('udp4');
  await new Promise<void>((resolve) => heartbeatSocket.bind(0, '127.0.0.1', resolve));
  heartbeatSocket.on('message', (datagram: Buffer) => {
    const decoded = decodeHeartbeat(datagram, (id) => (id === AMPHORA ? HEARTBEAT_KEY : undefined));
    if ('heartbeat' in decoded) heartbeats.push(decoded.heartbeat);
  });
  const target = `127.0.0.1:${(heartbeatSocket.address() as AddressInfo).port}`;
  const { ca, boot } = await prepareAmphora(dir.path, AMPHORA, { key: HEARTBEAT_KEY, targets: [target], intervalMs: 100 });
  const agent = await startAgent(join(dir.path, AMPHORA), silent);
  const backends = [await startBackend('a'), await startBackend('b'), await startBackend('c')];
  const client = await clientFor(ca, agent.url);
  s = { dir, ca, management: boot.managementAddress, agentPort: boot.agentPort, vip: loopbackAddress(), port: randomPort(), backends, heartbeats, heartbeatSocket, agent, client };
});

after(async () => {
  s.client.close();
  await s.agent.stop();
  s.heartbeatSocket.close();
  for (const b of s.backends) await b.close();
  s.dir.remove();
});

/** Version `version` of one HTTP listener on the VIP, its pool holding `members`. */
function lbConfig(version: number, members: ReturnType<typeof member>[], overrides: Partial<AmphoraConfig> = {}): AmphoraConfig {
  return loadBalancer(1, {
    version,
    vip: { address: s.vip, additional: [] },
    listeners: [listener(1, { port: s.port, defaultPoolId: ids.pool(1) })],
    pools: [pool(1, { members })],
    ...overrides,
  });
}

const memberOn = (n: number, overrides: Partial<ReturnType<typeof member>> = {}) =>
  member(n, { address: s.backends[n - 1]!.address, port: s.backends[n - 1]!.port, ...overrides });

async function masterPid(): Promise<number> {
  const info = (await s.client.info()) as unknown as { haproxy: { masterPid: number } };
  return info.haproxy.masterPid;
}

async function answeredBy(count = 9): Promise<Set<string>> {
  return new Set(await collectBodies(s.vip, s.port, count));
}

async function status(promise: Promise<unknown>): Promise<{ status: number; message: string; details: string | null }> {
  try {
    await promise;
  } catch (e) {
    if (e instanceof AgentHttpError) return { status: e.status, message: e.agentMessage, details: e.details };
    throw e;
  }
  throw new Error('the agent accepted it');
}

test('before any push: info says version 0, there is no config, HAProxy is not running', async () => {
  const info = await s.client.info();
  assert.equal(info.amphoraId, AMPHORA);
  assert.equal(info.apiVersion, '1.0');
  assert.match(info.haproxyVersion, /^2\.6\./);
  assert.equal(info.configVersion, 0);
  assert.equal(info.vipHeld, null, 'no configuration: no VIPs to hold');
  assert.deepEqual(await status(s.client.getConfig()), { status: 404, message: 'no configuration applied yet', details: null });
});

test('the first config starts HAProxy; traffic through the VIP reaches both members', async () => {
  const config = lbConfig(1, [memberOn(1), memberOn(2)]);
  assert.deepEqual(await s.client.putConfig(config), { version: 1, applied: 'reload' });
  assert.deepEqual(await answeredBy(), new Set(['a', 'b']));
  assert.deepEqual(await s.client.getConfig(), config);
  assert.equal((await s.client.info()).configVersion, 1);
  // Held means an address of one of its interfaces (a netns amphora's VIP on eth1); a loopback VIP is served, not held.
  assert.equal((await s.client.info()).vipHeld, false);
  assert.deepEqual(await s.client.putConfig(config), { version: 1, applied: 'unchanged' });
});

test('member changes go through the runtime API: same HAProxy master, no reload', async () => {
  const master = await masterPid();
  assert.deepEqual(await s.client.putConfig(lbConfig(2, [memberOn(1), memberOn(2, { enabled: false })])), { version: 2, applied: 'runtime' });
  assert.deepEqual(await answeredBy(), new Set(['a']), 'the disabled member gets no traffic');

  assert.deepEqual(await s.client.putConfig(lbConfig(3, [memberOn(1), memberOn(2), memberOn(3)])), { version: 3, applied: 'runtime' });
  assert.deepEqual(await answeredBy(), new Set(['a', 'b', 'c']), 'the re-enabled and the added member take traffic');

  assert.deepEqual(await s.client.putConfig(lbConfig(4, [memberOn(1, { weight: 0 }), memberOn(3)])), { version: 4, applied: 'runtime' });
  assert.deepEqual(await answeredBy(), new Set(['c']), 'weight 0 drains, the removed member is gone');
  assert.equal(await masterPid(), master);

  const stats = (await s.client.stats()) as { listeners: Record<string, { status: string }>; pools: Record<string, { status: string; members: Record<string, string> }> };
  assert.equal(stats.listeners[ids.listener(1)]?.status, 'OPEN');
  assert.deepEqual(stats.pools[`${ids.pool(1)}:${ids.listener(1)}`]?.members, { [ids.member(1)]: 'DRAIN', [ids.member(3)]: 'no check' });
});

test('a later reload follows the file, which holds the runtime changes too', async () => {
  const master = await masterPid();
  const moved = lbConfig(5, [memberOn(1, { weight: 0 }), memberOn(3)], { listeners: [listener(1, { port: s.port, defaultPoolId: ids.pool(1), timeouts: { clientData: 20_000, memberConnect: 3000, memberData: 20_000, tcpInspect: 0 } })] });
  assert.deepEqual(await s.client.putConfig(moved), { version: 5, applied: 'reload' });
  assert.equal(await masterPid(), master, 'a master-worker reload keeps the master');
  assert.deepEqual(await answeredBy(), new Set(['c']));
});

test('a config haproxy -c refuses is a 400 with its output; the old config keeps serving', async () => {
  // Every value the API accepts renders into a config HAProxy takes: what it can still refuse is material, a certificate that is not one.
  const bad = lbConfig(6, [memberOn(1), memberOn(2)], {
    listeners: [listener(1, { protocol: 'TERMINATED_HTTPS', port: s.port, defaultPoolId: ids.pool(1), tls: listenerTls() })],
  });
  const refused = await status(s.client.putConfig(bad));
  assert.equal(refused.status, 400);
  assert.equal(refused.message, 'haproxy refused the configuration');
  assert.match(refused.details ?? '', /certificate/i);
  assert.equal((await s.client.info()).configVersion, 5);
  assert.deepEqual(await answeredBy(), new Set(['c']));
});

test('a config HAProxy cannot load (its port is taken) is a 500; the previous file and config keep serving', async (t) => {
  const blocker = createServer();
  const takenPort = randomPort();
  await new Promise<void>((resolve) => blocker.listen(takenPort, s.vip, resolve));
  t.after(() => blocker.close());
  const master = await masterPid();
  const before = readFileSync(join(s.dir.path, AMPHORA, 'haproxy.cfg'), 'utf8');
  const second = listener(2, { port: takenPort, defaultPoolId: ids.pool(1) });
  const current = (await s.client.getConfig()) as AmphoraConfig;
  const failed = await status(s.client.putConfig({ ...current, version: 6, listeners: [...current.listeners, second] }));
  assert.equal(failed.status, 500);
  assert.match(failed.message, /haproxy reload failed/);
  assert.match(failed.details ?? '', /cannot bind|Address already in use/i);
  assert.equal(readFileSync(join(s.dir.path, AMPHORA, 'haproxy.cfg'), 'utf8'), before);
  assert.equal((await s.client.info()).configVersion, 5);
  assert.equal(await masterPid(), master);
  assert.deepEqual(await answeredBy(), new Set(['c']));
});

test('older versions, another content under the applied version, another amphora and invalid bodies are refused', async () => {
  assert.deepEqual(await status(s.client.putConfig(lbConfig(3, [memberOn(1)]))), {
    status: 409,
    message: 'configuration version 3 is older than the applied version 5',
    details: null,
  });
  assert.equal((await status(s.client.putConfig(lbConfig(5, [memberOn(2)])))).status, 409);
  const foreign = { ...lbConfig(9, [memberOn(1)]), amphoraId: ids.amphora(2) };
  assert.equal((await status(s.client.putConfig(foreign))).status, 409);
  const invalid = await status(s.client.putConfig({ ...lbConfig(9, [memberOn(1)]), version: 0, extra: 1 } as unknown as AmphoraConfig));
  assert.equal(invalid.status, 400);
  assert.equal(invalid.message, 'invalid amphora configuration');
  assert.match(invalid.details ?? '', /\/version/);
  assert.equal((await s.client.info()).configVersion, 5);
});

test('without a client certificate of the controllers CA, the TLS handshake fails', async () => {
  const [host, port] = [s.management, s.agentPort];
  const attempt = (options: Record<string, unknown>) =>
    new Promise<string>((resolve) => {
      const req = request({ host, port, path: '/1.0/info', ca: s.ca.serverCaPem, servername: AMPHORA, ...options }, (res) => resolve(`answered ${res.statusCode}`));
      req.on('error', (e) => resolve(`refused: ${e.message}`));
      req.end();
    });
  assert.match(await attempt({}), /^refused/);
  const stranger = await CertificateAuthority.open(join(s.dir.path, 'other-pki'));
  const foreign = await stranger.controllerClientCert();
  assert.match(await attempt({ cert: foreign.certPem, key: foreign.keyPem }), /^refused/);
});

test('the agent certificate is rotated without a restart; a certificate for another amphora is refused', async () => {
  const serialSeen = () =>
    s.ca.controllerClientCert().then(
      ({ certPem, keyPem }) =>
        new Promise<string>((resolve, reject) => {
          const socket = connect({ host: s.management, port: s.agentPort, ca: s.ca.serverCaPem, cert: certPem, key: keyPem, servername: AMPHORA }, () => {
            resolve(socket.getPeerCertificate().serialNumber.toLowerCase());
            socket.end();
          });
          socket.on('error', reject);
        }),
    );
  const next = await s.ca.issueAmphoraCert(AMPHORA, s.management, 2);
  await s.client.putCertificate(next.certPem + next.keyPem);
  assert.equal((await serialSeen()).replace(/^0+/, ''), next.serial.replace(/^0+/, ''));

  const other = await s.ca.issueAmphoraCert(ids.amphora(2), s.management, 1);
  const refused = await status(s.client.putCertificate(other.certPem + other.keyPem));
  assert.equal(refused.status, 400);
  assert.match(refused.message, /does not name amphora/);
  const mismatched = await status(s.client.putCertificate(next.certPem + other.keyPem));
  assert.equal(mismatched.status, 400);
});

test('heartbeats carry the applied version and what HAProxy reports, seq increasing', async () => {
  const latest = (await eventually(() => s.heartbeats.find((hb) => hb.configVersion === 5 && hb.listeners[ids.listener(1)]), 'a heartbeat of version 5', 5000))!;
  assert.equal(latest.amphoraId, AMPHORA);
  assert.equal(latest.listeners[ids.listener(1)]!.status, 'OPEN');
  assert.equal(latest.pools[`${ids.pool(1)}:${ids.listener(1)}`]?.members[ids.member(3)], 'no check');
  const seqs = s.heartbeats.map((hb) => hb.seq);
  assert.equal(new Set(s.heartbeats.map((hb) => hb.epoch)).size, 1, 'one boot');
  assert.deepEqual(seqs, [...seqs].sort((x, y) => x - y));
  assert.equal(new Set(seqs).size, seqs.length);
});

test('a restarted agent serves its last config at once and starts a new heartbeat boot: a newer epoch, seq from 1', async () => {
  await s.agent.stop();
  s.client.close();
  assert.equal((await collectBodies(s.vip, s.port, 1))[0], '', 'stopping the agent stops HAProxy');
  const lastEpoch = Math.max(...s.heartbeats.map((hb) => hb.epoch));
  s.agent = await startAgent(join(s.dir.path, AMPHORA), silent);
  s.client = await clientFor(s.ca, s.agent.url);
  assert.equal((await s.client.info()).configVersion, 5);
  assert.deepEqual(await answeredBy(), new Set(['c']));
  const resumed = (await eventually(() => s.heartbeats.find((hb) => hb.epoch > lastEpoch), 'a heartbeat of the new agent', 5000))!;
  assert.equal(resumed.seq, 1);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { createHmac } from 'node:crypto';
import type { Heartbeat } from '../domain/amphora-config.js';
import { counterDeltas, decodeHeartbeat, encodeHeartbeat, HeartbeatSender, memberStatus, parseTarget, snapshotFromStats } from './heartbeat.js';
import type { StatRow } from './haproxy/runtime.js';
import { tempDir } from './testing.js';

const AMPHORA = '0a0a0a0a-0000-4000-8000-000000000001';
const LISTENER = '11111111-0000-4000-8000-000000000001';
const POOL = '22222222-0000-4000-8000-000000000001';
const MEMBER = (n: number) => `33333333-0000-4000-8000-00000000000${n}`;
const KEY = 'heartbeat-key-of-amphora-1';
const keys = (id: string) => (id === AMPHORA ? KEY : undefined);

const heartbeat: Heartbeat = {
  amphoraId: AMPHORA,
  seq: 42,
  sentAt: 1_700_000_000_000,
  configVersion: 3,
  listeners: { [LISTENER]: { status: 'OPEN', stats: { bytesIn: 10, bytesOut: 20, activeConnections: 1, totalConnections: 2, requestErrors: 0 } } },
  pools: { [`${POOL}:${LISTENER}`]: { status: 'UP', members: { [MEMBER(1)]: 'UP', [MEMBER(2)]: 'DRAIN' } } },
};

test('a heartbeat survives encode and decode; the datagram is deflate + 64 hex characters of HMAC', () => {
  const datagram = encodeHeartbeat(heartbeat, KEY);
  assert.deepEqual(decodeHeartbeat(datagram, keys), heartbeat);
  const mac = datagram.subarray(datagram.length - 64).toString('ascii');
  assert.match(mac, /^[0-9a-f]{64}$/);
  assert.equal(mac, createHmac('sha256', KEY).update(datagram.subarray(0, datagram.length - 64)).digest('hex'));
  assert.equal(datagram.includes(Buffer.from(KEY)), false, 'the key is never in the datagram');
});

test('tampered, truncated, wrongly keyed, unknown or malformed datagrams decode to null', () => {
  const datagram = encodeHeartbeat(heartbeat, KEY);
  const flipped = Buffer.from(datagram);
  flipped[5] = flipped[5]! ^ 0xff;
  assert.equal(decodeHeartbeat(flipped, keys), null, 'payload changed');
  const badMac = Buffer.from(datagram);
  badMac[badMac.length - 1] = badMac[badMac.length - 1] === 0x30 ? 0x31 : 0x30;
  assert.equal(decodeHeartbeat(badMac, keys), null, 'signature changed');
  assert.equal(decodeHeartbeat(datagram.subarray(0, datagram.length - 1), keys), null, 'truncated');
  assert.equal(decodeHeartbeat(Buffer.alloc(0), keys), null, 'empty');
  assert.equal(decodeHeartbeat(encodeHeartbeat(heartbeat, 'another key'), keys), null, 'wrong key');
  assert.equal(decodeHeartbeat(datagram, () => undefined), null, 'unknown amphora');
  const signed = (value: unknown) => {
    const body = deflateSync(JSON.stringify(value));
    return Buffer.concat([body, Buffer.from(createHmac('sha256', KEY).update(body).digest('hex'))]);
  };
  assert.equal(decodeHeartbeat(signed({ ...heartbeat, seq: -1 }), keys), null, 'signed but not a Heartbeat');
  assert.equal(decodeHeartbeat(signed({ ...heartbeat, extra: true }), keys), null, 'unknown attribute');
});

function row(overrides: Partial<StatRow>): StatRow {
  return { pxname: '', svname: '', type: 'server', status: '', scur: 0, slim: null, stot: 0, bin: 0, bout: 0, ereq: 0, econ: 0, eresp: 0, weight: null, act: null, bck: null, check_status: '', addr: '', ...overrides };
}

test('stats rows map to listener, pool and member ids; other proxies are ignored', () => {
  const backend = `${POOL}:${LISTENER}`;
  const snapshot = snapshotFromStats([
    row({ pxname: LISTENER, svname: 'FRONTEND', type: 'frontend', status: 'OPEN', scur: 3, stot: 9, bin: 100, bout: 200, ereq: 1 }),
    row({ pxname: backend, svname: MEMBER(1), status: 'UP', weight: 1 }),
    row({ pxname: backend, svname: MEMBER(2), status: 'UP 1/3', weight: 0 }),
    row({ pxname: backend, svname: MEMBER(3), status: 'DOWN 1/2', weight: 1 }),
    row({ pxname: backend, svname: MEMBER(4), status: 'MAINT', weight: 1 }),
    row({ pxname: backend, svname: MEMBER(5), status: 'no check', weight: 1 }),
    row({ pxname: backend, svname: 'BACKEND', type: 'backend', status: 'UP', weight: 4 }),
    row({ pxname: 'stats', svname: 'FRONTEND', type: 'frontend', status: 'OPEN' }),
    row({ pxname: 'MASTER', svname: 'FRONTEND', type: 'frontend', status: 'OPEN' }),
  ]);
  assert.deepEqual(snapshot, {
    listeners: { [LISTENER]: { status: 'OPEN', stats: { bytesIn: 100, bytesOut: 200, activeConnections: 3, totalConnections: 9, requestErrors: 1 } } },
    pools: { [backend]: { status: 'UP', members: { [MEMBER(1)]: 'UP', [MEMBER(2)]: 'DRAIN', [MEMBER(3)]: 'DOWN', [MEMBER(4)]: 'MAINT', [MEMBER(5)]: 'no check' } } },
  });
  assert.equal(memberStatus({ status: 'NOLB', weight: 1 }), 'DRAIN');
  assert.equal(memberStatus({ status: 'no check', weight: 0 }), 'DRAIN');
  assert.equal(memberStatus({ status: 'DRAIN', weight: 1 }), 'DRAIN');
});

test('counter deltas: differences, current connections absolute, a counter that went down restarts from its value', () => {
  const before = { a: { bytesIn: 100, bytesOut: 50, activeConnections: 5, totalConnections: 10, requestErrors: 1 } };
  const now = {
    a: { bytesIn: 150, bytesOut: 20, activeConnections: 2, totalConnections: 12, requestErrors: 1 },
    b: { bytesIn: 7, bytesOut: 8, activeConnections: 1, totalConnections: 1, requestErrors: 0 },
  };
  assert.deepEqual(counterDeltas(now, before), {
    a: { bytesIn: 50, bytesOut: 20, activeConnections: 2, totalConnections: 2, requestErrors: 0 },
    b: now.b,
  });
});

test('targets are host:port, IPv6 in brackets', () => {
  assert.deepEqual(parseTarget('127.0.0.1:5555'), { host: '127.0.0.1', port: 5555, family: 'udp4' });
  assert.deepEqual(parseTarget('[::1]:5555'), { host: '::1', port: 5555, family: 'udp6' });
  assert.throws(() => parseTarget('127.0.0.1'), /not host:port/);
  assert.throws(() => parseTarget('127.0.0.1:70000'), /not host:port/);
});

async function receiver(): Promise<{ socket: Socket; target: string; next(): Promise<Buffer> }> {
  const socket = createSocket('udp4');
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  const { port } = socket.address() as AddressInfo;
  return { socket, target: `127.0.0.1:${port}`, next: async () => ((await once(socket, 'message')) as [Buffer])[0] };
}

test('the sender signs real datagrams, round robin over its targets, and keeps seq and counters across restarts', async (t) => {
  const dir = tempDir('heartbeat');
  const [first, second] = [await receiver(), await receiver()];
  t.after(() => {
    first.socket.close();
    second.socket.close();
    dir.remove();
  });
  let stats: StatRow[] | null = [row({ pxname: LISTENER, svname: 'FRONTEND', type: 'frontend', status: 'OPEN', scur: 1, stot: 5, bin: 500, bout: 900 })];
  const sender = () =>
    new HeartbeatSender({
      amphoraId: AMPHORA,
      key: KEY,
      targets: [first.target, second.target],
      intervalMs: 60_000,
      stateFile: join(dir.path, 'heartbeat-state.json'),
      readStats: async () => stats,
      configVersion: () => 3,
      log: { warn: () => undefined },
    });

  const one = sender();
  const arrivals = [first.next(), second.next()];
  const sent1 = await one.beat();
  const sent2 = await one.beat();
  const [got1, got2] = await Promise.all(arrivals);
  assert.deepEqual(decodeHeartbeat(got1!, keys), sent1);
  assert.deepEqual(decodeHeartbeat(got2!, keys), sent2);
  assert.deepEqual([sent1.seq, sent2.seq], [1, 2]);
  assert.equal(sent1.listeners[LISTENER]!.stats.bytesIn, 500, 'first report: everything so far');
  assert.equal(sent2.listeners[LISTENER]!.stats.bytesIn, 0, 'nothing new since');
  one.stop();

  stats![0] = { ...stats![0]!, bin: 800 };
  const restarted = sender();
  const sent3 = await restarted.beat();
  assert.equal(sent3.seq, 3, 'a restarted agent continues above the last seq');
  assert.equal(sent3.listeners[LISTENER]!.stats.bytesIn, 300, 'and does not count twice');

  stats = null;
  const down = await restarted.beat();
  assert.deepEqual(down.listeners, {}, 'HAProxy down: no listener is reported');
  assert.equal(down.seq, 4);
  restarted.stop();
});

test('start sends the first heartbeat at once and then every interval until stop', async (t) => {
  const dir = tempDir('heartbeat');
  const target = await receiver();
  t.after(() => {
    target.socket.close();
    dir.remove();
  });
  const sender = new HeartbeatSender({
    amphoraId: AMPHORA,
    key: KEY,
    targets: [target.target],
    intervalMs: 30,
    stateFile: join(dir.path, 'state.json'),
    readStats: async () => null,
    configVersion: () => 0,
    log: { warn: () => undefined },
  });
  const seqs: number[] = [];
  target.socket.on('message', (m: Buffer) => seqs.push(decodeHeartbeat(m, keys)!.seq));
  const started = Date.now();
  sender.start();
  while (seqs.length < 3 && Date.now() - started < 5000) await once(target.socket, 'message');
  sender.stop();
  assert.deepEqual(seqs.slice(0, 3), [1, 2, 3]);
  assert.ok(Date.now() - started >= 60, 'two intervals passed between the first and the third');
});

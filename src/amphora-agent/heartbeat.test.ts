import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket, type Socket } from 'node:dgram';
import { once } from 'node:events';
import { syncBuiltinESMExports } from 'node:module';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { statSync } from 'node:fs';
import zlib, { deflateSync } from 'node:zlib';
import { createHmac } from 'node:crypto';
import type { Heartbeat } from '../domain/amphora-config.js';
import { writeFileAtomically } from './atomic-file.js';
import { counterDeltas, decodeHeartbeat, DEFLATE_FROM_BYTES, encodeHeartbeat, HeartbeatSender, MAX_INFLATED_BYTES, memberStatus, parseTarget, snapshotFromStats, type Decoded } from './heartbeat.js';
import type { StatRow } from './haproxy/runtime.js';
import { tempDir } from '../../test/support/amphora-fixtures.js';

const AMPHORA = '0a0a0a0a-0000-4000-8000-000000000001';
const LISTENER = '11111111-0000-4000-8000-000000000001';
const POOL = '22222222-0000-4000-8000-000000000001';
const MEMBER = (n: number) => `33333333-0000-4000-8000-00000000000${n}`;
const KEY = 'heartbeat-key-of-amphora-1';
const keys = (id: string) => (id === AMPHORA ? KEY : undefined);

const heartbeat: Heartbeat = {
  amphoraId: AMPHORA,
  epoch: 1_699_999_000_000,
  seq: 42,
  sentAt: 1_700_000_000_000,
  configVersion: 3,
  listeners: { [LISTENER]: { status: 'OPEN', stats: { bytesIn: 10, bytesOut: 20, activeConnections: 1, totalConnections: 2, requestErrors: 0 } } },
  pools: { [`${POOL}:${LISTENER}`]: { status: 'UP', members: { [MEMBER(1)]: 'UP', [MEMBER(2)]: 'DRAIN' } } },
};

/** The heartbeat in a decoded datagram; fails with the refusal otherwise. */
function opened(decoded: Decoded): Heartbeat {
  assert.ok('heartbeat' in decoded, `refused: ${JSON.stringify(decoded)}`);
  return decoded.heartbeat;
}

interface Crafted {
  version?: number;
  seq?: bigint;
  body?: Buffer;
  inflatedLength?: number;
  key?: string;
}

/** A datagram built by hand from the layout the module comment documents, signed with `key`. */
function craft({ version = 2, seq = 1n, body = deflateSync(JSON.stringify({ configVersion: 0, listeners: {}, pools: {} })), inflatedLength, key = KEY }: Crafted = {}): Buffer {
  const header = Buffer.alloc(52);
  header.write('OHB', 0, 'latin1');
  header[3] = version;
  Buffer.from(AMPHORA.replaceAll('-', ''), 'hex').copy(header, 4);
  header.writeBigUInt64BE(1_700_000_000_000n, 20);
  header.writeBigUInt64BE(seq, 28);
  header.writeBigUInt64BE(1_700_000_000_500n, 36);
  header.writeUInt32BE(body.length, 44);
  header.writeUInt32BE(inflatedLength ?? zlib.inflateSync(body).length, 48);
  return Buffer.concat([header, createHmac('sha256', key).update(header).update(body).digest(), body]);
}

test('a heartbeat survives encode and decode; the datagram is the documented header, its HMAC and the report, as it is', () => {
  const datagram = encodeHeartbeat(heartbeat, KEY);
  assert.deepEqual(opened(decodeHeartbeat(datagram, keys)), heartbeat);
  assert.equal(datagram.toString('latin1', 0, 4), 'OHB\x02');
  assert.equal(datagram.toString('hex', 4, 20), AMPHORA.replaceAll('-', ''));
  assert.deepEqual([20, 28, 36].map((o) => Number(datagram.readBigUInt64BE(o))), [heartbeat.epoch, heartbeat.seq, heartbeat.sentAt]);
  assert.equal(datagram.readUInt32BE(44), datagram.length - 84);
  const body = datagram.subarray(84);
  const { amphoraId, epoch, seq, sentAt, ...report } = heartbeat;
  assert.deepEqual(JSON.parse(body.toString()), report, 'a report under DEFLATE_FROM_BYTES is not deflated');
  assert.equal(datagram.readUInt32BE(48), body.length);
  assert.deepEqual(datagram.subarray(52, 84), createHmac('sha256', KEY).update(datagram.subarray(0, 52)).update(body).digest());
  assert.equal(datagram.includes(Buffer.from(KEY)), false, 'the key is never in the datagram');
  assert.deepEqual(opened(decodeHeartbeat(craft(), keys)).seq, 1, 'a datagram built from the documented layout decodes');
});

test("a large amphora's report is deflated, and decodes", () => {
  const uuid = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
  const members = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [uuid(i), 'UP']));
  const big: Heartbeat = { ...heartbeat, pools: { [`${uuid(100)}:${uuid(101)}`]: { status: 'UP', members } } };
  const datagram = encodeHeartbeat(big, KEY);
  const { amphoraId, epoch, seq, sentAt, ...report } = big;
  const json = JSON.stringify(report);
  assert.ok(json.length >= DEFLATE_FROM_BYTES);
  assert.equal(datagram.readUInt32BE(48), json.length);
  assert.ok(datagram.length - 84 < json.length, 'deflated');
  assert.deepEqual(JSON.parse(zlib.inflateSync(datagram.subarray(84)).toString()), report);
  assert.deepEqual(opened(decodeHeartbeat(datagram, keys)), big);
});

test('tampered, truncated, wrongly keyed, unknown or malformed datagrams are refused, each for its reason', () => {
  const datagram = encodeHeartbeat(heartbeat, KEY);
  const flip = (at: number) => {
    const copy = Buffer.from(datagram);
    copy[at] = copy[at]! ^ 0xff;
    return copy;
  };
  const refusal = (d: Buffer, keyFor = keys) => decodeHeartbeat(d, keyFor);
  assert.deepEqual(refusal(flip(datagram.length - 3)), { refused: 'badMac' }, 'body changed');
  assert.deepEqual(refusal(flip(30)), { refused: 'badMac' }, 'seq changed');
  assert.deepEqual(refusal(flip(60)), { refused: 'badMac' }, 'MAC changed');
  assert.deepEqual(refusal(encodeHeartbeat(heartbeat, 'another key')), { refused: 'badMac' }, 'wrong key');
  assert.deepEqual(refusal(datagram, () => undefined), { refused: 'unknownAmphora' });
  assert.deepEqual(refusal(datagram.subarray(0, datagram.length - 1)), { refused: 'malformed' }, 'truncated: the length no longer matches');
  assert.deepEqual(refusal(Buffer.alloc(0)), { refused: 'malformed' }, 'empty');
  assert.deepEqual(refusal(Buffer.from('not a heartbeat, though long enough to hold a header and a MAC of 32 bytes')), { refused: 'malformed' });
  assert.deepEqual(refusal(craft({ version: 3 })), { refused: 'malformed' }, 'another version');
  assert.deepEqual(refusal(craft({ seq: 0n })), { refused: 'malformed' }, 'seq starts at 1');
  assert.deepEqual(refusal(craft({ seq: 2n ** 53n })), { refused: 'malformed' }, 'seq beyond a safe integer');
  const report = (value: unknown) => craft({ body: deflateSync(JSON.stringify(value)) });
  assert.deepEqual(refusal(report({ configVersion: -1, listeners: {}, pools: {} })), { refused: 'malformed' }, 'signed but not a report');
  assert.deepEqual(refusal(report({ configVersion: 0, listeners: {}, pools: {}, seq: 5 })), { refused: 'malformed' }, 'unknown attribute');
  assert.deepEqual(refusal(craft({ body: Buffer.from('not deflate'), inflatedLength: 10 })), { refused: 'malformed' }, 'signed but not deflate');
  assert.deepEqual(refusal(craft({ body: Buffer.from('{"configVersion": 0,'), inflatedLength: 20 })), { refused: 'malformed' }, 'signed, as it is, but not JSON');
  const raw = Buffer.from(JSON.stringify({ configVersion: 0, listeners: {}, pools: {} }));
  assert.deepEqual(refusal(craft({ body: raw, inflatedLength: raw.length + 1 })), { refused: 'malformed' }, 'as it is, but not the length its header says');
  assert.equal(opened(refusal(craft({ body: raw, inflatedLength: raw.length }))).configVersion, 0, 'as it is, signed, the length its header says');
  assert.deepEqual(refusal(craft({ inflatedLength: 5 })), { refused: 'oversize' }, 'inflates beyond what its header says');
});

test('the MAC, the size and the replay judgement come before any inflating: a zip bomb costs one HMAC', (t) => {
  let inflated = 0;
  const real = zlib.inflateSync;
  mock.method(zlib, 'inflateSync', (...args: Parameters<typeof real>) => {
    inflated++;
    return real(...args);
  });
  syncBuiltinESMExports();
  t.after(() => {
    mock.restoreAll();
    syncBuiltinESMExports();
  });
  // 64 MiB of zeros deflate to 64 KiB: a body that would inflate far beyond the cap.
  const bomb = deflateSync(Buffer.alloc(64 * 1024 * 1024));
  assert.deepEqual(decodeHeartbeat(craft({ body: bomb, inflatedLength: 100, key: 'not the key' }), keys), { refused: 'badMac' });
  assert.deepEqual(decodeHeartbeat(craft({ body: Buffer.from('garbage, not even deflate'), inflatedLength: 100, key: 'forger' }), keys), { refused: 'badMac' }, 'inflated first, it would be malformed');
  assert.deepEqual(decodeHeartbeat(craft({ body: bomb, inflatedLength: MAX_INFLATED_BYTES + 1 }), keys), { refused: 'oversize' }, 'signed, but declares more than the cap');
  assert.deepEqual(decodeHeartbeat(encodeHeartbeat(heartbeat, KEY), keys, () => 'replay'), { refused: 'replay' });
  assert.equal(inflated, 0, 'nothing was inflated');
  assert.deepEqual(decodeHeartbeat(craft({ body: bomb, inflatedLength: 100 }), keys), { refused: 'oversize' }, 'signed, declared small: inflating stops at the declared size');
  assert.equal(inflated, 1);
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

test('the sender signs real datagrams, round robin over its targets; a restart is a new boot that does not count twice', async (t) => {
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
  const written = statSync(join(dir.path, 'heartbeat-state.json')).ino;
  const sent2 = await one.beat();
  assert.equal(statSync(join(dir.path, 'heartbeat-state.json')).ino, written, 'counters unchanged: the state file is not rewritten');
  const [got1, got2] = await Promise.all(arrivals);
  assert.deepEqual(opened(decodeHeartbeat(got1!, keys)), sent1);
  assert.deepEqual(opened(decodeHeartbeat(got2!, keys)), sent2);
  assert.deepEqual([sent1.seq, sent2.seq], [1, 2]);
  assert.equal(sent1.epoch, sent2.epoch);
  assert.equal(sent1.listeners[LISTENER]!.stats.bytesIn, 500, 'first report: everything so far');
  assert.equal(sent2.listeners[LISTENER]!.stats.bytesIn, 0, 'nothing new since');
  one.stop();

  stats![0] = { ...stats![0]!, bin: 800 };
  const restarted = sender();
  const sent3 = await restarted.beat();
  assert.equal(sent3.seq, 1, 'a restarted agent numbers its heartbeats afresh');
  assert.ok(sent3.epoch > sent1.epoch, 'in a newer boot epoch');
  assert.equal(sent3.listeners[LISTENER]!.stats.bytesIn, 300, 'and does not count twice');

  stats = null;
  const down = await restarted.beat();
  assert.deepEqual(down.listeners, {}, 'HAProxy down: no listener is reported');
  assert.equal(down.seq, 2);
  restarted.stop();

  // A clock that went back does not make a boot look older than the last one.
  writeFileAtomically(join(dir.path, 'heartbeat-state.json'), JSON.stringify({ epoch: Date.now() + 3_600_000, seq: 9, counters: {} }));
  const future = sender();
  const next = await future.beat();
  assert.ok(next.epoch > Date.now() + 3_500_000 && next.seq === 1, 'the epoch after the stored one');
  future.stop();
});

test('start sends the first heartbeat at once and then every interval until stop', async (t) => {
  const dir = tempDir('heartbeat');
  const target = await receiver();
  t.after(() => {
    target.socket.close();
    dir.remove();
  });
  // The sender's clock is the test's: a heartbeat falls due when the test moves it an interval on,
  // never because the machine was slow, and each one says when by that clock (sentAt).
  t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: Date.now() });
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
  const sent: Heartbeat[] = [];
  target.socket.on('message', (m: Buffer) => sent.push(opened(decodeHeartbeat(m, keys))));
  sender.start();
  // A millisecond of the test's clock a step, with the real datagrams delivered in between.
  for (let step = 0; sent.length < 3; step++) {
    assert.ok(step < 10_000, `${sent.length} heartbeats after ${step} ms of the test's clock`);
    await new Promise((resolve) => setImmediate(resolve));
    t.mock.timers.tick(1);
  }
  sender.stop();
  assert.deepEqual(sent.slice(0, 3).map((h) => h.seq), [1, 2, 3]);
  assert.ok(sent[2]!.sentAt - sent[0]!.sentAt >= 60, 'two intervals passed between the first and the third');
});

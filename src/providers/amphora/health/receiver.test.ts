/**
 * The health manager on a real UDP socket: signed datagrams from encodeHeartbeat (the
 * amphora's own sender code), real SQLite, the API reading what it wrote.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { readerA, TEST_HEARTBEAT_SECRET, type Harness } from '../../../../test/support/harness.js';
import { amphoraRow, insertAmphora } from '../../../../test/support/health-rows.js';
import type { Heartbeat } from '../../../domain/amphora-config.js';
import { encodeHeartbeat } from '../../../amphora-agent/heartbeat.js';
import { HeartbeatReceiver, type AcceptedHeartbeat } from './receiver.js';
import { EPOCH, eventually, key, report, send, silent, traffic, world } from '../../../../test/support/heartbeat-receiver.js';

const operating = async (h: Harness, table: 'load_balancer' | 'listener' | 'pool' | 'member', id: string) =>
  (await h.runtime.db.kysely.selectFrom(table).select('operating_status').where('id', '=', id).executeTakeFirstOrThrow()).operating_status;

test('a signed heartbeat updates liveness, operating statuses and statistics; the API serves them', async (t) => {
  const w = await world(t);
  const amp = await insertAmphora(w.h, w.lb.id, { last_heartbeat_at: null });
  const before = Date.now();
  await send(w.port, encodeHeartbeat(report(w, amp.id, 1), key(amp.id)));
  const row = await eventually('amphora liveness', () => amphoraRow(w.h, amp.id), (r) => r?.last_heartbeat_seq === 1);
  assert.ok(row!.last_heartbeat_at! >= before);

  assert.equal(await operating(w.h, 'member', w.memberIds[0]!), 'ONLINE');
  assert.equal(await operating(w.h, 'member', w.memberIds[1]!), 'ERROR');
  assert.equal(await operating(w.h, 'pool', w.poolId), 'DEGRADED');
  assert.equal(await operating(w.h, 'listener', w.listenerId), 'ONLINE');
  assert.equal(await operating(w.h, 'load_balancer', w.lb.id), 'DEGRADED');
  const tree = (await w.h.request('GET', `/v2/lbaas/loadbalancers/${w.lb.id}/status`, { as: readerA })).json().statuses.loadbalancer;
  assert.equal(tree.operating_status, 'DEGRADED');
  assert.equal(tree.listeners[0].pools[0].members.find((m: { id: string }) => m.id === w.memberIds[1]).operating_status, 'ERROR');

  // The next report: counters add up, active connections are the newest figure, statuses recover.
  await send(w.port, encodeHeartbeat(report(w, amp.id, 2, { pools: { [w.poolId]: { status: 'UP', members: { [w.memberIds[0]!]: 'UP', [w.memberIds[1]!]: 'UP' } } }, listeners: { [w.listenerId]: { status: 'OPEN', stats: { ...traffic, activeConnections: 7 } } } }), key(amp.id)));
  await eventually('second report', () => amphoraRow(w.h, amp.id), (r) => r?.last_heartbeat_seq === 2);
  const stats = (await w.h.request('GET', `/v2/lbaas/listeners/${w.listenerId}/stats`, { as: readerA })).json();
  assert.deepEqual(stats, { stats: { bytes_in: 200, bytes_out: 4000, active_connections: 7, total_connections: 10, request_errors: 2 } });
  assert.deepEqual((await w.h.request('GET', `/v2/lbaas/loadbalancers/${w.lb.id}/stats`, { as: readerA })).json(), stats);
  assert.equal(await operating(w.h, 'load_balancer', w.lb.id), 'ONLINE');
  assert.equal(await operating(w.h, 'pool', w.poolId), 'ONLINE');
  const counters = w.manager.counters();
  assert.deepEqual([counters.received, counters.accepted, Object.values(counters.refused).every((n) => n === 0)], [2, 2, true]);
});

test('replays, stale or future-dated reports, wrong keys, garbage and unknown amphorae are refused and counted by reason', async (t) => {
  const w = await world(t);
  const amp = await insertAmphora(w.h, w.lb.id);
  const first = encodeHeartbeat(report(w, amp.id, 5), key(amp.id));
  await send(w.port, first);
  await eventually('first report', () => amphoraRow(w.h, amp.id), (r) => r?.last_heartbeat_seq === 5);

  await send(w.port, first); // the same datagram again
  await send(w.port, encodeHeartbeat(report(w, amp.id, 4), key(amp.id))); // out of order, but new: accepted once
  await send(w.port, encodeHeartbeat(report(w, amp.id, 4), key(amp.id))); // and only once
  await send(w.port, encodeHeartbeat(report(w, amp.id, 3, { epoch: EPOCH - 1 }), key(amp.id))); // an older boot
  await send(w.port, encodeHeartbeat(report(w, amp.id, 11, { sentAt: Date.now() - 60_000 }), key(amp.id)));
  await send(w.port, encodeHeartbeat(report(w, amp.id, 12, { sentAt: Date.now() + 60_000 }), key(amp.id)));
  await send(w.port, encodeHeartbeat(report(w, amp.id, 13), randomBytes(32).toString('hex'))); // signed by another key
  await send(w.port, Buffer.from('not a heartbeat'));
  await send(w.port, encodeHeartbeat(report(w, randomUUID(), 1), key(randomUUID()))); // another amphora's key
  const unknownId = randomUUID();
  await send(w.port, encodeHeartbeat(report(w, unknownId, 1), key(unknownId))); // signed right, but no such amphora
  const counters = await eventually('counters', () => w.manager.counters(), (c) => c.received === 11 && c.refused.unknownAmphora === 1);
  assert.deepEqual({ accepted: counters.accepted, ...counters.refused }, { accepted: 3, replay: 3, stale: 2, badMac: 2, malformed: 1, oversize: 0, unknownAmphora: 1 });
  // An unknown amphora is counted once its batch is written, after every batch before it: the rows hold these reports.
  assert.equal((await amphoraRow(w.h, amp.id))!.last_heartbeat_seq, 4, 'the out-of-order one was written last; nothing refused reached the database');
  await send(w.port, encodeHeartbeat(report(w, amp.id, 6), key(amp.id)));
  await eventually('accepted again', () => amphoraRow(w.h, amp.id), (r) => r?.last_heartbeat_seq === 6);
});

test('a restarted health manager keeps no state: the first fresh heartbeat is accepted; an agent restart (a newer epoch) is too', async (t) => {
  const w = await world(t);
  const amp = await insertAmphora(w.h, w.lb.id, { last_heartbeat_seq: 500 });
  await send(w.port, encodeHeartbeat(report(w, amp.id, 7), key(amp.id)));
  await eventually('first heartbeat accepted', () => amphoraRow(w.h, amp.id), (r) => r?.last_heartbeat_seq === 7);
  await send(w.port, encodeHeartbeat(report(w, amp.id, 1, { epoch: Date.now() }), key(amp.id)));
  await eventually('new boot accepted', () => amphoraRow(w.h, amp.id), (r) => r?.last_heartbeat_seq === 1);
  assert.equal(w.manager.counters().accepted, 2);
});

test('a FAILOVER_STOPPED amphora whose heartbeats resume is ALLOCATED again', async (t) => {
  const w = await world(t);
  const amp = await insertAmphora(w.h, w.lb.id, { status: 'FAILOVER_STOPPED', status_reason: 'failover suspended by the circuit breaker: …', last_heartbeat_at: 1 });
  await send(w.port, encodeHeartbeat(report(w, amp.id, 1), key(amp.id)));
  const row = await eventually('back to ALLOCATED', () => amphoraRow(w.h, amp.id), (r) => r?.status === 'ALLOCATED');
  assert.equal(row!.status_reason, null);
  assert.ok(row!.last_heartbeat_at! > 1);
});

test('a report missing an enabled listener marks it ERROR and does not count as a sign of life', async (t) => {
  const w = await world(t);
  const amp = await insertAmphora(w.h, w.lb.id, { last_heartbeat_at: 1 });
  await send(w.port, encodeHeartbeat(report(w, amp.id, 1, { listeners: {} }), key(amp.id)));
  const row = await eventually('sequence recorded', () => amphoraRow(w.h, amp.id), (r) => r?.last_heartbeat_seq === 1);
  assert.equal(row!.last_heartbeat_at, 1);
  assert.equal(await operating(w.h, 'listener', w.listenerId), 'ERROR');
  assert.equal(w.manager.counters().incompleteReports, 1);
});

test('a report older than the configuration its amphora was seen to apply proves life and changes no status', async (t) => {
  const w = await world(t);
  // The controller saw this amphora apply version 3 (the job settled); a report of version 2, sent just before, arrives now.
  const amp = await insertAmphora(w.h, w.lb.id, { last_heartbeat_at: 1, config_version: 3 });
  await send(w.port, encodeHeartbeat(report(w, amp.id, 1, { configVersion: 2, listeners: {} }), key(amp.id)));
  const row = await eventually('sequence recorded', () => amphoraRow(w.h, amp.id), (r) => r?.last_heartbeat_seq === 1);
  assert.ok(row!.last_heartbeat_at! > 1, 'it is alive');
  assert.deepEqual([await operating(w.h, 'member', w.memberIds[1]!), await operating(w.h, 'listener', w.listenerId)], ['NO_MONITOR', 'ONLINE']);
  await send(w.port, encodeHeartbeat(report(w, amp.id, 2, { configVersion: 3 }), key(amp.id)));
  await eventually('the current report counts', () => operating(w.h, 'member', w.memberIds[1]!), (s) => s === 'ERROR');
});

test('a DELETED amphora proves nothing: its reports change no row', async (t) => {
  const w = await world(t);
  const amp = await insertAmphora(w.h, w.lb.id, { status: 'DELETED', last_heartbeat_at: 1 });
  await send(w.port, encodeHeartbeat(report(w, amp.id, 1), key(amp.id)));
  await eventually('unknown', () => w.manager.counters().refused.unknownAmphora, (n) => n === 1);
  assert.deepEqual([(await amphoraRow(w.h, amp.id))!.last_heartbeat_at, await operating(w.h, 'member', w.memberIds[1]!)], [1, 'NO_MONITOR']);
});

test('a slow database never blocks the socket: the queue keeps the newest reports and counts what it drops', async () => {
  const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
  let release!: () => void;
  const blocked = new Promise<void>((r) => (release = r));
  const written: AcceptedHeartbeat[][] = [];
  const receiver = new HeartbeatReceiver({
    listen: '127.0.0.1:0',
    heartbeatSecret: TEST_HEARTBEAT_SECRET,
    maxSkewMs: 3000,
    flushMs: 10,
    maxPending: 2,
    write: async (batch) => {
      written.push(batch);
      if (written.length === 1) await blocked;
      return { unknown: [] };
    },
    log: silent,
  });
  const { port } = await receiver.start();
  try {
    const hb = (id: string, seq: number): Heartbeat => ({ amphoraId: id, epoch: EPOCH, seq, sentAt: Date.now(), configVersion: 0, listeners: { l: { status: 'OPEN', stats: traffic } }, pools: {} });
    await send(port, encodeHeartbeat(hb(a, 1), key(a)));
    await eventually('first write started', () => written.length, (n) => n === 1);
    // The write is stuck: these queue up; a third amphora pushes the one reported longest ago out.
    for (const [id, seq] of [[b, 1], [b, 2], [c, 1], [a, 2]] as const) await send(port, encodeHeartbeat(hb(id, seq), key(id)));
    await eventually('all received', () => receiver.counters.accepted, (n) => n === 5);
    await eventually('the drop is reported', () => receiver.counters.overflowDropped, (n) => n === 1);
    assert.equal(receiver.healthySince(3000), false, 'the stale detector must hold back');
    release();
    await eventually('second write', () => written.length, (n) => n === 2);
    assert.deepEqual(written[1]!.map((x) => [x.heartbeat.amphoraId, x.heartbeat.seq]), [[c, 1], [a, 2]]);
  } finally {
    release();
    await receiver.close();
  }
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startHarness, admin, memberA, memberB, readerA, type Harness } from '../../../../test/support/harness.js';
import { activeLoadBalancer, seedListener, type SeededLb } from '../../../../test/support/seed-rows.js';
import { insertAmphora } from '../../../../test/support/health-rows.js';
import { addDelta, writeStats, type StatsDelta } from './stats.js';

let h: Harness;
let lb: SeededLb;
before(async () => {
  h = await startHarness();
  lb = await activeLoadBalancer(h);
});
after(() => h.close());

const delta = (n: number, active = n): StatsDelta => ({ bytesIn: n * 100, bytesOut: n * 1000, activeConnections: active, totalConnections: n * 10, requestErrors: n });
const write = (listenerId: string, amphoraId: string, d: StatsDelta) => writeStats(h.runtime.db.kysely, [{ listenerId, amphoraId, delta: d }], Date.now());

test('addDelta sums counters, replaces active connections and ignores negative deltas', () => {
  const sum = addDelta(addDelta(undefined, delta(1, 7)), { ...delta(2, 3), bytesIn: -50 });
  assert.deepEqual(sum, { bytesIn: 100, bytesOut: 3000, activeConnections: 3, totalConnections: 30, requestErrors: 3 });
});

test('listener, load balancer and amphora stats are sums of the stored deltas; zeros before any report', async () => {
  const l1 = await seedListener(h, lb, 'HTTP', 80);
  const l2 = await seedListener(h, lb, 'TCP', 81);
  const amp = await insertAmphora(h, lb.id);
  const old = await insertAmphora(h, lb.id, { status: 'DELETED' });
  const zeros = { bytes_in: 0, bytes_out: 0, active_connections: 0, total_connections: 0, request_errors: 0 };
  assert.deepEqual((await h.request('GET', `/v2/lbaas/listeners/${l1}/stats`, { as: readerA })).json(), { stats: zeros });

  await write(l1, amp.id, delta(1, 5));
  await write(l1, amp.id, delta(2, 4)); // accumulates; active connections replaced
  await write(l1, old.id, delta(3, 0)); // a failed-over amphora's history still counts
  await write(l2, amp.id, delta(1, 1));

  const listenerStats = await h.request('GET', `/v2/lbaas/listeners/${l1}/stats`, { as: readerA });
  assert.equal(listenerStats.statusCode, 200);
  assert.deepEqual(listenerStats.json(), { stats: { bytes_in: 600, bytes_out: 6000, active_connections: 4, total_connections: 60, request_errors: 6 } });

  const lbStats = await h.request('GET', `/v2/lbaas/loadbalancers/${lb.id}/stats`, { as: memberA });
  assert.deepEqual(lbStats.json(), { stats: { bytes_in: 700, bytes_out: 7000, active_connections: 5, total_connections: 70, request_errors: 7 } });

  const ampStats = await h.request('GET', `/v2/octavia/amphorae/${amp.id}/stats`, { as: admin });
  assert.equal(ampStats.statusCode, 200);
  const rows = [
    { id: amp.id, listener_id: l1, loadbalancer_id: lb.id, active_connections: 4, bytes_in: 300, bytes_out: 3000, request_errors: 3, total_connections: 30 },
    { id: amp.id, listener_id: l2, loadbalancer_id: lb.id, active_connections: 1, bytes_in: 100, bytes_out: 1000, request_errors: 1, total_connections: 10 },
  ].sort((a, b) => a.listener_id.localeCompare(b.listener_id));
  assert.deepEqual(ampStats.json(), { amphora_stats: rows });
});

test('stats endpoints keep their RBAC and 404s', async () => {
  const l = await seedListener(h, lb, 'HTTP', 90);
  assert.equal((await h.request('GET', `/v2/lbaas/listeners/${l}/stats`, { as: memberB })).statusCode, 403);
  assert.equal((await h.request('GET', `/v2/lbaas/loadbalancers/${lb.id}/stats`, { as: memberB })).statusCode, 403);
  const missing = randomUUID();
  const r = await h.request('GET', `/v2/lbaas/listeners/${missing}/stats`, { as: readerA });
  assert.equal(r.statusCode, 404);
  assert.equal(r.json().faultstring, `Listener ${missing} not found.`);
  const amp = await insertAmphora(h, lb.id);
  await write(l, amp.id, delta(1));
  assert.equal((await h.request('GET', `/v2/octavia/amphorae/${amp.id}/stats`, { as: memberA })).statusCode, 403);
});

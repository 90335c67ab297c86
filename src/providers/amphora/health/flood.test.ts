/**
 * A flood of forged and replayed datagrams at the health port of an in-process Ostia: the
 * amphora's genuine heartbeats are still accepted, so it stays ONLINE and is not failed over,
 * and the flood shows where an operator looks: /metrics and one warning in the log.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { amphoraRow, insertAmphora } from '../../../../test/support/health-rows.js';
import { eventually, floodWhileBeating, refusalsInMetrics, world } from '../../../../test/support/heartbeat-receiver.js';

/** Longer than the heartbeat timeout (3 s) plus the detector's grace after start: silence would be failed over. */
const FLOOD_MS = 5000;
const FORGED_PER_SECOND = 2000;

test('under a flood of forged datagrams genuine heartbeats keep the amphora ONLINE; nothing is failed over; the flood shows in /metrics and the log', async (t) => {
  const lines: string[] = [];
  const log = pino({ level: 'warn' }, new Writable({ write: (chunk, _enc, done) => done(void lines.push(String(chunk))) }));
  const w = await world(t, log);
  const amp = await insertAmphora(w.h, w.lb.id);
  const sent = await floodWhileBeating(w, amp.id, FLOOD_MS, FORGED_PER_SECOND);
  const counters = await eventually('every genuine heartbeat judged', () => w.manager.counters(), (c) => c.accepted >= sent.genuineSent);

  assert.equal(counters.accepted, sent.genuineSent, 'every genuine heartbeat was accepted, none lost');
  const refused = Object.values(counters.refused).reduce((a, b) => a + b, 0);
  assert.ok(refused >= sent.forgedSent * 0.9, `${refused} of ${sent.forgedSent} forged datagrams refused`);
  assert.deepEqual([counters.overflowDropped, counters.socketDropped, counters.failoversTriggered], [0, 0, 0]);
  const row = (await amphoraRow(w.h, amp.id))!;
  assert.equal(row.status, 'ALLOCATED');
  assert.ok(Date.now() - row.last_heartbeat_at! < w.h.config.amphora.heartbeatTimeoutMs, 'alive as far as the stale detector can see');
  const lb = (await w.h.request('GET', `/v2/lbaas/loadbalancers/${w.lb.id}`)).json().loadbalancer;
  assert.deepEqual([lb.provisioning_status, lb.operating_status], ['ACTIVE', 'ONLINE']);
  const failovers = await w.h.runtime.db.kysely.selectFrom('job').select('id').where('operation', '=', 'amphora.failover').execute();
  assert.equal(failovers.length, 0);

  const metrics = await refusalsInMetrics(w.h);
  assert.ok(metrics.bad_mac! > 0 && metrics.malformed! > 0 && metrics.replay! > 0, JSON.stringify(metrics));
  // The receiving thread's snapshots keep coming while the last forged datagrams are judged: /metrics
  // shows the counters of a moment between the two reads.
  const later = w.manager.counters().refused.badMac;
  assert.ok(metrics.bad_mac! >= counters.refused.badMac && metrics.bad_mac! <= later, `${metrics.bad_mac} bad-MAC refusals in /metrics, ${counters.refused.badMac}..${later} counted`);
  const warnings = lines.filter((l) => l.includes('refused in bulk'));
  assert.equal(warnings.length, 1, 'one warning, not one per datagram');
  assert.match(warnings[0]!, /"refusedPerSecond":\d+/);
});

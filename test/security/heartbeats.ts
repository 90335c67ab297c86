/**
 * Security cases of the heartbeat receiver, against a real one (worker thread, UDP socket,
 * database): forgeries and a zip bomb without the key, replays of captured datagrams, a
 * hostile sequence number and stale or future-dated heartbeats from a key holder, and a flood
 * during which the amphora's genuine heartbeats must still be accepted. Each case asserts as
 * it goes and records its outcomes in the tally under `heartbeats`.
 */
import assert from 'node:assert/strict';
import { encodeHeartbeat } from '../../src/amphora-agent/heartbeat.js';
import { eventually, floodWhileBeating, healthyReport, key, send, world, type World } from '../support/heartbeat-receiver.js';
import type { HealthCounters } from '../../src/providers/amphora/health/index.js';
import { forgedDatagrams } from '../support/heartbeat-flood.js';
import { amphoraRow, insertAmphora } from '../support/health-rows.js';
import type { Tally } from './tally.js';

const AREA = 'heartbeats';
const FORGERIES_PER_KIND = 25;
const FLOOD_MS = 4000;
const FORGED_PER_SECOND = 1000;

export async function heartbeatCases(tally: Tally): Promise<void> {
  const cleanups: Array<() => Promise<void>> = [];
  try {
    const w = await world({ after: (fn) => void cleanups.push(fn) });
    const amp = await insertAmphora(w.h, w.lb.id);
    const epoch = Date.now() - 1000;
    const genuine = (seq: number, patch: { epoch?: number; sentAt?: number } = {}) =>
      encodeHeartbeat({ ...healthyReport(w, amp.id, patch.epoch ?? epoch, seq), ...(patch.sentAt !== undefined && { sentAt: patch.sentAt }) }, key(amp.id));
    let seq = 0;
    const accepted = async (what: string) => {
      const before = w.manager.counters().accepted;
      await send(w.port, genuine(++seq));
      await eventually(`${what}: the genuine heartbeat ${seq} accepted`, () => w.manager.counters().accepted, (n) => n === before + 1);
      await eventually(`${what}: and written`, () => amphoraRow(w.h, amp.id), (r) => r?.last_heartbeat_seq === seq);
      tally.record(AREA, 'genuine accepted');
    };
    await accepted('at first');

    // Without the key: every kind of forgery, many of each.
    const forged = Array.from({ length: FORGERIES_PER_KIND }, () => forgedDatagrams(amp.id)).flat();
    await refusedAll(w, forged, (c) => c.refused.badMac + c.refused.malformed);
    tally.record(AREA, 'forged refused', forged.length);
    await accepted('after forgeries');

    // Captured and sent again.
    const captured = genuine(seq);
    const replays = Array.from({ length: FORGERIES_PER_KIND }, () => captured);
    await refusedAll(w, replays, (c) => c.refused.replay);
    tally.record(AREA, 'replay refused', replays.length);

    // A key holder's hostile values: the greatest sequence number, an epoch or a time far off.
    const hostile = [genuine(Number.MAX_SAFE_INTEGER), genuine(seq + 1, { epoch: Date.now() + 3_600_000 }), genuine(seq + 1, { sentAt: Date.now() - 3_600_000 }), genuine(seq + 1, { sentAt: Date.now() + 3_600_000 })];
    await refusedAll(w, hostile, (c) => c.refused.replay + c.refused.stale);
    tally.record(AREA, 'hostile sequence or time refused', hostile.length);
    await accepted('after a hostile sequence number');

    // An agent restart: a new epoch, numbered from 1 again.
    const before = w.manager.counters().accepted;
    await send(w.port, genuine(1, { epoch: Date.now() }));
    await eventually('a new boot accepted', () => w.manager.counters().accepted, (n) => n === before + 1);
    tally.record(AREA, 'new boot accepted');

    // A flood, with genuine heartbeats (of yet another boot) arriving all along.
    const beforeFlood = w.manager.counters();
    const flood = await floodWhileBeating(w, amp.id, FLOOD_MS, FORGED_PER_SECOND);
    const afterFlood = await eventually('every genuine heartbeat of the flood accepted', () => w.manager.counters(), (c) => c.accepted - beforeFlood.accepted === flood.genuineSent);
    assert.ok(countAll(afterFlood) - countAll(beforeFlood) >= flood.forgedSent * 0.9, 'the forged ones refused');
    const row = (await amphoraRow(w.h, amp.id))!;
    assert.ok(Date.now() - row.last_heartbeat_at! < w.h.config.amphora.heartbeatTimeoutMs, 'genuine heartbeats kept it alive during the flood');
    // Counted from the flood's start: on a loaded machine the stages before it may outlast the short timeout between two genuine heartbeats.
    assert.equal(afterFlood.failoversTriggered - beforeFlood.failoversTriggered, 0, 'nothing was failed over during the flood');
    tally.record(AREA, 'forged refused during flood', flood.forgedSent);
    tally.record(AREA, 'genuine accepted during flood', flood.genuineSent);
    assert.equal(w.manager.counters().refused.unknownAmphora, 0, 'no forgery got as far as the database');
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup();
  }
}

function countAll(c: HealthCounters): number {
  return Object.values(c.refused).reduce((a, b) => a + b, 0);
}

/** Sends every datagram and waits until `refusals` grew by as many; nothing is accepted meanwhile. */
async function refusedAll(w: World, datagrams: readonly Buffer[], refusals: (c: HealthCounters) => number): Promise<void> {
  const before = w.manager.counters();
  for (const datagram of datagrams) await send(w.port, datagram);
  await eventually(`${datagrams.length} refused`, () => w.manager.counters(), (c) => refusals(c) - refusals(before) === datagrams.length);
  assert.equal(w.manager.counters().accepted, before.accepted, 'none accepted');
}

/**
 * Heartbeat forgery on the real UDP socket — a minimal stand-in that the heartbeat helper's
 * fuller module (forgery, replay and flood cases) replaces. A datagram signed with another key,
 * one from an amphora nobody knows, and a replay of an accepted one are each dropped and counted,
 * and none reaches the amphora's row.
 */
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { randomBytes, randomUUID } from 'node:crypto';
import pino from 'pino';
import type { Heartbeat } from '../../src/domain/amphora-config.js';
import { encodeHeartbeat } from '../../src/amphora/heartbeat.js';
import { heartbeatKey } from '../../src/amphora/heartbeat-key.js';
import { freeUdpPort } from '../../src/amphora/testing.js';
import { HealthManager, type HealthCounters } from '../../src/health/index.js';
import { startHarness, TEST_HEARTBEAT_SECRET } from '../support/harness.js';
import { activeLoadBalancer } from '../support/seed-rows.js';
import { amphoraRow, insertAmphora } from '../support/health-rows.js';
import type { Tally } from './tally.js';

const AREA = 'heartbeats';

async function send(port: number, datagram: Buffer): Promise<void> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve, reject) => socket.send(datagram, port, '127.0.0.1', (err) => (err ? reject(err) : resolve())));
  socket.close();
}

async function until<T>(what: string, probe: () => T | Promise<T>, ok: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const v = await probe();
    if (ok(v)) return v;
    assert.ok(Date.now() < deadline, `${what}: still ${JSON.stringify(v)} after 15 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function heartbeatCases(tally: Tally): Promise<void> {
  const h = await startHarness({ amphora: { healthListen: `127.0.0.1:${await freeUdpPort()}`, heartbeatIntervalMs: 100, heartbeatTimeoutMs: 60_000 } });
  const manager = new HealthManager({ db: h.runtime.db, config: h.config, jobs: h.runtime.deps.jobs, providers: h.runtime.deps.providers, log: pino({ level: 'silent' }) });
  try {
    const { port } = await manager.start();
    const lb = await activeLoadBalancer(h);
    const amp = await insertAmphora(h, lb.id, { last_heartbeat_at: 1 });
    const report = (amphoraId: string, seq: number): Heartbeat => ({ amphoraId, seq, sentAt: Date.now(), configVersion: 0, listeners: {}, pools: {} });
    const genuine = encodeHeartbeat(report(amp.id, 5), heartbeatKey(TEST_HEARTBEAT_SECRET, amp.id));
    await send(port, genuine);
    await until('the genuine report written', () => amphoraRow(h, amp.id), (row) => row?.last_heartbeat_seq === 5);

    const cases: Array<[string, Buffer, keyof HealthCounters]> = [
      ['refused: signed with another key', encodeHeartbeat(report(amp.id, 6), randomBytes(32).toString('hex')), 'rejected'],
      ['refused: unknown amphora', encodeHeartbeat(report(randomUUID(), 1), heartbeatKey(TEST_HEARTBEAT_SECRET, randomUUID())), 'unknownAmphora'],
      ['refused: replay', genuine, 'replayed'],
    ];
    for (const [outcome, datagram, counter] of cases) {
      const before = manager.counters()[counter];
      await send(port, datagram);
      await until(outcome, () => manager.counters()[counter], (n) => n === before + 1);
      tally.record(AREA, outcome);
    }
    assert.equal(manager.counters().accepted, 1, 'a forged or replayed report was accepted');
    assert.equal((await amphoraRow(h, amp.id))?.last_heartbeat_seq, 5, 'the amphora row moved past the genuine report');
  } finally {
    await manager.close();
    await h.close();
  }
}

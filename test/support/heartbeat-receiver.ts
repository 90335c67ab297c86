/**
 * A health manager on a real UDP socket beside an in-process Ostia (real SQLite), an ACTIVE
 * load balancer to report on, and signed heartbeats from encodeHeartbeat (the amphora's own
 * sender code): what the receiver, flood and security tests share.
 */
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import pino, { type Logger } from 'pino';
import { admin, startHarness, TEST_HEARTBEAT_SECRET, type Harness } from './harness.js';
import { activeLoadBalancer, seedListener, seedPool, type SeededLb } from './seed-rows.js';
import { MEMBER_SUBNET_ID } from '../../src/config.js';
import type { Heartbeat } from '../../src/domain/amphora-config.js';
import { freeUdpPort } from './amphora-fixtures.js';
import { heartbeatKey } from '../../src/providers/amphora/heartbeat-key.js';
import { encodeHeartbeat } from '../../src/amphora-agent/heartbeat.js';
import { flood, forgedDatagrams } from './heartbeat-flood.js';
import { HealthManager } from '../../src/providers/amphora/health/index.js';
import { enqueue } from '../../src/controller/jobs.js';

export const silent = pino({ level: 'silent' });
export const key = (amphoraId: string) => heartbeatKey(TEST_HEARTBEAT_SECRET, amphoraId);

export async function send(port: number, datagram: Buffer): Promise<void> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve, reject) => socket.send(datagram, port, '127.0.0.1', (err) => (err ? reject(err) : resolve())));
  socket.close();
}

export async function eventually<T>(what: string, probe: () => Promise<T> | T, ok: (v: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export interface World {
  h: Harness;
  manager: HealthManager;
  port: number;
  lb: SeededLb;
  listenerId: string;
  poolId: string;
  memberIds: string[];
}

/** An ACTIVE LB with one listener, one pool and two members, and a health manager on a free port. */
export async function world(t: { after(fn: () => Promise<void>): void }, log: Logger = silent): Promise<World> {
  const h = await startHarness({ amphora: { healthListen: `127.0.0.1:${await freeUdpPort()}`, heartbeatIntervalMs: 100, heartbeatTimeoutMs: 3000 } });
  const manager = new HealthManager({ db: h.runtime.db, config: h.config, jobs: h.runtime.deps.jobs, enqueue, providers: h.runtime.deps.providers, log, metrics: h.runtime.deps.metrics });
  t.after(async () => {
    await manager.close();
    await h.close();
  });
  const { port } = await manager.start();
  const lb = await activeLoadBalancer(h);
  const poolId = await seedPool(h, lb, 'HTTP');
  const listenerId = await seedListener(h, lb, 'HTTP', 80, poolId);
  const memberIds: string[] = [];
  for (const address of ['127.32.0.11', '127.32.0.12']) {
    const r = await h.request('POST', `/v2/lbaas/pools/${poolId}/members`, { body: { member: { address, protocol_port: 8080, subnet_id: MEMBER_SUBNET_ID } } });
    assert.equal(r.statusCode, 201, r.body);
    memberIds.push(r.json().member.id);
    await h.settled(lb.id);
  }
  return { h, manager, port, lb, listenerId, poolId, memberIds };
}

export const traffic = { bytesIn: 100, bytesOut: 2000, activeConnections: 3, totalConnections: 5, requestErrors: 1 };

/** One boot of every amphora in these tests: a second ago. */
export const EPOCH = Date.now() - 1000;

export function report(w: World, amphoraId: string, seq: number, patch: Partial<Heartbeat> = {}): Heartbeat {
  return {
    amphoraId,
    epoch: EPOCH,
    seq,
    sentAt: Date.now(),
    configVersion: 0,
    listeners: { [w.listenerId]: { status: 'OPEN', stats: traffic } },
    pools: { [w.poolId]: { status: 'UP', members: { [w.memberIds[0]!]: 'UP', [w.memberIds[1]!]: 'DOWN' } } },
    ...patch,
  };
}


/** Reports with every member UP: the load balancer they describe is ONLINE. */
export function healthyReport(w: World, amphoraId: string, epoch: number, seq: number): Heartbeat {
  return report(w, amphoraId, seq, { epoch, pools: { [w.poolId]: { status: 'UP', members: Object.fromEntries(w.memberIds.map((id) => [id, 'UP'])) } } });
}

export interface FloodOutcome {
  genuineSent: number;
  forgedSent: number;
}

/**
 * For `ms`, the amphora sends a healthy heartbeat every heartbeat interval (100 ms in world())
 * while forged datagrams, and replays of its own, arrive at `forgedPerSecond`.
 */
export async function floodWhileBeating(w: World, amphoraId: string, ms: number, forgedPerSecond: number): Promise<FloodOutcome> {
  const epoch = Date.now();
  const socket = createSocket('udp4');
  const target = `127.0.0.1:${w.port}`;
  let seq = 0;
  const beat = () => {
    const datagram = encodeHeartbeat(healthyReport(w, amphoraId, epoch, ++seq), key(amphoraId));
    socket.send(datagram, w.port, '127.0.0.1');
    return datagram;
  };
  const flooder = flood(target, forgedPerSecond, forgedDatagrams(amphoraId, [beat()]));
  const timer = setInterval(beat, w.h.config.amphora.heartbeatIntervalMs);
  await new Promise((r) => setTimeout(r, ms));
  clearInterval(timer);
  const forgedSent = await flooder.stop();
  await new Promise<void>((resolve) => socket.close(() => resolve()));
  return { genuineSent: seq, forgedSent };
}

/** `ostia_heartbeats_refused_total` by reason, as `GET /metrics` serves it to an admin. */
export async function refusalsInMetrics(h: Harness): Promise<Record<string, number>> {
  const r = await h.request('GET', '/metrics', { as: admin });
  assert.equal(r.statusCode, 200, r.body);
  const found = [...r.body.matchAll(/^ostia_heartbeats_refused_total\{reason="(\w+)"\} (\d+)$/gm)];
  return Object.fromEntries(found.map((m) => [m[1]!, Number(m[2])]));
}

import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { startHarness, type Harness } from '../../../../test/support/harness.js';
import { activeLoadBalancer } from '../../../../test/support/seed-rows.js';
import { amphoraRow, insertAmphora } from '../../../../test/support/health-rows.js';
import { timestamp } from '../../../domain/time.js';
import { StaleDetector, type StaleDetectorOptions } from './stale.js';
import { MAX_FAILOVER_BACKOFF_MS, failoverMemories, nextFailoverAt, rememberFailure, type FailureKind } from '../../../db/failover-memory.js';
import { enqueue } from '../../../controller/jobs.js';
import type { AmphoraRow } from '../../../db/records/amphora.js';

const TIMEOUT = 3000;

interface Setup {
  h: Harness;
  clock: { now: number };
  detector(opts?: Partial<StaleDetectorOptions>): StaleDetector;
  failoverJobs(): Promise<Array<{ load_balancer_id: string; amphora_id: string; state: string; id: string }>>;
  lbStatus(id: string): Promise<string | undefined>;
}

/** A harness whose worker is stopped, so the failover jobs the detector enqueues stay visible. */
async function setup(t: { after(fn: () => Promise<void>): void }): Promise<Setup> {
  const h = await startHarness();
  t.after(() => h.close());
  const clock = { now: Date.now() };
  return {
    h,
    clock,
    detector: (opts = {}) =>
      new StaleDetector({
        db: h.runtime.db,
        jobs: h.runtime.deps.jobs,
        enqueue,
        providers: h.runtime.deps.providers,
        log: pino({ level: 'silent' }),
        timeoutMs: TIMEOUT,
        maxConcurrentFailovers: 2,
        circuitBreakerFraction: 0.5,
        now: () => clock.now,
        ...opts,
      }),
    async failoverJobs() {
      const rows = await h.runtime.db.kysely.selectFrom('job').select(['id', 'load_balancer_id', 'payload', 'state']).where('operation', '=', 'amphora.failover').orderBy('created_at').execute();
      return rows.map((r) => ({ id: r.id, load_balancer_id: r.load_balancer_id, state: r.state, amphora_id: (JSON.parse(r.payload) as { amphora_id: string }).amphora_id }));
    },
    async lbStatus(id) {
      return (await h.runtime.db.kysely.selectFrom('load_balancer').select('provisioning_status').where('id', '=', id).executeTakeFirst())?.provisioning_status;
    },
  };
}

/** LBs settled ACTIVE by the worker, which is then stopped. */
async function loadBalancers(s: Setup, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await activeLoadBalancer(s.h)).id);
  await s.h.runtime.worker!.close();
  return ids;
}

/** One load balancer whose one amphora fell silent past the timeout, and the detector's first check, which fails it over. */
async function oneFailedOver(s: Awaited<ReturnType<typeof setup>>) {
  const [lb] = await loadBalancers(s, 1);
  const detector = s.detector();
  s.clock.now += TIMEOUT;
  const amphora = await insertAmphora(s.h, lb!, { last_heartbeat_at: s.clock.now - 10_000 });
  assert.deepEqual(await detector.check(), { kind: 'checked', silent: [amphora.id], triggered: [amphora.id] });
  return { lb: lb!, detector, amphora };
}

test('nothing happens during the first heartbeat timeout after start', async (t) => {
  const s = await setup(t);
  const [lb] = await loadBalancers(s, 1);
  await insertAmphora(s.h, lb!, { last_heartbeat_at: s.clock.now - 60_000 });
  const detector = s.detector();
  s.clock.now += TIMEOUT - 1;
  assert.deepEqual(await detector.check(), { kind: 'grace' });
  assert.deepEqual(await s.failoverJobs(), []);
  s.clock.now += 1;
  assert.equal((await detector.check()).kind, 'checked');
  assert.equal((await s.failoverJobs()).length, 1);
});

test('a silent amphora is failed over: LB PENDING_UPDATE, one amphora.failover job, the reason recorded', async (t) => {
  const s = await setup(t);
  const [lb, other] = await loadBalancers(s, 2);
  const detector = s.detector();
  s.clock.now += TIMEOUT;
  const silent = await insertAmphora(s.h, lb!, { last_heartbeat_at: s.clock.now - TIMEOUT - 500 });
  const fresh = await insertAmphora(s.h, other!, { last_heartbeat_at: s.clock.now - 100 });
  const outcome = await detector.check();
  assert.deepEqual(outcome, { kind: 'checked', silent: [silent.id], triggered: [silent.id] });
  assert.deepEqual((await s.failoverJobs()).map((j) => [j.load_balancer_id, j.amphora_id, j.state]), [[lb, silent.id, 'queued']]);
  assert.equal(await s.lbStatus(lb!), 'PENDING_UPDATE');
  assert.equal(await s.lbStatus(other!), 'ACTIVE');
  assert.equal((await amphoraRow(s.h, silent.id))!.status_reason, 'no heartbeat for 3.5 s');
  assert.equal((await amphoraRow(s.h, fresh.id))!.status_reason, null);
  // The job keeps the reason and who queued it, for the failover history (GET /v2/ostia/failovers).
  const [job] = await s.h.runtime.db.kysely.selectFrom('job').select('payload').where('operation', '=', 'amphora.failover').execute();
  assert.deepEqual(JSON.parse(job!.payload), { amphora_id: silent.id, reason: 'no heartbeat for 3.5 s', automatic: true });
  // Its LB is now pending: the next run does not fail it over twice.
  assert.deepEqual(await detector.check(), { kind: 'checked', silent: [silent.id], triggered: [] });
  assert.equal((await s.failoverJobs()).length, 1);
});

test('an amphora never heard from is stale once it has been what it is for a timeout', async (t) => {
  const s = await setup(t);
  const [old, recent] = await loadBalancers(s, 2);
  const detector = s.detector();
  s.clock.now += TIMEOUT;
  const silent = await insertAmphora(s.h, old!, { last_heartbeat_at: null, created_at: timestamp(new Date(s.clock.now - 60_000)) });
  await insertAmphora(s.h, recent!, { last_heartbeat_at: null, created_at: timestamp(new Date(s.clock.now - 60_000)), updated_at: timestamp(new Date(s.clock.now)) });
  assert.deepEqual(await detector.check(), { kind: 'checked', silent: [silent.id], triggered: [silent.id] });
  assert.equal((await amphoraRow(s.h, silent.id))!.status_reason, 'no heartbeat ever received');
});

test('circuit breaker: when more than the fraction is silent, they are FAILOVER_STOPPED and nothing is failed over', async (t) => {
  const s = await setup(t);
  const lbs = await loadBalancers(s, 4);
  const detector = s.detector();
  s.clock.now += TIMEOUT;
  const silent = [];
  for (const lb of lbs.slice(0, 3)) silent.push(await insertAmphora(s.h, lb, { last_heartbeat_at: s.clock.now - 10_000 }));
  const alive = await insertAmphora(s.h, lbs[3]!, { last_heartbeat_at: s.clock.now });
  const outcome = await detector.check();
  assert.equal(outcome.kind, 'circuit-open');
  assert.deepEqual(outcome.kind === 'circuit-open' && [outcome.silent.length, outcome.total], [3, 4]);
  assert.deepEqual(await s.failoverJobs(), []);
  for (const a of silent) {
    const row = (await amphoraRow(s.h, a.id))!;
    assert.equal(row.status, 'FAILOVER_STOPPED');
    assert.equal(row.status_reason, 'failover suspended by the circuit breaker: 3 of 4 load balancers have a silent amphora (more than 50%)');
  }
  assert.equal((await amphoraRow(s.h, alive.id))!.status, 'ALLOCATED');
  for (const lb of lbs) assert.equal(await s.lbStatus(lb), 'ACTIVE');

  // Two come back (the receiver flips them to ALLOCATED): 1 of 4 is below the fraction, and it is failed over.
  for (const a of silent.slice(0, 2))
    await s.h.runtime.db.kysely.updateTable('amphora').set({ status: 'ALLOCATED', status_reason: null, last_heartbeat_at: s.clock.now }).where('id', '=', a.id).execute();
  assert.deepEqual(await detector.check(), { kind: 'checked', silent: [silent[2]!.id], triggered: [silent[2]!.id] });
});

test('a single silent amphora never opens the circuit, even when it is the only one', async (t) => {
  const s = await setup(t);
  await oneFailedOver(s);
});

test('never more than maxConcurrentFailovers queued or running at once', async (t) => {
  const s = await setup(t);
  const lbs = await loadBalancers(s, 8);
  const detector = s.detector({ maxConcurrentFailovers: 2 });
  s.clock.now += TIMEOUT;
  const silent = [];
  for (const lb of lbs.slice(0, 3)) silent.push(await insertAmphora(s.h, lb, { last_heartbeat_at: s.clock.now - 10_000 - silent.length }));
  for (const lb of lbs.slice(3)) await insertAmphora(s.h, lb, { last_heartbeat_at: s.clock.now });

  const first = await detector.check();
  assert.equal(first.kind === 'checked' && first.triggered.length, 2);
  // The most silent first.
  assert.deepEqual(first.kind === 'checked' && first.triggered, [silent[2]!.id, silent[1]!.id]);
  assert.deepEqual(await detector.check(), { kind: 'checked', silent: silent.map((a) => a.id).reverse(), triggered: [] });

  const [done] = await s.failoverJobs();
  await s.h.runtime.db.kysely.updateTable('job').set({ state: 'done' }).where('id', '=', done!.id).execute();
  const third = await detector.check();
  assert.deepEqual(third.kind === 'checked' && third.triggered, [silent[0]!.id]);
  assert.equal((await s.failoverJobs()).filter((j) => j.state === 'queued').length, 2);
});

test('amphorae in ERROR are failed over too', async (t) => {
  const s = await setup(t);
  const [lb] = await loadBalancers(s, 1);
  const detector = s.detector();
  s.clock.now += TIMEOUT;
  const broken = await insertAmphora(s.h, lb!, { status: 'ERROR', last_heartbeat_at: s.clock.now });
  assert.deepEqual(await detector.check(), { kind: 'checked', silent: [], triggered: [broken.id] });
  assert.equal((await amphoraRow(s.h, broken.id))!.status_reason, 'failover of an amphora in ERROR');
  assert.equal(await s.lbStatus(lb!), 'PENDING_UPDATE');
});

/** What a failed failover job leaves (flows.ts failFailover): the job failed, its amphora and the LB in ERROR, the LB's memory. */
async function failoverFailed(s: Setup, lb: string, kind: FailureKind): Promise<AmphoraRow> {
  const db = s.h.runtime.db.kysely;
  await db.updateTable('job').set({ state: 'failed' }).where('state', 'in', ['queued', 'running']).execute();
  await db.updateTable('load_balancer').set({ provisioning_status: 'ERROR' }).where('id', '=', lb).execute();
  await rememberFailure(db, lb, kind, s.clock.now);
  return insertAmphora(s.h, lb, { status: 'ERROR', last_heartbeat_at: null });
}

test('failed failovers back off per load balancer, across the amphorae that replace each other', async (t) => {
  const s = await setup(t);
  const { lb, detector, amphora: old } = await oneFailedOver(s);

  // The replacement failed (boot, agent): neither the still silent amphora nor the new one in ERROR is failed over before 2 timeouts.
  await failoverFailed(s, lb, 'infrastructure');
  s.clock.now += 2 * TIMEOUT - 1;
  assert.deepEqual(await detector.check(), { kind: 'checked', silent: [old.id], triggered: [] });
  s.clock.now += 1;
  assert.deepEqual(await detector.check(), { kind: 'checked', silent: [old.id], triggered: [old.id] });

  // Failed again: 4 timeouts; a restarted health manager remembers it.
  await failoverFailed(s, lb, 'infrastructure');
  const restarted = s.detector();
  assert.deepEqual(await restarted.check(), { kind: 'grace' });
  s.clock.now += 4 * TIMEOUT - 1;
  assert.deepEqual(await restarted.check(), { kind: 'checked', silent: [old.id], triggered: [] });
  s.clock.now += 1;
  assert.deepEqual(await restarted.check(), { kind: 'checked', silent: [old.id], triggered: [old.id] });
  assert.equal((await s.failoverJobs()).length, 3);
});

test('the back-off between failed failovers is bounded', () => {
  const memory = { load_balancer_id: 'lb', kind: 'infrastructure' as const, failed_at: 1_000, failures: 1 };
  assert.equal(nextFailoverAt(memory, TIMEOUT), 1_000 + 2 * TIMEOUT);
  assert.equal(nextFailoverAt({ ...memory, failures: 3 }, TIMEOUT), 1_000 + 8 * TIMEOUT);
  assert.equal(nextFailoverAt({ ...memory, failures: 5000 }, TIMEOUT), 1_000 + MAX_FAILOVER_BACKOFF_MS);
  assert.equal(nextFailoverAt({ ...memory, kind: 'configuration' }, TIMEOUT), Infinity);
  assert.equal(nextFailoverAt(undefined, TIMEOUT), 0);
});

test('a failover that failed on configuration is not retried until a job is enqueued for the load balancer by anyone else', async (t) => {
  const s = await setup(t);
  const { lb, detector, amphora: old } = await oneFailedOver(s);
  const refused = await failoverFailed(s, lb, 'configuration');

  s.clock.now += 24 * 3600_000;
  assert.deepEqual(await detector.check(), { kind: 'checked', silent: [old.id], triggered: [] });
  assert.deepEqual(await s.detector().check(), { kind: 'grace' });

  // Its owner changes something (or an operator fails it over): the memory is gone and the detector acts again.
  const db = s.h.runtime.db.kysely;
  await enqueue(db, { loadBalancerId: lb, provider: 'amphora', operation: 'loadbalancer.update' });
  await db.updateTable('job').set({ state: 'failed' }).where('operation', '=', 'loadbalancer.update').execute();
  assert.equal((await failoverMemories(db)).size, 0);
  const outcome = await detector.check();
  assert.deepEqual(outcome.kind === 'checked' && outcome.triggered.length, 1, 'one failover at a time per load balancer');
  assert.ok(outcome.kind === 'checked' && [old.id, refused.id].includes(outcome.triggered[0]!));
  assert.equal((await s.failoverJobs()).length, 2);
});

test('the health manager\'s own failovers do not lift the memory', async (t) => {
  const s = await setup(t);
  const [lb] = await loadBalancers(s, 1);
  const db = s.h.runtime.db.kysely;
  await rememberFailure(db, lb!, 'configuration');
  await enqueue(db, { loadBalancerId: lb!, provider: 'amphora', operation: 'amphora.failover', payload: { amphora_id: 'x' }, automatic: true });
  assert.equal((await failoverMemories(db)).get(lb!)?.kind, 'configuration');
});

test('the circuit breaker counts load balancers, and leaves out those stopped on configuration', async (t) => {
  const s = await setup(t);
  const [pair, stopped, other] = await loadBalancers(s, 3);
  const detector = s.detector();
  s.clock.now += TIMEOUT;
  // Both amphorae of one load balancer are silent: one fault, not two (2 of 3 amphorae would open the circuit).
  const master = await insertAmphora(s.h, pair!, { role: 'MASTER', last_heartbeat_at: s.clock.now - 10_000 });
  const backup = await insertAmphora(s.h, pair!, { role: 'BACKUP', last_heartbeat_at: s.clock.now - 10_000 });
  await insertAmphora(s.h, other!, { last_heartbeat_at: s.clock.now });
  let outcome = await detector.check();
  assert.equal(outcome.kind, 'checked');
  assert.deepEqual(outcome.kind === 'checked' && outcome.triggered.length, 1);
  assert.ok(outcome.kind === 'checked' && [master.id, backup.id].includes(outcome.triggered[0]!));

  // A load balancer stopped on configuration stays silent; it does not make the next one a "share" of silence.
  await s.h.runtime.db.kysely.updateTable('job').set({ state: 'done' }).execute();
  await s.h.runtime.db.kysely.updateTable('load_balancer').set({ provisioning_status: 'ACTIVE' }).execute();
  await s.h.runtime.db.kysely.updateTable('amphora').set({ last_heartbeat_at: s.clock.now }).where('load_balancer_id', '=', pair!).execute();
  await rememberFailure(s.h.runtime.db.kysely, stopped!, 'configuration', s.clock.now);
  const dead = await insertAmphora(s.h, stopped!, { last_heartbeat_at: s.clock.now - 20_000 });
  const failing = await insertAmphora(s.h, pair!, { last_heartbeat_at: s.clock.now - 10_000 });
  outcome = await detector.check();
  assert.deepEqual(outcome, { kind: 'checked', silent: [dead.id, failing.id], triggered: [failing.id] });
});

test('two health managers racing: the LB lock lets exactly one enqueue', async (t) => {
  const s = await setup(t);
  const [lb] = await loadBalancers(s, 1);
  const [a, b] = [s.detector(), s.detector()];
  s.clock.now += TIMEOUT;
  const silent = await insertAmphora(s.h, lb!, { last_heartbeat_at: s.clock.now - 10_000 });
  const outcomes = await Promise.all([a.check(), b.check()]);
  assert.deepEqual(outcomes.flatMap((o) => (o.kind === 'checked' ? o.triggered : [])), [silent.id]);
  assert.equal((await s.failoverJobs()).length, 1);
});

test('no failover while our own heartbeat pipeline is losing reports; a lost database restarts the grace period', async (t) => {
  const s = await setup(t);
  const [lb] = await loadBalancers(s, 1);
  let healthy = false;
  const detector = s.detector({ receiverHealthy: () => healthy });
  s.clock.now += TIMEOUT;
  await insertAmphora(s.h, lb!, { last_heartbeat_at: s.clock.now - 10_000 });
  assert.deepEqual(await detector.check(), { kind: 'receiver-degraded' });
  healthy = true;
  detector.restartGrace();
  assert.deepEqual(await detector.check(), { kind: 'grace' });
  s.clock.now += TIMEOUT;
  assert.equal((await detector.check()).kind, 'checked');
  assert.equal((await s.failoverJobs()).length, 1);
});

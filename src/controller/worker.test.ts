import { test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { openDatabase, migrate, type Db } from '../db/database.js';
import { ProviderRegistry } from '../providers/registry.js';
import type { ProviderDriver } from '../provider-contract/provider.js';
import type { Flow, StepContext } from '../provider-contract/flow.js';
import { LocalJobSignal } from './signal.js';
import { Worker } from './worker.js';
import { claimNext, enqueue, recordProgress } from './jobs.js';
import { readTrace } from './trace.js';
import { timestamp } from '../domain/time.js';

const log = pino({ level: 'silent' });
let db: Db;
let signal: LocalJobSignal;
let calls: string[];
let flow: Flow;

function registry(): ProviderRegistry {
  const driver: ProviderDriver = {
    name: 'test', description: 'test provider', flavorCapabilities: () => [], availabilityZoneCapabilities: () => [],
    validateFlavorData: () => undefined, validateAvailabilityZoneData: () => undefined, checks: {}, flow: () => flow,
  };
  return new ProviderRegistry(['test'], 'test', { test: () => driver });
}

const step = (name: string, run: (ctx: StepContext) => Promise<void> = async () => undefined, revert?: () => Promise<void>) => ({
  name,
  run: async (ctx: StepContext) => {
    calls.push(name);
    await run(ctx);
  },
  revert: revert && (async () => {
    calls.push(`revert:${name}`);
    await revert();
  }),
});

function worker(leaseMs = 5000): Worker {
  return new Worker({ db, providers: registry(), signal, log, leaseMs, concurrency: 1 });
}

async function jobState(id: string) {
  return db.kysely.selectFrom('job').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/** Resolves once `cond` holds, re-checking whenever the worker records progress. */
async function until(cond: () => Promise<boolean>, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 5));
  }
}

beforeEach(async () => {
  db = await openDatabase('sqlite::memory:');
  await migrate(db);
  signal = new LocalJobSignal();
  calls = [];
  await db.kysely.insertInto('load_balancer').values({
    id: 'lb1', project_id: 'p', name: '', description: '', provisioning_status: 'PENDING_CREATE', operating_status: 'OFFLINE',
    admin_state_up: 1, vip_address: null, vip_port_id: null, vip_subnet_id: null, vip_network_id: null, vip_qos_policy_id: null,
    vip_sg_ids: '[]', vip_vnic_type: 'normal', additional_vips: '[]', provider: 'test', flavor_id: null, availability_zone: null,
    status_reason: null, config_version: 0, created_at: timestamp(), updated_at: null,
  }).execute();
});
afterEach(async () => {
  await signal.close();
  await db.close();
});

test('a stopped worker hands its job back and the next one resumes at the interrupted step', async () => {
  let firstTry = true;
  flow = {
    steps: [
      step('a'),
      step('b', async (ctx) => {
        if (!firstTry) return;
        firstTry = false;
        ctx.signal.throwIfAborted();
        await new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('stopped')), { once: true }));
      }),
      step('c'),
    ],
    onFailure: async () => undefined,
  };
  const id = await enqueue(db.kysely, { loadBalancerId: 'lb1', provider: 'test', operation: 'loadbalancer.create' });
  const w1 = worker();
  w1.start();
  signal.notify();
  await until(async () => calls.includes('b'));
  await w1.close();
  assert.equal((await jobState(id)).state, 'queued');
  assert.equal((await jobState(id)).next_step, 1);

  const w2 = worker();
  w2.start();
  await until(async () => (await jobState(id)).state === 'done');
  await w2.close();
  assert.deepEqual(calls, ['a', 'b', 'b', 'c']);
  const trace = await readTrace(db, 'lb1');
  assert.deepEqual(trace.map((t) => [t.step, t.error]), [['a', null], ['b', 'interrupted: stopped'], ['b', null], ['c', null]]);
});

test('a job whose worker died is adopted after its lease expires, from its last finished step', async () => {
  flow = { steps: [step('a'), step('b'), step('c')], onFailure: async () => undefined };
  const id = await enqueue(db.kysely, { loadBalancerId: 'lb1', provider: 'test', operation: 'loadbalancer.create' });
  const dead = await claimNext(db, 'dead-worker', 100);
  assert.equal(dead?.id, id);
  await recordProgress(db, id, 'dead-worker', 2);
  const w = worker(200);
  w.start();
  await until(async () => (await jobState(id)).state === 'done');
  await w.close();
  assert.deepEqual(calls, ['c']);
  assert.equal((await jobState(id)).attempts, 2);
});

test('a failing step reverts the finished ones in reverse order and names itself in the error', async () => {
  let failure = '';
  flow = {
    steps: [step('a', undefined, async () => undefined), step('b', undefined, async () => undefined), step('c', async () => { throw new Error('boom'); })],
    onFailure: async (_ctx, failed, err) => {
      failure = `${failed}: ${err.message}`;
    },
  };
  const id = await enqueue(db.kysely, { loadBalancerId: 'lb1', provider: 'test', operation: 'loadbalancer.create' });
  const w = worker();
  w.start();
  await until(async () => (await jobState(id)).state === 'failed');
  await w.close();
  assert.deepEqual(calls, ['a', 'b', 'c', 'revert:b', 'revert:a']);
  assert.equal(failure, 'c: boom');
  assert.equal((await jobState(id)).error, 'c: boom');
});

test('jobs of one load balancer run one at a time, in the order they were enqueued', async () => {
  const seen: string[] = [];
  flow = { steps: [{ name: 'record', run: async (ctx) => { seen.push(String(ctx.payload.amphora_id)); await new Promise((r) => setTimeout(r, 10)); } }], onFailure: async () => undefined };
  for (let n = 0; n < 4; n++) await enqueue(db.kysely, { loadBalancerId: 'lb1', provider: 'test', operation: 'amphora.config', payload: { amphora_id: String(n) } });
  const w = new Worker({ db, providers: registry(), signal, log, leaseMs: 5000, concurrency: 3 });
  w.start();
  await until(async () => seen.length === 4);
  await w.close();
  assert.deepEqual(seen, ['0', '1', '2', '3']);
});

/**
 * Worker sessions on a real PostgreSQL: a lease owner whose database session ended is recognised
 * at once (its jobs adopted before their lease expires), a live one is not however long its job
 * runs, and owners without a session wait for their lease as before. Sessions are ended the way a
 * dead process ends them: the server terminates the backend and the lock goes with it.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { sql } from 'kysely';
import { migrate, openDatabase, type Db } from '../db/database.js';
import { ProviderRegistry } from '../providers/registry.js';
import type { ProviderDriver } from '../provider-contract/provider.js';
import type { Flow } from '../provider-contract/flow.js';
import { freshPostgresDatabase } from '../../test/support/postgres.js';
import { postgresPassOnly } from '../../test/support/requirements.js';
import { epochMsFromIso } from '../domain/time.js';
import { claimNext, enqueue, runnableJobExists } from './jobs.js';
import { LocalJobSignal } from './signal.js';
import { readTrace } from './trace.js';
import { stepStarted } from './trace.js';
import { Worker } from './worker.js';
import { forgetEndedSessions, WorkerSession } from './worker-session.js';

const SERVER_URL = process.env.OSTIA_TEST_DATABASE_URL;
/** Far longer than any test here runs: an adoption before it is one the session's end allowed. */
const LEASE_MS = 600_000;

async function database(t: TestContext): Promise<{ db: Db; url: string }> {
  const fresh = await freshPostgresDatabase(SERVER_URL!);
  const db = await openDatabase(fresh.url);
  await migrate(db);
  t.after(async () => {
    await db.close();
    await fresh.drop();
  });
  return { db, url: fresh.url };
}

/** Ends the backend holding `owner`'s lock, as the server does when that worker's process dies, and returns once it has exited. */
async function endSession(db: Db, owner: string): Promise<void> {
  const { rows } = await sql<{ ended: boolean }>`
    select pg_terminate_backend(l.pid, 60000) as ended
    from pg_locks l join worker_session s on l.objid = s.lock_key
    where l.locktype = 'advisory' and l.granted and l.objsubid = 2 and s.owner = ${owner}
      and l.database = (select oid from pg_database where datname = current_database())`.execute(db.kysely);
  assert.deepEqual(rows, [{ ended: true }], `one backend held ${owner}'s lock and exited`);
}

async function job(db: Db, id: string) {
  return db.kysely.selectFrom('job').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

test("a live worker session keeps its job, however long it runs; once the session ends the job is adopted before its lease expires", { skip: postgresPassOnly(), timeout: 120_000 }, async (t) => {
  const { db, url } = await database(t);
  const a = await WorkerSession.open(db, url, 'worker-a');
  t.after(() => a.close());
  const id = await enqueue(db.kysely, { loadBalancerId: 'lb1', provider: 'test', operation: 'loadbalancer.create' });
  assert.equal((await claimNext(db, a.owner, LEASE_MS))?.id, id);
  await stepStarted(db, id, 'lb1', 'slow');

  assert.equal(await claimNext(db, 'worker-b', LEASE_MS), undefined, 'the job of a live session is not taken');
  assert.equal(await runnableJobExists(db), false);
  const leaseOfA = (await job(db, id)).lease_expires_at!;

  await endSession(db, a.owner);
  assert.equal(await runnableJobExists(db), true, 'the job of an ended session is runnable');
  const adopted = await claimNext(db, 'worker-b', LEASE_MS);
  assert.equal(adopted?.id, id);
  const row = await job(db, id);
  assert.equal(row.lease_owner, 'worker-b');
  assert.equal(row.attempts, 2);
  const [slow] = await readTrace(db, 'lb1');
  assert.equal(slow?.error, 'interrupted: worker worker-a lost its database session');
  const adoptedAt = epochMsFromIso(slow.finished_at!)!;
  assert.ok(adoptedAt < leaseOfA, `adopted at ${slow.finished_at}, before worker-a's lease expired (${new Date(leaseOfA).toISOString()})`);

  await forgetEndedSessions(db);
  assert.deepEqual(await db.kysely.selectFrom('worker_session').select('owner').execute(), [], 'the ended session, owning nothing now, is forgotten');
});

test('the job of an owner without a session (SQLite, an earlier version) waits for its lease', { skip: postgresPassOnly(), timeout: 60_000 }, async (t) => {
  const { db } = await database(t);
  const id = await enqueue(db.kysely, { loadBalancerId: 'lb1', provider: 'test', operation: 'loadbalancer.create' });
  assert.equal((await claimNext(db, 'no-session', LEASE_MS))?.id, id);
  assert.equal(await runnableJobExists(db), false);
  assert.equal(await claimNext(db, 'worker-b', LEASE_MS), undefined);
  await forgetEndedSessions(db);
  assert.equal((await job(db, id)).lease_owner, 'no-session');
});

test('a session still holding a running job is not forgotten', { skip: postgresPassOnly(), timeout: 120_000 }, async (t) => {
  const { db, url } = await database(t);
  const a = await WorkerSession.open(db, url, 'worker-a');
  t.after(() => a.close());
  await enqueue(db.kysely, { loadBalancerId: 'lb1', provider: 'test', operation: 'loadbalancer.create' });
  await claimNext(db, a.owner, LEASE_MS);
  await endSession(db, a.owner);
  await forgetEndedSessions(db);
  assert.deepEqual(await db.kysely.selectFrom('worker_session').select('owner').execute(), [{ owner: 'worker-a' }], 'its job is still to adopt');
});

test('a worker whose own session ends interrupts its step, opens a new session and resumes the job under it', { skip: postgresPassOnly(), timeout: 120_000 }, async (t) => {
  const { db, url } = await database(t);
  const calls: string[] = [];
  let firstTry = true;
  const flow: Flow = {
    steps: [
      { name: 'a', run: async () => void calls.push('a') },
      {
        name: 'b',
        run: async (ctx) => {
          calls.push('b');
          if (!firstTry) return;
          firstTry = false;
          await new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('session ended')), { once: true }));
        },
      },
      { name: 'c', run: async () => void calls.push('c') },
    ],
    onFailure: async () => undefined,
  };
  const driver: ProviderDriver = {
    name: 'test', description: 'test provider', flavorCapabilities: () => [], availabilityZoneCapabilities: () => [],
    validateFlavorData: () => undefined, validateAvailabilityZoneData: () => undefined, checks: {}, flow: () => flow,
  };
  const signal = new LocalJobSignal();
  const worker = new Worker({
    db, providers: new ProviderRegistry(['test'], 'test', { test: () => driver }), signal, log: pino({ level: 'silent' }),
    leaseMs: LEASE_MS, concurrency: 1, sessions: { url, checkMs: 200 },
  });
  t.after(async () => {
    await worker.close();
    await signal.close();
  });
  worker.start();
  const id = await enqueue(db.kysely, { loadBalancerId: 'lb1', provider: 'test', operation: 'loadbalancer.create' });
  signal.notify();
  const until = async (what: string, cond: () => Promise<boolean>) => {
    for (const deadline = Date.now() + 60_000; !(await cond()); await new Promise((r) => setTimeout(r, 20)))
      if (Date.now() > deadline) throw new Error(`${what} within 60 s`);
  };
  await until('the worker started step b', async () => calls.includes('b'));
  const leaseOfFirst = (await job(db, id)).lease_expires_at!;

  await endSession(db, worker.id);
  await until('the job done', async () => (await job(db, id)).state === 'done');
  assert.deepEqual(calls, ['a', 'b', 'b', 'c']);
  assert.equal((await job(db, id)).attempts, 2);
  const trace = await readTrace(db, 'lb1');
  assert.deepEqual(trace.map((s) => [s.step, s.error]), [['a', null], ['b', 'interrupted: session ended'], ['b', null], ['c', null]]);
  assert.ok(epochMsFromIso(trace[2]!.started_at)! < leaseOfFirst, 'resumed before the first session’s lease expired');
  await until('the ended session forgotten', async () => (await db.kysely.selectFrom('worker_session').select('owner').execute()).every((s) => s.owner !== worker.id));
  assert.deepEqual(await db.kysely.selectFrom('worker_session').select('owner').execute(), [{ owner: `${worker.id}/2` }], 'the worker runs on under a session of a new name');
});

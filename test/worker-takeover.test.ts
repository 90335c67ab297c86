/**
 * Take-over on PostgreSQL, as in production: `ostia api` and two `ostia worker`s, an amphora load
 * balancer's create, and the worker running it SIGKILLed in the middle of a step. The lease is a
 * minute, so a take-over that waited for it would come after the lease the database recorded:
 * the other worker must adopt the job because the dead one's session ended, before its lease
 * expired, and finish the create. While the worker is only frozen (alive, its session open) its
 * job stays its own.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { postgresPassOnly } from './support/requirements.js';
import { awaitResumed, freezeCreateIn, startTakeoverRig } from './support/worker-takeover.js';
import { amphoraFlows } from '../src/providers/amphora/flows.js';

const LEASE_SECONDS = 60;
const ADOPT_CHECK_SECONDS = 0.5;
/** The flow's own step names; the loader is never called to name them. */
const CREATE_STEPS = amphoraFlows(() => Promise.reject(new Error('not loaded')))('loadbalancer.create').steps.map((s) => s.name);

test('a worker SIGKILLed mid-step has its job adopted by the other worker before its lease expires, and the create finishes', { skip: postgresPassOnly(), timeout: 300_000 }, async (t) => {
  const rig = await startTakeoverRig(process.env.OSTIA_TEST_DATABASE_URL!, { config: { worker: { leaseSeconds: LEASE_SECONDS, adoptCheckSeconds: ADOPT_CHECK_SECONDS } } });
  t.after(() => rig.close());
  const frozen = await freezeCreateIn(rig, 'wait-for-agent');
  assert.equal(frozen.attempts, 1);

  // Alive, only slow: several of the survivor's checks go by and the job stays the frozen worker's.
  await new Promise((resolve) => setTimeout(resolve, 4 * ADOPT_CHECK_SECONDS * 1000));
  const meanwhile = await rig.db.kysely.selectFrom('job').select(['lease_owner', 'attempts']).where('id', '=', frozen.jobId).executeTakeFirstOrThrow();
  assert.deepEqual(meanwhile, { lease_owner: frozen.owner, attempts: 1 }, 'the job of a frozen worker, whose session lives, is not taken');

  frozen.worker.child.kill('SIGKILL');
  // Long enough for the lease path too, so that a take-over that waited fails on the assertions below rather than here.
  const resumed = await awaitResumed(rig, frozen, 2 * LEASE_SECONDS * 1000 + 60_000);
  assert.equal(resumed.provisioningStatus, 'ACTIVE', JSON.stringify(resumed.trace));
  assert.equal(resumed.attempts, 2, 'claimed once by each worker');
  assert.equal(resumed.interrupted.error, `interrupted: worker ${frozen.owner} lost its database session`);
  assert.ok(
    resumed.adoptedAt < frozen.leaseExpiresAt,
    `adopted at ${new Date(resumed.adoptedAt).toISOString()}, before the dead worker's lease expired at ${new Date(frozen.leaseExpiresAt).toISOString()}`,
  );
  const after = resumed.trace.slice(resumed.trace.indexOf(resumed.interrupted) + 1);
  assert.deepEqual(after.map((s) => s.step), CREATE_STEPS.slice(CREATE_STEPS.indexOf(frozen.step)), 'resumed at the interrupted step, each later step once');
  assert.ok(after.every((s) => s.job_id === frozen.jobId && s.error === null), JSON.stringify(after));

  const owners = (await rig.db.kysely.selectFrom('worker_session').select('owner').execute()).map((s) => s.owner);
  assert.equal(owners.filter((o) => o.includes(`:${frozen.survivor.child.pid}:`)).length, 1, `the survivor holds a session: ${owners.join(', ')}`);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { startHarness, admin, memberA, memberB, readerA, PROJECT_A, PROJECT_B, type Caller, type Harness } from '../../../test/support/harness.js';
import { activeLoadBalancer } from '../../../test/support/seed-rows.js';
import { insertAmphora } from '../../../test/support/health-rows.js';
import { timestamp } from '../../domain/time.js';
import { enqueue } from '../../controller/jobs.js';
import { StaleDetector } from '../../providers/amphora/health/stale.js';
import { livePlan } from '../../tools/plan/plan.js';
import { adviseLive } from '../../tools/advise/live.js';
import type { Failover, FailoverStep } from '../views/failovers.js';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

const globalObserver: Caller = { project: PROJECT_A, roles: ['load-balancer_global_observer'] };
const noRoles: Caller = { project: PROJECT_A, roles: [] };
const get = (url: string, as: Caller = admin) => h.request('GET', url, { as });

async function ok(url: string, as: Caller = admin) {
  const r = await get(url, as);
  assert.equal(r.statusCode, 200, `${url}: ${r.body}`);
  return r.json();
}

test("failovers: the health manager's with its reason, an operator's as requested, newest first, with their steps", async () => {
  const byApi = await activeLoadBalancer(h);
  const byHealth = await activeLoadBalancer(h);
  const timeoutMs = 3000;
  const clock = { now: Date.now() };
  const detector = new StaleDetector({
    db: h.runtime.db, jobs: h.runtime.deps.jobs, enqueue, providers: h.runtime.deps.providers, log: pino({ level: 'silent' }),
    timeoutMs, maxConcurrentFailovers: 2, circuitBreakerFraction: 0.5, now: () => clock.now,
  });
  clock.now += timeoutMs;
  // Heard from at the detector's now: only the other one is silent.
  const heard = await insertAmphora(h, byApi.id, { last_heartbeat_at: clock.now });
  assert.equal((await h.request('PUT', `/v2/octavia/amphorae/${heard.id}/failover`, { as: admin })).statusCode, 202);
  assert.equal(await h.settled(byApi.id), 'ACTIVE');
  assert.equal((await h.request('PUT', `/v2/lbaas/loadbalancers/${byApi.id}/failover`, { as: admin })).statusCode, 202);
  assert.equal(await h.settled(byApi.id), 'ACTIVE');
  const silent = await insertAmphora(h, byHealth.id, { last_heartbeat_at: clock.now - timeoutMs - 500 });
  assert.deepEqual(await detector.check(), { kind: 'checked', silent: [silent.id], triggered: [silent.id] });
  assert.equal(await h.settled(byHealth.id), 'ACTIVE');

  const mine = new Set([byApi.id, byHealth.id]);
  const all = ((await ok('/v2/ostia/failovers')).failovers as Failover[]).filter((f) => mine.has(f.load_balancer_id));
  assert.deepEqual(
    all.map((f) => [f.load_balancer_id, f.amphora_id, f.automatic, f.state, f.reason, f.error]),
    [
      [byHealth.id, silent.id, true, 'done', 'no heartbeat for 3.5 s', null],
      [byApi.id, null, false, 'done', 'requested through the API', null],
      [byApi.id, heard.id, false, 'done', 'requested through the API', null],
    ],
  );
  // The steps are the provisioning trace's rows of the job; the times are its first start and last end.
  for (const f of all) {
    const trace = (await ok(`/v2/lbaas/loadbalancers/${f.load_balancer_id}/trace`)).trace as Array<FailoverStep & { job_id: string }>;
    const steps = trace.filter((s) => s.job_id === f.job_id).map(({ step, started_at, finished_at, duration_ms, error }) => ({ step, started_at, finished_at, duration_ms, error }));
    assert.ok(steps.length > 0);
    assert.deepEqual(f.steps, steps);
    assert.equal(f.started_at, steps[0]!.started_at);
    assert.equal(f.finished_at, steps.at(-1)!.finished_at);
    assert.match(f.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}$/);
    assert.ok(f.created_at <= f.started_at!, `${f.created_at} ${f.started_at}`);
  }

  const ids = async (query: string) => ((await ok(`/v2/ostia/failovers${query}`)).failovers as Failover[]).map((f) => f.job_id);
  assert.deepEqual(await ids(`?loadbalancer_id=${byApi.id}`), all.slice(1).map((f) => f.job_id));
  assert.deepEqual(await ids(`?loadbalancer_id=${byApi.id}&limit=1`), [all[1]!.job_id]);
  assert.deepEqual(await ids(`?loadbalancer_id=${randomUUID()}`), []);
  assert.deepEqual(await ids(`?loadbalancer_id=${byHealth.id}`), await ids(`?loadbalancer_id=${byHealth.id}&limit=100000`));
  assert.deepEqual((await ok(`/v2.0/ostia/failovers?loadbalancer_id=${byHealth.id}`)).failovers, [all[0]]);
});

test('failovers: admin only, as reading amphorae; a bad limit or an unknown parameter is a 400', async () => {
  for (const as of [memberA, readerA, globalObserver]) {
    assert.equal((await get('/v2/ostia/failovers', as)).statusCode, (await get('/v2/octavia/amphorae', as)).statusCode);
    assert.equal((await get('/v2/ostia/failovers', as)).statusCode, 403);
  }
  for (const limit of ['0', '-1', 'ten', '1.5']) {
    const r = await get(`/v2/ostia/failovers?limit=${limit}`);
    assert.equal(r.statusCode, 400, limit);
    assert.equal(r.json().faultstring, `Supplied pagination limit '${limit}' is not valid.`);
  }
  const unknown = await get('/v2/ostia/failovers?project_id=x');
  assert.equal(unknown.statusCode, 400);
  assert.equal(unknown.json().faultstring, 'One or more arguments are either duplicate or invalid');
});

test('certificates: the rows of certificate_in_use a caller may see, soonest expiry first, with days left and the warning', async () => {
  const now = Date.now();
  const row = (project: string, objectKind: 'listener' | 'pool', role: string, days: number) => ({
    object_id: randomUUID(), object_kind: objectKind, role, ref: `http://km/v1/secrets/${randomUUID()}`, load_balancer_id: randomUUID(), project_id: project,
    not_after: timestamp(new Date(now + days * 86_400_000)), fingerprint_sha256: 'AB:CD', subject_cn: `${role}.example.test`, warned_days: null, recorded_at: timestamp(),
  });
  const soon = row(PROJECT_A, 'listener', 'default', 5.5);
  const far = row(PROJECT_A, 'pool', 'ca', 400);
  const expired = row(PROJECT_B, 'listener', 'sni', -3.5);
  await h.runtime.db.kysely.insertInto('certificate_in_use').values([far, soon, expired]).execute();
  const mine = new Set<string>([soon, far, expired].map((r) => r.object_id));
  const listed = async (query: string, as: Caller) => ((await ok(`/v2/ostia/certificates${query}`, as)).certificates as Array<Record<string, unknown>>).filter((c) => mine.has(c.object_id as string));

  const all = await listed('', admin);
  assert.deepEqual(all.map((c) => c.object_id), [expired.object_id, soon.object_id, far.object_id]);
  const { days_to_expiry: days, ...first } = all[1]!;
  assert.deepEqual(first, {
    object_kind: 'listener', object_id: soon.object_id, load_balancer_id: soon.load_balancer_id, project_id: PROJECT_A, role: 'default', ref: soon.ref,
    not_after: soon.not_after, warning: 'expires in 5 days', fingerprint_sha256: 'AB:CD', subject_cn: 'default.example.test',
  });
  assert.ok((days as number) > 5.4 && (days as number) <= 5.5, String(days));
  assert.deepEqual(all.map((c) => c.warning), ['EXPIRED 3 days ago', 'expires in 5 days', null]);
  assert.deepEqual((await listed(`?project_id=${PROJECT_B}`, admin)).map((c) => c.object_id), [expired.object_id]);
  assert.deepEqual((await listed(`?project_id=${PROJECT_B}`, globalObserver)).map((c) => c.object_id), [expired.object_id]);
  for (const as of [memberA, readerA]) {
    assert.deepEqual((await listed('', as)).map((c) => c.object_id), [soon.object_id, far.object_id]);
    assert.deepEqual((await listed(`?project_id=${PROJECT_A}`, as)).map((c) => c.object_id), [soon.object_id, far.object_id]);
  }
  assert.deepEqual((await listed('', memberB)).map((c) => c.object_id), [expired.object_id]);
});

test('certificates: who may list listeners may list them, of the same projects', async () => {
  for (const as of [admin, memberA, readerA, memberB, globalObserver, noRoles]) {
    for (const query of ['', `?project_id=${PROJECT_A}`, `?project_id=${PROJECT_B}`]) {
      const listeners = await get(`/v2/lbaas/listeners${query}`, as);
      const certificates = await get(`/v2/ostia/certificates${query}`, as);
      assert.equal(certificates.statusCode, listeners.statusCode, `${JSON.stringify(as)} ${query}: ${certificates.body}`);
      if (listeners.statusCode !== 200) assert.deepEqual(certificates.json(), listeners.json());
    }
  }
  assert.equal((await get('/v2/ostia/certificates', noRoles)).statusCode, 403);
  assert.equal((await get(`/v2/ostia/certificates?project_id=${PROJECT_B}`, memberA)).statusCode, 403);
  assert.equal((await get('/v2/ostia/certificates?within=7')).statusCode, 400);
});

test("plan: the live plan of this service's load balancers, as `ostia plan --from-live --json` computes it", async () => {
  await activeLoadBalancer(h);
  const body = await ok('/v2/ostia/plan');
  assert.deepEqual(body, JSON.parse(JSON.stringify(await livePlan(h.runtime.db, h.config))));
  assert.equal(body.source, 'live');
  assert.equal(body.file, null);
  const running = await h.runtime.db.kysely.selectFrom('load_balancer').select('id').where('provisioning_status', '!=', 'DELETED').execute();
  assert.equal(body.totals.load_balancers, running.length);
  assert.ok(['fits', 'fits-without-failover-headroom', 'exceeds', 'no-limit'].includes(body.verdict.kind));
  assert.equal((await get('/v2/ostia/plan?classes=x')).statusCode, 400);
});

test('plan: with no load balancer there is no class to plan (409)', async () => {
  const empty = await startHarness();
  try {
    const r = await empty.request('GET', '/v2/ostia/plan', { as: admin });
    assert.equal(r.statusCode, 409);
    assert.equal(r.json().faultstring, 'No load balancer runs here, so there is no live class to plan: create load balancers first.');
  } finally {
    await empty.close();
  }
});

test("advice: the provider advice on the live load balancers, all or one project's, as `ostia advise --from-live --json`", async () => {
  await activeLoadBalancer(h, memberA);
  const lbB = await activeLoadBalancer(h, memberB);
  assert.deepEqual(await ok('/v2/ostia/advice'), JSON.parse(JSON.stringify(await adviseLive(h.runtime.db, undefined))));
  const ofB = await ok(`/v2/ostia/advice?project_id=${PROJECT_B}`);
  assert.deepEqual(ofB, JSON.parse(JSON.stringify(await adviseLive(h.runtime.db, PROJECT_B))));
  assert.ok(ofB.loadBalancers.some((lb: { id: string }) => lb.id === lbB.id));
  assert.ok(ofB.loadBalancers.every((lb: { project_id: string }) => lb.project_id === PROJECT_B));
  assert.equal((await get('/v2/ostia/advice?project=x')).statusCode, 400);
});

test('plan and advice: admin only', async () => {
  for (const url of ['/v2/ostia/plan', '/v2/ostia/advice']) {
    for (const as of [memberA, readerA, globalObserver, noRoles]) {
      const r = await get(url, as);
      assert.equal(r.statusCode, 403, `${url} ${JSON.stringify(as)}`);
      assert.equal(r.json().faultstring, 'Policy does not allow this request to be performed.');
    }
  }
});

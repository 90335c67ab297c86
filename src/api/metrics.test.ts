import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startHarness, admin, memberA, readerA, PROJECT_A, PROJECT_B, type Harness } from '../../test/support/harness.js';
import { DAY_MS } from '../domain/certificate-expiry.js';
import { timestamp } from '../domain/time.js';

let h: Harness;

const LB_A = randomUUID();
const LB_B = randomUUID();
const LISTENER_A = randomUUID();
const LISTENER_B = randomUUID();
const POOL_B = randomUUID();

async function inUse(objectKind: 'listener' | 'pool', objectId: string, role: string, lbId: string, projectId: string, days: number): Promise<void> {
  await h.runtime.db.kysely.insertInto('certificate_in_use').values({
    object_id: objectId, object_kind: objectKind, role, ref: `http://127.0.0.1:9876/key-manager/v1/secrets/${randomUUID()}`,
    load_balancer_id: lbId, project_id: projectId, not_after: timestamp(new Date(Date.now() + days * DAY_MS)),
    fingerprint_sha256: null, subject_cn: null, warned_days: null, recorded_at: timestamp(),
  }).execute();
}

before(async () => {
  h = await startHarness();
  await inUse('listener', LISTENER_A, 'default', LB_A, PROJECT_A, 40);
  await inUse('listener', LISTENER_A, 'sni', LB_A, PROJECT_A, 12.5);
  await inUse('listener', LISTENER_A, 'sni', LB_A, PROJECT_A, 20);
  // A client CA expiring first is not what the listener serves.
  await inUse('listener', LISTENER_A, 'client_ca', LB_A, PROJECT_A, 3);
  await inUse('listener', LISTENER_B, 'default', LB_B, PROJECT_B, -2.25);
  await inUse('pool', POOL_B, 'certificate', LB_B, PROJECT_B, 100);
});
after(() => h.close());

/** `name{labels} value` lines of an exposition, as label-string → value. */
function samples(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const match of text.matchAll(new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`, 'gm'))) out.set(match[1]!, Number(match[2]));
  return out;
}

const near = (actual: number | undefined, expected: number) => assert.ok(actual !== undefined && Math.abs(actual - expected) < 0.01, `${actual} ≉ ${expected}`);

test('GET /metrics: days to expiry per certificate and per listener, for an admin', async () => {
  const r = await h.request('GET', '/metrics', { as: admin });
  assert.equal(r.statusCode, 200, r.body);
  assert.match(String(r.headers['content-type']), /^text\/plain; version=0\.0\.4/);

  const perCertificate = samples(r.body, 'ostia_certificate_days_to_expiry');
  const labels = (kind: string, id: string, role: string, lb: string, project: string) =>
    `object_kind="${kind}",object_id="${id}",role="${role}",load_balancer_id="${lb}",project_id="${project}"`;
  assert.equal(perCertificate.size, 5, r.body);
  near(perCertificate.get(labels('listener', LISTENER_A, 'default', LB_A, PROJECT_A)), 40);
  near(perCertificate.get(labels('listener', LISTENER_A, 'sni', LB_A, PROJECT_A)), 12.5);
  near(perCertificate.get(labels('listener', LISTENER_A, 'client_ca', LB_A, PROJECT_A)), 3);
  near(perCertificate.get(labels('listener', LISTENER_B, 'default', LB_B, PROJECT_B)), -2.25);
  near(perCertificate.get(labels('pool', POOL_B, 'certificate', LB_B, PROJECT_B)), 100);

  const perListener = samples(r.body, 'ostia_listener_certificate_days_to_expiry');
  assert.equal(perListener.size, 2, r.body);
  near(perListener.get(`listener_id="${LISTENER_A}",load_balancer_id="${LB_A}",project_id="${PROJECT_A}"`), 12.5);
  near(perListener.get(`listener_id="${LISTENER_B}",load_balancer_id="${LB_B}",project_id="${PROJECT_B}"`), -2.25);
});

test('GET /metrics: 403 without identity, and for members and readers, who would see other projects', async () => {
  // Without a token at all: 401 in the token-checking modes (loadbalancers.test.ts); the harness's testing mode refuses by policy.
  for (const as of [{}, memberA, readerA]) {
    const r = await h.request('GET', '/metrics', { as });
    assert.equal(r.statusCode, 403, r.body);
    assert.equal(r.json().faultstring, 'Policy does not allow this request to be performed.');
    assert.ok(!r.body.includes(PROJECT_B) && !r.body.includes('days_to_expiry'));
  }
});

test('a row that is gone is gone from the next scrape (values are read at scrape time)', async () => {
  await h.runtime.db.kysely.deleteFrom('certificate_in_use').where('object_id', '=', POOL_B).execute();
  const r = await h.request('GET', '/metrics', { as: admin });
  assert.equal(samples(r.body, 'ostia_certificate_days_to_expiry').size, 4);
  assert.ok(!r.body.includes(POOL_B));
});

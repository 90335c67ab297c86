import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { startHarness, PROJECT_A, type Harness } from '../../test/support/harness.js';
import { DAY_MS } from '../domain/certificate-expiry.js';
import { timestamp } from '../domain/time.js';
import { CertificateExpiryWarner } from './expiry-warner.js';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

const START = Date.parse('2030-01-01T00:00:00Z');
const day = (n: number) => START + n * DAY_MS;

/** A row as the recorder writes it, for a certificate expiring `days` after START. */
async function inUse(days: number, fields: { object_kind?: 'listener' | 'pool'; role?: string } = {}) {
  const row = {
    object_id: randomUUID(),
    object_kind: fields.object_kind ?? 'listener',
    role: fields.role ?? 'default',
    ref: `http://127.0.0.1:9876/key-manager/v1/secrets/${randomUUID()}`,
    load_balancer_id: randomUUID(),
    project_id: PROJECT_A,
    not_after: timestamp(new Date(day(days))),
    fingerprint_sha256: null,
    subject_cn: null,
    warned_days: null,
    recorded_at: timestamp(new Date(START)),
  };
  await h.runtime.db.kysely.insertInto('certificate_in_use').values(row).execute();
  return row;
}

/** A warner at a settable time, logging through a real pino logger the test reads back. */
function warnerAt(clock: { now: number }) {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { warner: new CertificateExpiryWarner({ db: h.runtime.db, log, now: () => clock.now }), lines };
}

const warnedDays = async (objectId: string) =>
  (await h.runtime.db.kysely.selectFrom('certificate_in_use').select('warned_days').where('object_id', '=', objectId).executeTakeFirstOrThrow()).warned_days;

test('a certificate is warned about once at 30, once at 14 and once at 7 days, with who uses it and when it ends', async () => {
  const row = await inUse(40, { object_kind: 'pool', role: 'certificate' });
  const clock = { now: START };
  const { warner, lines } = warnerAt(clock);
  const thresholdsAt = async (now: number) => {
    clock.now = now;
    return (await warner.run()).filter((w) => w.object_id === row.object_id).map((w) => w.threshold);
  };

  assert.deepEqual(await thresholdsAt(day(0)), [], '40 days left');
  assert.deepEqual(await thresholdsAt(day(11)), [30], '29 days left');
  assert.deepEqual(await thresholdsAt(day(12)), [], 'still within 30: already warned');
  assert.equal(await warnedDays(row.object_id), 30);
  assert.deepEqual(await thresholdsAt(day(27)), [14], '13 days left');
  assert.deepEqual(await thresholdsAt(day(34)), [7], '6 days left');
  assert.deepEqual(await thresholdsAt(day(35)), []);
  assert.deepEqual(await thresholdsAt(day(45)), [], 'expired: the 7-day warning was the last');

  const mine = lines.filter((l) => l.pool === row.object_id);
  assert.equal(mine.length, 3);
  assert.deepEqual(mine[0], {
    ...mine[0], level: 40, role: 'certificate', lb: row.load_balancer_id, project: PROJECT_A, ref: row.ref,
    days_left: 29, not_after: row.not_after, threshold: 30,
    msg: `certificate of pool ${row.object_id} expires in 29 days (${row.not_after} UTC)`,
  });
  assert.deepEqual(mine.map((l) => l.days_left), [29, 13, 6]);
});

test('a certificate first seen close to expiry gets only the nearest warning; an expired one says so', async () => {
  const soon = await inUse(5);
  const gone = await inUse(-3);
  const far = await inUse(31);
  const { warner, lines } = warnerAt({ now: START });
  const warned = (await warner.run()).filter((w) => [soon, gone, far].some((r) => r.object_id === w.object_id));
  assert.deepEqual(warned.map((w) => [w.object_id, w.threshold]).sort(), [[soon.object_id, 7], [gone.object_id, 7]].sort());
  assert.deepEqual(await Promise.all([soon, gone, far].map((r) => warnedDays(r.object_id))), [7, 7, null]);
  const expired = lines.find((l) => l.listener === gone.object_id)!;
  assert.equal(expired.msg, `certificate of listener ${gone.object_id} EXPIRED 3 days ago (${gone.not_after} UTC)`);
});

test('several housekeepers at once warn once; a renewed certificate is warned about again when its own time comes', async () => {
  const row = await inUse(20);
  const clock = { now: day(8) };
  const keepers = [warnerAt(clock), warnerAt(clock), warnerAt(clock)];
  const runs = await Promise.all(keepers.map((k) => k.warner.run()));
  const about = runs.flat().filter((w) => w.object_id === row.object_id);
  assert.deepEqual(about.map((w) => w.threshold), [14]);
  assert.equal(keepers.flatMap((k) => k.lines).filter((l) => l.listener === row.object_id).length, 1);

  // What the recorder writes for a renewal: the new not-after, warned_days back to null.
  await h.runtime.db.kysely.updateTable('certificate_in_use').set({ not_after: timestamp(new Date(day(100))), warned_days: null }).where('object_id', '=', row.object_id).execute();
  const { warner } = warnerAt(clock);
  assert.deepEqual((await warner.run()).filter((w) => w.object_id === row.object_id), []);
  clock.now = day(75);
  assert.deepEqual((await warner.run()).filter((w) => w.object_id === row.object_id).map((w) => w.threshold), [30]);
});

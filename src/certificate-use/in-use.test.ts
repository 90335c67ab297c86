import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate, randomUUID } from 'node:crypto';
import pino from 'pino';
import { startHarness, memberA, PROJECT_A, type Harness } from '../../test/support/harness.js';
import { deleteSecret, storeContainer, storeSecret, WITH_KEY_MANAGER } from '../../test/support/tls-secrets.js';
import { activeLoadBalancer, seedPool } from '../../test/support/seed-rows.js';
import { createTestPki, type IssuedCert, type TestPki } from '../../test/support/test-pki.js';
import { DAY_MS, daysToExpiry } from '../domain/certificate-expiry.js';
import { timestamp } from '../domain/time.js';
import type { CertificateInUseRecord } from '../db/records/certificate-in-use.js';
import { concernsCertificates, recordCertificatesInUse } from './in-use.js';

let h: Harness;
let pki: TestPki;
/** Leaves valid 45, 10 and 5 days: a PKCS#12 secret of the first, containers of the others. */
let www: IssuedCert;
let api: IssuedCert;
let client: IssuedCert;
let p12: string;
let apiContainer: string;
let clientContainer: string;
let ca: string;
let crl: string;

before(async () => {
  h = await startHarness(WITH_KEY_MANAGER);
  pki = createTestPki();
  www = pki.leaf({ cn: 'www.project-a.example', dnsNames: ['www.project-a.example'], key: 'ec-p256', days: 45 });
  api = pki.leaf({ cn: 'api.project-a.example', dnsNames: ['api.project-a.example'], key: 'ec-p256', days: 10 });
  client = pki.leaf({ cn: 'client.project-a.example', key: 'ec-p256', days: 5 });
  p12 = await storeSecret(h, memberA, pki.pkcs12({ key: www, certs: [www, pki.intermediate] }));
  apiContainer = await storeContainer(h, memberA, { certificate: api.certPem, private_key: api.keyPem, intermediates: pki.intermediate.certPem });
  clientContainer = await storeContainer(h, memberA, { certificate: client.certPem, private_key: client.keyPem });
  ca = await storeSecret(h, memberA, pki.root.certPem);
  crl = await storeSecret(h, memberA, pki.crl(pki.root));
});
after(async () => {
  await h.close();
  pki.remove();
});

const notAfterOf = (cert: IssuedCert) => timestamp(new Date(new X509Certificate(cert.certPem).validTo));
const fingerprintOf = (cert: IssuedCert) => new X509Certificate(cert.certPem).fingerprint256;

async function created(kind: 'listeners' | 'pools', lbId: string, body: Record<string, unknown>): Promise<string> {
  const key = kind === 'listeners' ? 'listener' : 'pool';
  const r = await h.request('POST', `/v2/lbaas/${kind}`, { as: memberA, body: { [key]: { loadbalancer_id: lbId, ...body } } });
  assert.equal(r.statusCode, 201, r.body);
  assert.equal(await h.settled(lbId), 'ACTIVE');
  return r.json()[key].id;
}

const rowsOf = (lbId: string) =>
  h.runtime.db.kysely.selectFrom('certificate_in_use').selectAll().where('load_balancer_id', '=', lbId).orderBy('object_kind').orderBy('role').execute();

/** The worker records once its job has finished, a moment after the tree settles. */
async function rowsWhen(lbId: string, done: (rows: CertificateInUseRecord[]) => boolean): Promise<CertificateInUseRecord[]> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const rows = await rowsOf(lbId);
    if (done(rows)) return rows;
    if (Date.now() > deadline) assert.fail(`rows of ${lbId} never matched; last: ${JSON.stringify(rows)}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A real pino logger whose lines the test reads back. */
function capturedLog() {
  const lines: string[] = [];
  return { log: pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) }), lines };
}

const tlsListener = { protocol: 'TERMINATED_HTTPS', protocol_port: 443 };

test('every reference of a TERMINATED_HTTPS listener and a re-encrypting pool is recorded with its not-after, after the job', async () => {
  const lb = await activeLoadBalancer(h);
  const listenerId = await created('listeners', lb.id, {
    ...tlsListener, default_tls_container_ref: p12, sni_container_refs: [apiContainer],
    client_authentication: 'MANDATORY', client_ca_tls_container_ref: ca, client_crl_container_ref: crl,
  });
  const poolId = await created('pools', lb.id, { protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', tls_enabled: true, tls_container_ref: clientContainer, ca_tls_container_ref: ca });

  const rows = await rowsWhen(lb.id, (r) => r.length === 6);
  const byRole = Object.fromEntries(rows.map((r) => [`${r.object_kind} ${r.role}`, r]));
  assert.deepEqual(Object.keys(byRole).sort(), ['listener client_ca', 'listener client_crl', 'listener default', 'listener sni', 'pool ca', 'pool certificate']);
  for (const row of rows) {
    assert.equal(row.project_id, PROJECT_A);
    assert.equal(row.warned_days, null);
    assert.equal(row.object_id, row.object_kind === 'listener' ? listenerId : poolId);
  }
  const expect = (key: string, ref: string, cert: IssuedCert) => {
    const row = byRole[key]!;
    assert.deepEqual([row.ref, row.not_after, row.fingerprint_sha256, row.subject_cn], [ref, notAfterOf(cert), fingerprintOf(cert), cert.cn], key);
  };
  expect('listener default', p12, www);
  expect('listener sni', apiContainer, api);
  expect('pool certificate', clientContainer, client);
  for (const key of ['listener client_ca', 'pool ca']) {
    assert.deepEqual([byRole[key]!.ref, byRole[key]!.not_after, byRole[key]!.fingerprint_sha256], [ca, notAfterOf(pki.root), null], key);
  }
  // A CRL "expires" at its next update: pki.crl's default is 30 days.
  const crlRow = byRole['listener client_crl']!;
  assert.equal(crlRow.ref, crl);
  assert.ok(Math.abs(daysToExpiry(crlRow.not_after, new Date()) - 30) < 0.01, crlRow.not_after);
});

test('re-recording keeps warned_days of unchanged rows; a renewed certificate starts again from none', async () => {
  const lb = await activeLoadBalancer(h);
  const listenerId = await created('listeners', lb.id, { ...tlsListener, default_tls_container_ref: p12, sni_container_refs: [apiContainer] });
  await rowsWhen(lb.id, (r) => r.length === 2);
  const db = h.runtime.db.kysely;
  await db.updateTable('certificate_in_use').set({ warned_days: 30 }).where('load_balancer_id', '=', lb.id).execute();

  await recordCertificatesInUse(h.runtime.keyManager, h.runtime.db, lb.id, pino({ level: 'silent' }));
  assert.deepEqual((await rowsOf(lb.id)).map((r) => r.warned_days), [30, 30]);

  const renewed = pki.leaf({ cn: 'www.project-a.example', dnsNames: ['www.project-a.example'], key: 'ec-p256', days: 90 });
  const renewedRef = await storeSecret(h, memberA, pki.pkcs12({ key: renewed, certs: [renewed, pki.intermediate] }));
  const put = await h.request('PUT', `/v2/lbaas/listeners/${listenerId}`, { as: memberA, body: { listener: { default_tls_container_ref: renewedRef } } });
  assert.equal(put.statusCode, 200, put.body);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  const rows = await rowsWhen(lb.id, (r) => r.some((row) => row.ref === renewedRef));
  assert.deepEqual(rows.map((r) => [r.role, r.ref, r.not_after, r.warned_days]), [
    ['default', renewedRef, notAfterOf(renewed), null],
    ['sni', apiContainer, notAfterOf(api), 30],
  ]);
});

test('an unreadable reference is logged by name, never by content, and skipped; one recorded before keeps its row', async () => {
  const lb = await activeLoadBalancer(h);
  const doomed = await storeSecret(h, memberA, pki.pkcs12({ key: www, certs: [www] }));
  await created('listeners', lb.id, { ...tlsListener, default_tls_container_ref: doomed, sni_container_refs: [apiContainer] });
  const recorded = await rowsWhen(lb.id, (r) => r.length === 2);
  await deleteSecret(h, memberA, doomed);

  // References the API would refuse, written straight into a pool: nothing there, and not a certificate.
  const missing = `${h.runtime.deps.publicUrl()}/key-manager/v1/secrets/${randomUUID()}`;
  const garbage = await storeSecret(h, memberA, 'I am no certificate but a very private note');
  const poolId = await seedPool(h, lb, 'HTTP');
  await h.runtime.db.kysely.updateTable('pool').set({ tls_container_ref: missing, ca_tls_container_ref: garbage }).where('id', '=', poolId).execute();

  const { log, lines } = capturedLog();
  await recordCertificatesInUse(h.runtime.keyManager, h.runtime.db, lb.id, log);
  const withoutTime = (rows: CertificateInUseRecord[]) => rows.map(({ recorded_at: _, ...row }) => row);
  assert.deepEqual(withoutTime(await rowsOf(lb.id)), withoutTime(recorded), 'the deleted secret keeps its last row; the pool records nothing');

  const warnings = lines.map((line) => JSON.parse(line) as { ref: string; uses: string[]; reason: string; level: number; msg: string });
  assert.deepEqual(warnings.map((w) => w.ref).sort(), [doomed, garbage, missing].sort());
  assert.ok(warnings.every((w) => w.level === 40));
  const about = (ref: string) => warnings.find((w) => w.ref === ref)!;
  assert.deepEqual(about(garbage).uses, [`pool/${poolId} ca`]);
  assert.match(about(garbage).reason, new RegExp(`^Invalid TLS reference ${garbage}: `));
  assert.deepEqual(about(doomed).uses, [`listener/${recorded[0]!.object_id} default`]);
  assert.match(about(doomed).msg, /its last recorded expiry stands$/);
  assert.match(about(missing).msg, /its expiry is not tracked until it can be read$/);
  const all = lines.join('');
  assert.ok(!all.includes('very private note') && !all.includes('BEGIN'), all);
});

test('an expired certificate still in use is recorded, its days negative', async () => {
  const lb = await activeLoadBalancer(h);
  await created('listeners', lb.id, { ...tlsListener, sni_container_refs: [apiContainer] });
  await rowsWhen(lb.id, (r) => r.length === 1);
  const later = new Date(Date.now() + 20 * DAY_MS);
  const { log, lines } = capturedLog();
  await recordCertificatesInUse(h.runtime.keyManager, h.runtime.db, lb.id, log, later);
  const [row] = await rowsOf(lb.id);
  assert.equal(row!.not_after, notAfterOf(api));
  assert.ok(daysToExpiry(row!.not_after, later) < -9, row!.not_after);
  assert.deepEqual(lines, []);
});

test('one query tells whether a load balancer concerns certificates; deleting it removes its rows', async () => {
  const plain = await activeLoadBalancer(h);
  assert.equal(await concernsCertificates(h.runtime.db, plain.id), false);
  await created('listeners', plain.id, { protocol: 'HTTP', protocol_port: 80 });
  assert.equal(await concernsCertificates(h.runtime.db, plain.id), false);
  assert.deepEqual(await rowsOf(plain.id), []);

  const lb = await activeLoadBalancer(h);
  await created('listeners', lb.id, { ...tlsListener, default_tls_container_ref: p12 });
  await rowsWhen(lb.id, (r) => r.length === 1);
  assert.equal(await concernsCertificates(h.runtime.db, lb.id), true);
  const del = await h.request('DELETE', `/v2/lbaas/loadbalancers/${lb.id}?cascade=true`, { as: memberA });
  assert.equal(del.statusCode, 204, del.body);
  assert.equal(await h.settled(lb.id), 'DELETED');
  await rowsWhen(lb.id, (r) => r.length === 0);
  assert.equal(await concernsCertificates(h.runtime.db, lb.id), false);
});

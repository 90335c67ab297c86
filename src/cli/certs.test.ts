/**
 * Certificate expiry end to end, as operators meet it: a real `ostia up`, certificates stored
 * through its key manager and a TERMINATED_HTTPS listener created with Keystone tokens,
 * `/metrics` scraped the way Prometheus does (a bearer token), then `ostia certs` run as a
 * child process on the data directory.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runOstia, startOstia } from '../../test/support/ostia-process.js';
import { VIP_SUBNET_ID } from '../config.js';
import { createTestPki } from '../../test/support/test-pki.js';
import { timestamp } from '../domain/time.js';
import { defaultConfig, deepMerge, validateConfig } from '../config.js';
import { migrate, openDatabase } from '../db/database.js';
import { freshPostgresDatabase } from '../../test/support/postgres.js';
import { listCertificates } from './certs.js';

/** `ostia up` keeps SQLite in its data directory: the PostgreSQL pass has nothing to add to these. */
const sqliteOnly = { skip: process.env.OSTIA_TEST_DATABASE_URL ? 'runs ostia up on SQLite' : false };

async function call(method: string, url: string, token: string, body?: unknown): Promise<Record<string, any>> {
  const res = await fetch(url, { method, headers: { 'x-auth-token': token, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  assert.ok(res.status < 300, `${method} ${url}: HTTP ${res.status} ${await res.clone().text()}`);
  return (await res.json()) as Record<string, any>;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within 20 s`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

test('ostia certs and GET /metrics report the certificates a listener serves, soonest first, with their warning', sqliteOnly, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'ostia-certs-test-'));
  const pki = createTestPki();
  t.after(() => {
    rmSync(dataDir, { recursive: true, force: true });
    pki.remove();
  });
  const soon = pki.leaf({ cn: 'www.demo.example', dnsNames: ['www.demo.example'], key: 'ec-p256', days: 12 });
  const later = pki.leaf({ cn: 'api.demo.example', dnsNames: ['api.demo.example'], key: 'ec-p256', days: 60 });

  const running = await startOstia({ dataDir });
  let lbId: string;
  let listenerId: string;
  let p12: string;
  let container: string;
  let projectId: string;
  try {
    const demo = await running.token('ostia-demo');
    const adminToken = await running.token('ostia');
    const km = `${running.url}/key-manager/v1`;
    const secret = async (name: string, payload: Buffer) =>
      (await call('POST', `${km}/secrets`, demo, { name, payload: payload.toString('base64'), payload_content_type: 'application/octet-stream', payload_content_encoding: 'base64' })).secret_ref as string;
    p12 = await secret('www', pki.pkcs12({ key: soon, certs: [soon, pki.intermediate] }));
    const parts = [
      { name: 'certificate', secret_ref: await secret('api-cert', Buffer.from(later.certPem)) },
      { name: 'private_key', secret_ref: await secret('api-key', Buffer.from(later.keyPem)) },
    ];
    container = (await call('POST', `${km}/containers`, demo, { type: 'certificate', name: 'api', secret_refs: parts })).container_ref;

    const lb = (await call('POST', `${running.url}/v2/lbaas/loadbalancers`, demo, { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, name: 'tls' } })).loadbalancer;
    lbId = lb.id;
    projectId = lb.project_id;
    const lbUrl = `${running.url}/v2/lbaas/loadbalancers/${lbId}`;
    const active = async () => ((await call('GET', lbUrl, demo)).loadbalancer.provisioning_status === 'ACTIVE' ? true : undefined);
    await until('load balancer ACTIVE', active);
    listenerId = (await call('POST', `${running.url}/v2/lbaas/listeners`, demo, {
      listener: { loadbalancer_id: lbId, protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: p12, sni_container_refs: [container] },
    })).listener.id;
    await until('listener ACTIVE', active);

    // Prometheus sends `authorization: Bearer`; the values appear once the worker has recorded them.
    const scrape = (headers: Record<string, string>) => fetch(`${running.url}/metrics`, { headers });
    const perListener = new RegExp(`^ostia_listener_certificate_days_to_expiry\\{listener_id="${listenerId}",load_balancer_id="${lbId}",project_id="${projectId}"\\} (\\S+)$`, 'm');
    const days = await until('listener gauge', async () => {
      const res = await scrape({ authorization: `Bearer ${adminToken}` });
      assert.equal(res.status, 200);
      return perListener.exec(await res.text())?.[1];
    });
    assert.ok(Number(days) > 11.9 && Number(days) <= 12, days);
    assert.equal((await scrape({ 'x-auth-token': adminToken })).status, 200);
    assert.equal((await scrape({ authorization: `Bearer ${demo}` })).status, 403, 'a member would see every project');
    assert.equal((await scrape({})).status, 401);
    assert.equal((await scrape({ authorization: 'Bearer not-a-token' })).status, 401);
  } finally {
    await running.stop();
  }

  const [table, asJson, within, badWithin, help] = await Promise.all([
    runOstia('certs', '--data-dir', dataDir),
    runOstia('certs', '--data-dir', dataDir, '--json'),
    runOstia('certs', '--data-dir', dataDir, '--within', '30', '--json'),
    runOstia('certs', '--data-dir', dataDir, '--within', 'soon'),
    runOstia('certs', '--help'),
  ]);

  const notAfter = (pem: string) => timestamp(new Date(new X509Certificate(pem).validTo));
  assert.equal(asJson.code, 0, asJson.stderr);
  const { certificates } = JSON.parse(asJson.stdout) as { certificates: Array<Record<string, unknown>> };
  assert.deepEqual(certificates.map((c) => [c.object_kind, c.object_id, c.load_balancer_id, c.project_id, c.role, c.ref, c.not_after, c.subject_cn]), [
    ['listener', listenerId, lbId, projectId, 'default', p12, notAfter(soon.certPem), 'www.demo.example'],
    ['listener', listenerId, lbId, projectId, 'sni', container, notAfter(later.certPem), 'api.demo.example'],
  ]);
  assert.equal(certificates[0]!.warning, 'expires in 11 days');
  assert.equal(certificates[1]!.warning, null);
  assert.ok((certificates[1]!.days_to_expiry as number) > 59.9);

  assert.equal(table.code, 0, table.stderr);
  const [heading, ...rows] = table.stdout.trimEnd().split('\n');
  assert.match(heading!, /^OBJECT\s+ID\s+LOAD BALANCER\s+PROJECT\s+ROLE\s+REFERENCE\s+NOT AFTER \(UTC\)\s+DAYS\s+WARNING$/);
  assert.equal(rows.length, 2);
  assert.match(rows[0]!, new RegExp(`^listener\\s+${listenerId}\\s+${lbId}\\s+${projectId}\\s+default\\s+${p12}\\s+${notAfter(soon.certPem)}\\s+1[12]\\.\\d\\s+expires in 11 days$`));
  assert.match(rows[1]!, new RegExp(`^listener\\s+${listenerId}\\s+${lbId}\\s+${projectId}\\s+sni\\s+${container}\\s+${notAfter(later.certPem)}\\s+(59|60)\\.\\d$`));

  assert.equal(within.code, 0, within.stderr);
  assert.deepEqual((JSON.parse(within.stdout) as { certificates: Array<{ ref: string }> }).certificates.map((c) => c.ref), [p12]);
  assert.deepEqual(badWithin, { code: 2, stdout: '', stderr: "ostia certs: --within must be a number of days, got 'soon'. See 'ostia certs --help'.\n" });
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^Usage: ostia certs \[options\]/);
  assert.match(help.stdout, /--within DAYS/);
  assert.match(help.stdout, /--json/);
  assert.match((await runOstia('--help')).stdout, /^ {2}certs {2,}List the certificates/m);
});

test('ostia certs on a database without certificates says so, and refuses a directory without a database', sqliteOnly, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'ostia-certs-test-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const missing = await runOstia('certs', '--data-dir', dataDir);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /^ostia certs: no database at /);

  const running = await startOstia({ dataDir });
  await running.stop();
  const [empty, emptyWithin, asJson] = await Promise.all([
    runOstia('certs', '--data-dir', dataDir),
    runOstia('certs', '--data-dir', dataDir, '--within', '7'),
    runOstia('certs', '--data-dir', dataDir, '--json'),
  ]);
  assert.deepEqual(empty, { code: 0, stdout: 'No certificates in use.\n', stderr: '' });
  assert.deepEqual(emptyWithin, { code: 0, stdout: 'No certificate in use expires within 7 days.\n', stderr: '' });
  assert.deepEqual(JSON.parse(asJson.stdout), { certificates: [] });
});

test('listCertificates: soonest first, --within keeps the expired and those within the days, on SQLite and PostgreSQL', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ostia-certs-test-'));
  const pg = process.env.OSTIA_TEST_DATABASE_URL ? await freshPostgresDatabase(process.env.OSTIA_TEST_DATABASE_URL) : null;
  t.after(async () => {
    await pg?.drop();
    rmSync(dir, { recursive: true, force: true });
  });
  const config = validateConfig(deepMerge(defaultConfig(dir), pg ? { database: { url: pg.url } } : {}));
  const db = await openDatabase(config.database.url);
  const now = new Date('2030-06-01T00:00:00Z');
  try {
    await migrate(db);
    const row = (objectId: string, role: string, days: number, warned: number | null = null) => ({
      object_id: objectId, object_kind: 'listener' as const, role, ref: `http://km/v1/secrets/${objectId}-${role}`, load_balancer_id: 'lb', project_id: 'p',
      not_after: timestamp(new Date(now.getTime() + days * 86_400_000)), fingerprint_sha256: null, subject_cn: null, warned_days: warned, recorded_at: timestamp(now),
    });
    await db.kysely.insertInto('certificate_in_use').values([row('b', 'default', 45), row('a', 'sni', -3.5, 7), row('a', 'default', 6.25, 7), row('c', 'default', 29.5)]).execute();
  } finally {
    await db.close();
  }

  const all = await listCertificates(config, null, now);
  assert.deepEqual(all.map((c) => [c.object_id, c.role, c.days_to_expiry, c.warning]), [
    ['a', 'sni', -3.5, 'EXPIRED 3 days ago'],
    ['a', 'default', 6.25, 'expires in 6 days'],
    ['c', 'default', 29.5, 'expires in 29 days'],
    ['b', 'default', 45, null],
  ]);
  assert.deepEqual((await listCertificates(config, 7, now)).map((c) => `${c.object_id} ${c.role}`), ['a sni', 'a default']);
  assert.deepEqual((await listCertificates(config, 0, now)).map((c) => `${c.object_id} ${c.role}`), ['a sni']);
});

/**
 * `ostia audit` as an operator runs it: a child process on the database of a running service (SQLite in
 * its data directory; the service's PostgreSQL in the second pass), whose amphora load balancers use the
 * fields OSSA-2026-039 names, one of them holding a value stored around the API (as one stored before the
 * fix would be). Every verdict branch: this service's own checks, clean and exposed stored values, an
 * Octavia release before, between and after the fixes, and an endpoint's version document.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, VIP_SUBNET_ID } from '../src/config.js';
import { EXPOSED_EXIT, type AdvisoryAudit } from '../src/cli/audit.js';
import { runOstia } from './support/ostia-process.js';
import { startHarness, memberA, type Harness } from './support/harness.js';

const HOSTILE = 'http://example.com/\nhttp-request return status 200 string pwned';
let h: Harness;
let dataDir: string;
let lbId: string;
let policyId: string;

/** Where the audit reads: the data directory's SQLite, or the PostgreSQL the service runs on. */
const target = () => (process.env.OSTIA_TEST_DATABASE_URL ? ['--database-url', h.config.database.url] : ['--data-dir', dataDir]);
const audit = (...args: string[]) => runOstia('audit', ...target(), ...args);
const audited = async (...args: string[]) => {
  const r = await audit('--json', ...args);
  assert.ok(r.code === 0 || r.code === EXPOSED_EXIT, `exit ${r.code}: ${r.stderr}`);
  return { code: r.code, result: (JSON.parse(r.stdout) as { advisories: AdvisoryAudit[] }).advisories[0]! };
};

before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'ostia-audit-'));
  const database = process.env.OSTIA_TEST_DATABASE_URL ? {} : { database: { url: defaultConfig(dataDir).database.url } };
  h = await startHarness({ ...database, api: { enabledProviders: ['noop', 'amphora'], defaultProvider: 'amphora' }, compute: { driver: 'noop' } });
  const created = await h.request('POST', '/v2/lbaas/loadbalancers', {
    as: memberA,
    body: {
      loadbalancer: {
        name: 'audited',
        vip_subnet_id: VIP_SUBNET_ID,
        listeners: [
          {
            protocol: 'HTTP',
            protocol_port: 80,
            default_pool: { name: 'web', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', tls_enabled: true, tls_ciphers: 'ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384' },
            l7policies: [{ action: 'REDIRECT_TO_URL', redirect_url: 'https://example.com/moved' }],
          },
        ],
      },
    },
  });
  assert.equal(created.statusCode, 201, created.body);
  lbId = created.json().loadbalancer.id;
  assert.equal(await h.settled(lbId), 'ACTIVE');
  policyId = (await h.runtime.db.kysely.selectFrom('l7policy').select('id').executeTakeFirstOrThrow()).id;
});

after(async () => {
  await h?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

test("this service's own checks refuse the advisory's hostile value for every field it names, at the API and in the renderer", async () => {
  const { result } = await audited();
  assert.equal(result.id, 'OSSA-2026-039');
  assert.deepEqual(result.fields.map((f) => `${f.resource}.${f.field}`), ['listener.tls_ciphers', 'pool.tls_ciphers', 'l7policy.redirect_url', 'l7policy.redirect_prefix']);
  for (const f of result.fields) {
    assert.ok(f.apiRefusal, `${f.resource}.${f.field} refused by the API`);
    assert.ok(f.render && 'refused' in f.render, `${f.resource}.${f.field} refused by the renderer`);
  }
  assert.match(result.fields[2]!.apiRefusal!, /Value must be a valid URL string/);
});

test('clean stored values: listed, none exposed, exit 0', async () => {
  const { code, result } = await audited();
  assert.equal(code, 0);
  assert.equal(result.exposed, 0);
  assert.deepEqual(result.stored.map((s) => [s.resource, s.field, s.load_balancer_id, s.refused_character]).sort(), [['l7policy', 'redirect_url', lbId, null], ['pool', 'tls_ciphers', lbId, null]].sort());
  assert.match(result.verdict, /2 value\(s\) of .* none holding what the fix refuses; this service refuses such values at the API and again in the renderer/);
});

test('a value stored around the API is marked with the character the fix refuses, exit 3, and the text escapes it', async (t) => {
  await h.runtime.db.kysely.updateTable('l7policy').set({ redirect_url: HOSTILE }).where('id', '=', policyId).execute();
  t.after(() => h.runtime.db.kysely.updateTable('l7policy').set({ redirect_url: 'https://example.com/moved' }).where('id', '=', policyId).execute());
  const { code, result } = await audited();
  assert.equal(code, EXPOSED_EXIT);
  assert.equal(result.exposed, 1);
  const marked = result.stored.find((s) => s.refused_character !== null)!;
  assert.deepEqual([marked.object_id, marked.value, marked.refused_character], [policyId, HOSTILE, 'U+000A']);
  assert.match(result.verdict, /^1 of 2 stored value\(s\) hold what the fix refuses/);
  const text = await audit();
  assert.equal(text.code, EXPOSED_EXIT);
  assert.ok(text.stdout.includes('U+000A') && text.stdout.includes(lbId), text.stdout);
  assert.ok(!text.stdout.includes('\nhttp-request return'), 'the stored newline is never printed raw');
});

test('an Octavia release is judged against each fix, and the exit status says so', async () => {
  // Each a process of its own: the other versions are judged in src/cli/audit/advisory.test.ts.
  const cases: Array<[string, string, Record<string, string>]> = [
    ['5.1.0', 'affected', { tls_ciphers: 'not affected', redirect: 'affected' }],
    ['16.1.0', 'not affected', { tls_ciphers: 'not affected', redirect: 'not affected' }],
  ];
  for (const [version, verdict, fixes] of cases) {
    const { code, result } = await audited('--octavia-version', version);
    assert.equal(result.octavia!.verdict, verdict, version);
    assert.deepEqual(Object.fromEntries(result.octavia!.fixes.map((f) => [f.fix, f.missing])), fixes, version);
    assert.equal(code, verdict === 'affected' ? EXPOSED_EXIT : 0, version);
  }
  const bad = await audit('--octavia-version', 'zed');
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /'zed' is not an Octavia release version/);
});

test("an endpoint is judged by the newest API version its version document lists: one every release from 16.0.0 serves can't tell", async () => {
  const app = h.runtime.app!;
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  const { result } = await audited('--octavia-url', address);
  assert.equal(result.octavia!.releases, '>=16.0.0');
  assert.equal(result.octavia!.verdict, 'undetermined');
  assert.match(result.octavia!.reason, /pip show octavia/);
  const refused = await audit('--octavia-url', 'http://127.0.0.1:1');
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /did not give its version document/);
});

test('an unknown advisory, or a malformed one, is a clear failure', async () => {
  const unknown = await audit('--advisory', 'OSSA-1999-001');
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /no advisory OSSA-1999-001 .*there: OSSA-2026-039/);
  const both = await audit('--octavia-version', '1.0.0', '--octavia-url', 'http://x');
  assert.equal(both.code, 2);
});

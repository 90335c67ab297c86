import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { advisoriesDir, loadAdvisories, readAdvisory, refusedCharacter } from './advisory.js';
import { judgeRelease, releasesServing } from './octavia-version.js';

const shipped = () => loadAdvisories(advisoriesDir());

test('the shipped advisories load, each fix with its fields, pattern and ranges', () => {
  const [ossa] = shipped();
  assert.equal(ossa!.id, 'OSSA-2026-039');
  assert.deepEqual(ossa!.fixes.map((f) => f.name), ['tls_ciphers', 'redirect']);
});

test("a fix's pattern marks the first character it refuses", () => {
  const [tls, redirect] = shipped()[0]!.fixes;
  assert.equal(refusedCharacter(tls!, 'ECDHE-RSA-AES128-GCM-SHA256:!aNULL'), null);
  assert.equal(refusedCharacter(tls!, 'ECDHE RSA'), 'U+0020');
  assert.equal(refusedCharacter(redirect!, 'https://example.com/a?b=c'), null);
  assert.equal(refusedCharacter(redirect!, 'https://example.com/\u0085x'), 'U+0085');
  assert.equal(refusedCharacter(redirect!, 'https://example.com/\rx'), 'U+000D');
});

test('a malformed advisory file is refused, naming the file and what is wrong', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ostia-advisory-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const base = 'id: X-1\ntitle: t\nproviders: [amphora]\nfixes:\n  - { name: f, cves: [], fields: [{ resource: listener, field: name }], refusesText: r, probe: p, ';
  const cases: Array<[string, RegExp]> = [
    [`${base}refuses: "[", affected: [">=1.0.0"] }\n`, /refuses is not a regular expression/],
    [`${base}refuses: "x", affected: ["sometime"] }\n`, /'sometime' is not a version range/],
    [base.replace('resource: listener', 'resource: amphora') + 'refuses: "x", affected: [">=1.0.0"] }\n', /fixes\/0\/fields\/0\/resource/],
    ['id: [', /advisory .*bad\.yaml/],
  ];
  for (const [text, error] of cases) {
    writeFileSync(join(dir, 'bad.yaml'), text);
    assert.throws(() => readAdvisory(join(dir, 'bad.yaml')), error);
  }
});

test('an API version narrows the releases serving it as their newest', () => {
  assert.equal(releasesServing('v2.30'), '>=16.0.0');
  assert.equal(releasesServing('v2.29'), '>=16.0.0');
  assert.equal(releasesServing('v2.28'), '>=14.0.0 <16.0.0');
  assert.equal(releasesServing('2.27'), '>=13.0.0 <14.0.0');
  assert.equal(releasesServing('v2.12'), '>=1.0.0 <13.0.0');
  assert.throws(() => releasesServing('v1.9'), /older than any Octavia v2/);
  assert.throws(() => releasesServing('latest'), /not an Octavia API version/);
});

test('a development or pre-release version string is judged by its release', () => {
  const ossa = shipped()[0]!;
  assert.equal(judgeRelease(ossa, '17.0.1.dev12').verdict, 'not affected');
  assert.equal(judgeRelease(ossa, '15.0.0').verdict, 'affected');
  assert.match(judgeRelease(ossa, '15.0.0').reason, /lacks the tls_ciphers fix \(CVE-2026-94572\) and the redirect fix \(CVE-2026-94571\)/);
});

test('an Octavia release is judged against each fix: before, between and after them', () => {
  const ossa = shipped()[0]!;
  const cases: Array<[string, string, Record<string, string>]> = [
    ['0.7.0', 'not affected', { tls_ciphers: 'not affected', redirect: 'not affected' }],
    ['5.1.0', 'affected', { tls_ciphers: 'not affected', redirect: 'affected' }],
    ['16.0.0', 'affected', { tls_ciphers: 'affected', redirect: 'affected' }],
    ['16.1.0', 'not affected', { tls_ciphers: 'not affected', redirect: 'not affected' }],
    ['17.0.0', 'affected', { tls_ciphers: 'affected', redirect: 'affected' }],
    ['18.0.1', 'not affected', { tls_ciphers: 'not affected', redirect: 'not affected' }],
  ];
  for (const [version, verdict, fixes] of cases) {
    const judged = judgeRelease(ossa, version);
    assert.equal(judged.verdict, verdict, version);
    assert.deepEqual(Object.fromEntries(judged.fixes.map((f) => [f.fix, f.missing])), fixes, version);
  }
});

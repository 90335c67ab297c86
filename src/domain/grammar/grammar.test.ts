import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { repoRoot } from '../../../test/support/ostia-process.js';
import { onPath } from '../../../test/support/requirements.js';
import { regexProblem } from './pcre-regex.js';
import { parseCipherList, tlsVersionRange, unsupportedTlsVersions } from './tls.js';
import { unprintableProblem } from './printable.js';

test('regex: the shared subset is accepted, what PCRE2 or JavaScript read otherwise is refused with its position', () => {
  for (const ok of ['^/api/v[0-9]+/', '^.*\\.example\\.com$', '(?:a|b)*?c{2,5}', '[^/\\]\\-]+$', '\\x41\\d\\s\\w\\b', '(?=x)(?!y)z', 'a{0,65535}', '[-a]', '[a-]', 'x|', '\\/'])
    assert.equal(regexProblem(ok), null, ok);
  const refused: Array<[string, RegExp]> = [
    ['\\q', /escape \\q.*position 0/], ['(', /unclosed group at position 0/], [')', /unmatched \)/], ['[[:alpha:]]', /\[ inside a class/],
    ['(?<=a+)b', /group other than/], ['(?<n>a)', /group other than/], ['a{1,65536}', /above 65535/], ['a{3,2}', /out of order/], ['{', /unescaped \{/],
    ['\\u0041', /escape \\u/], ['\\1', /escape \\1/], ['[z-a]', /out of order/], ['[\\d-z]', /class escape/], ['[]', /empty class/], ['*a', /nothing to repeat/],
    ['a**', /after a quantifier/], ['é', /non-ASCII/], ['[a-b-c]', /neither first nor last/], ['\\x4', /two hex digits/], ['a\\', /ending the pattern/], ['[\\B]', /\\B inside/],
  ];
  for (const [bad, why] of refused) assert.match(regexProblem(bad) ?? 'accepted', why, bad);
});

test('regex: whatever the grammar accepts, JavaScript compiles', () => {
  const piece = fc.constantFrom('a', '^', '$', '.', '*', '+', '?', '|', '(', ')', '(?:', '(?=', '(?!', '[', ']', '-', '^', '\\', 'd', 'x', '4', '1', '{', '}', ',', '2', 'b', 'B', ' ');
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 14 }), (pieces) => {
      const value = pieces.join('');
      if (regexProblem(value) === null) assert.doesNotThrow(() => new RegExp(value), value);
    }),
    { numRuns: Number(process.env.OSTIA_FUZZ_RUNS ?? 2000) },
  );
});

test('cipher lists: known names only, split for HAProxy, refused when they select nothing', () => {
  assert.deepEqual(parseCipherList('ECDHE-RSA-AES128-GCM-SHA256:TLS_AES_128_GCM_SHA256:HIGH:!aNULL:-MD5:+SHA1:@STRENGTH:@SECLEVEL=2'), {
    ok: { legacy: ['ECDHE-RSA-AES128-GCM-SHA256', 'HIGH', '!aNULL', '-MD5', '+SHA1', '@STRENGTH', '@SECLEVEL=2'], tls13: ['TLS_AES_128_GCM_SHA256'] },
  });
  assert.deepEqual(parseCipherList(''), { ok: { legacy: [], tls13: [] } });
  assert.ok('ok' in parseCipherList('DEFAULT:!RC4'));
  assert.ok('ok' in parseCipherList('ECDHE+AESGCM'));
  const refused: Array<[string, RegExp]> = [
    ['TLS_FOO', /TLS_FOO is not a cipher/], ['A'.repeat(2048), /is not a cipher/], ['!ALL', /selects no cipher/], ['HIGH:!HIGH:HIGH', /selects no cipher/],
    ['RC4', /selects no cipher/], ['HIGH:@FOO', /not an OpenSSL command/], ['HIGH:@SECLEVEL=6', /not an OpenSSL command/], ['HIGH:DEFAULT', /DEFAULT can only be the first/],
    ['ECDHE+FOO', /FOO is not a cipher/], ['HIGH;LOW', /characters outside/], ['+', /is not a cipher/],
  ];
  for (const [bad, why] of refused) {
    const parsed = parseCipherList(bad);
    assert.ok('problem' in parsed, bad);
    assert.match(parsed.problem, why, bad);
  }
});

test('TLS versions: those HAProxy speaks, as one range', () => {
  assert.equal(unsupportedTlsVersions(['TLSv1.2', 'TLSv1.3']), null);
  assert.match(unsupportedTlsVersions(['SSLv3', 'TLSv1']) ?? '', /SSLv3 is not spoken/);
  assert.deepEqual(tlsVersionRange(['TLSv1.3', 'TLSv1.2']), { min: 'TLSv1.2', max: 'TLSv1.3' });
  assert.deepEqual(tlsVersionRange(['TLSv1']), { min: 'TLSv1.0', max: 'TLSv1.0' });
  assert.equal(tlsVersionRange(['TLSv1', 'TLSv1.2']), null);
  assert.equal(tlsVersionRange(['SSLv3']), null);
  assert.equal(tlsVersionRange([]), null);
});

test('printable: control characters, C1 and lone surrogates are not', () => {
  for (const bad of ['a\nb', '\0', '\x7f', '\u0085', '\u009f', 'a\ud800']) assert.notEqual(unprintableProblem(bad), null, JSON.stringify(bad));
  for (const ok of ['a b', 'é💥', '\u2028', '%[src]']) assert.equal(unprintableProblem(ok), null, ok);
});

test('the cipher table is what the system OpenSSL (the one HAProxy links) says', { skip: onPath('openssl') ? false : 'openssl is not installed' }, () => {
  const root = repoRoot();
  const generated = execFileSync('node', [join(root, 'scripts/openssl-ciphers.mjs')], { encoding: 'utf8' });
  const committed = readFileSync(join(root, 'src/domain/grammar/openssl-ciphers.ts'), 'utf8');
  // A security release of the same OpenSSL (3.0.19, 3.0.22) names itself differently but selects the same ciphers: only the vocabulary must match.
  const versionOf = (table: string) => /export const OpenSslVersion = "(.*)";/.exec(table)?.[1] ?? '';
  assert.equal(generated.replaceAll(versionOf(generated), versionOf(committed)), committed, 'regenerate: node scripts/openssl-ciphers.mjs > src/domain/grammar/openssl-ciphers.ts');
});

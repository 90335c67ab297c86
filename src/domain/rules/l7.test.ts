import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isApiError } from '../errors.js';
import { checkRuleCount, isRedirectUrl, placePolicy, resolveL7PolicyTargetCreate, resolveL7PolicyTargetUpdate, validateL7Rule, type L7RuleAttrs } from './l7.js';

function fails(fn: () => unknown, status: number, message: string) {
  assert.throws(fn, (e: unknown) => isApiError(e) && e.status === status && e.message === message);
}

const POOL = '11111111-2222-3333-4444-555555555555';
const none = { redirect_pool_id: null, redirect_url: null, redirect_prefix: null, redirect_http_code: null };

test('policy target: action and redirect fields are made consistent', () => {
  assert.deepEqual(resolveL7PolicyTargetCreate({ action: 'REJECT', redirect_http_code: 301 }), { action: 'REJECT', ...none });
  assert.deepEqual(resolveL7PolicyTargetCreate({ action: 'REDIRECT_TO_URL', redirect_url: 'http://a.example/x' }), { action: 'REDIRECT_TO_URL', ...none, redirect_url: 'http://a.example/x', redirect_http_code: 302 });
  assert.deepEqual(resolveL7PolicyTargetCreate({ action: 'REDIRECT_PREFIX', redirect_prefix: 'https://a.example', redirect_http_code: 308 }), { action: 'REDIRECT_PREFIX', ...none, redirect_prefix: 'https://a.example', redirect_http_code: 308 });
  // The action clears targets it does not use; a pool redirect carries no HTTP code.
  assert.deepEqual(resolveL7PolicyTargetCreate({ action: 'REJECT', redirect_pool_id: POOL }), { action: 'REJECT', ...none });
  assert.deepEqual(resolveL7PolicyTargetCreate({ action: 'REDIRECT_TO_URL', redirect_url: 'http://a', redirect_pool_id: POOL }), { action: 'REDIRECT_TO_URL', ...none, redirect_url: 'http://a', redirect_http_code: 302 });
  assert.deepEqual(resolveL7PolicyTargetCreate({ action: 'REDIRECT_TO_POOL', redirect_pool_id: POOL, redirect_http_code: 308 }), { action: 'REDIRECT_TO_POOL', ...none, redirect_pool_id: POOL });
  assert.deepEqual(resolveL7PolicyTargetCreate({ action: 'REDIRECT_TO_POOL', redirect_pool_id: POOL }), { action: 'REDIRECT_TO_POOL', ...none, redirect_pool_id: POOL });
});

test('policy target: missing or conflicting targets are refused', () => {
  fails(() => resolveL7PolicyTargetCreate({ action: 'REDIRECT_TO_URL' }), 400, 'Invalid L7 Policy arguments: redirect_url must not be None');
  fails(() => resolveL7PolicyTargetCreate({ action: 'REDIRECT_TO_POOL' }), 400, 'Invalid L7 Policy arguments: redirect_pool_id or redirect_pool must not be None');
  fails(() => resolveL7PolicyTargetCreate({ action: 'REDIRECT_PREFIX' }), 400, 'Invalid L7 Policy arguments: redirect_prefix must not be None');
  fails(() => resolveL7PolicyTargetCreate({ action: 'REDIRECT_TO_POOL', redirect_pool_id: POOL, redirect_prefix: 'http://a' }), 400, 'Invalid L7 Policy arguments: Cannot specify redirect_pool_id and redirect_url or redirect_prefix at the same time');
  fails(() => resolveL7PolicyTargetCreate({ action: 'REDIRECT_TO_URL', redirect_url: 'bad url' }), 400, "Invalid input for field/attribute redirect_url. Value: 'bad url'. Value must be a valid URL string");
});

test('redirect URL grammar', () => {
  for (const ok of ['http://a', 'https://www.example.com/x?y=1#z', 'http://user:pw@[::1]:8080/', 'HTTP://A.EXAMPLE']) assert.ok(isRedirectUrl(ok), ok);
  for (const bad of ['bad-url', 'ftp://a', 'http://', 'http://a b', 'http://a/\r\nx', '/relative']) assert.ok(!isRedirectUrl(bad), bad);
  for (const port of ['1', '80', '65535', '']) assert.ok(isRedirectUrl(`http://a:${port}/x`), port);
  for (const port of ['65536', '99999', '123456', '000000065536', '9'.repeat(400)]) assert.ok(!isRedirectUrl(`https://a.example:${port}/x`), port);
});

test('policy update: the patch is sanitized alone, then laid over the stored policy', () => {
  const url = resolveL7PolicyTargetCreate({ action: 'REDIRECT_TO_URL', redirect_url: 'http://a', redirect_http_code: 301 });
  assert.equal(resolveL7PolicyTargetUpdate(url, { redirect_http_code: 308 }).redirect_http_code, 308);
  assert.equal(resolveL7PolicyTargetUpdate(url, { redirect_http_code: null }).redirect_http_code, null);
  assert.deepEqual(resolveL7PolicyTargetUpdate(url, { action: 'REJECT' }), { action: 'REJECT', ...none });
  assert.deepEqual(resolveL7PolicyTargetUpdate(url, { redirect_pool_id: POOL }), { action: 'REDIRECT_TO_POOL', ...none, redirect_pool_id: POOL });
  assert.deepEqual(resolveL7PolicyTargetUpdate(url, { name: 'x' }), url);
  fails(() => resolveL7PolicyTargetUpdate(url, { action: 'REDIRECT_PREFIX' }), 400, 'Invalid L7 Policy arguments: redirect_prefix must not be None');
  fails(() => resolveL7PolicyTargetUpdate(url, {}), 400, 'Invalid L7 Policy arguments: Invalid update options');
});

test('placePolicy inserts at a 1-based position, appends past the end, and moves', () => {
  assert.deepEqual(placePolicy(['a', 'b', 'c'], 'n', undefined), ['a', 'b', 'c', 'n']);
  assert.deepEqual(placePolicy(['a', 'b', 'c'], 'n', 1), ['n', 'a', 'b', 'c']);
  assert.deepEqual(placePolicy(['a', 'b', 'c'], 'n', 3), ['a', 'b', 'n', 'c']);
  assert.deepEqual(placePolicy(['a', 'b', 'c'], 'n', 2147483647), ['a', 'b', 'c', 'n']);
  assert.deepEqual(placePolicy(['a', 'b', 'c'], 'c', 1), ['c', 'a', 'b']);
  assert.deepEqual(placePolicy(['a', 'b', 'c'], 'a', 99), ['b', 'c', 'a']);
});

const rule = (r: Partial<L7RuleAttrs>): L7RuleAttrs => ({ type: 'PATH', compare_type: 'STARTS_WITH', key: null, value: '/api', ...r });
const bad = (r: Partial<L7RuleAttrs>, msg: string) => fails(() => validateL7Rule(rule(r)), 400, `Error parsing L7Rule: ${msg}`);

test('rules: per-type validation with Octavia messages', () => {
  for (const ok of [
    rule({}),
    rule({ type: 'HOST_NAME', compare_type: 'EQUAL_TO', value: 'www.example.com' }),
    rule({ type: 'HOST_NAME', compare_type: 'REGEX', value: '^.*\\.example\\.com$' }),
    rule({ type: 'FILE_TYPE', compare_type: 'EQUAL_TO', value: 'jpg' }),
    rule({ type: 'HEADER', compare_type: 'CONTAINS', key: 'X-Some-Header', value: '"quoted value"' }),
    rule({ type: 'COOKIE', compare_type: 'EQUAL_TO', key: 'session', value: 'abc123' }),
    rule({ type: 'SSL_CONN_HAS_CERT', compare_type: 'EQUAL_TO', value: 'TRUE' }),
    rule({ type: 'SSL_VERIFY_RESULT', compare_type: 'EQUAL_TO', value: '0' }),
    rule({ type: 'SSL_DN_FIELD', compare_type: 'STARTS_WITH', key: 'CN', value: 'www' }),
  ])
    validateL7Rule(ok);
  bad({ value: '' }, 'Invalid L7 Rule: L7 rule type requires a value');
  bad({ type: 'HEADER', key: null }, 'Invalid L7 Rule: L7 rule type requires a key');
  bad({ type: 'HEADER', key: 'bad key' }, 'Invalid characters in key');
  bad({ type: 'HEADER', key: 'X-A', value: 'two words' }, 'Invalid characters in header value');
  bad({ type: 'COOKIE', key: 'c', value: 'a,b' }, 'Invalid characters in cookie value');
  bad({ type: 'COOKIE', key: 'c', compare_type: 'REGEX', value: '(' }, 'Unable to parse regular expression: value has an unclosed group at position 0');
  bad({ value: 'a b' }, 'Invalid characters in comparison value');
  bad({ type: 'FILE_TYPE', compare_type: 'CONTAINS', value: 'jpg' }, 'Invalid L7 Rule: invalid comparison type for rule type');
  bad({ type: null }, 'Invalid L7 Rule: invalid rule type');
  bad({ type: 'SSL_CONN_HAS_CERT', compare_type: 'EQUAL_TO', key: 'k', value: 'true' }, 'Invalid L7 Rule: L7rule type SSL_CONN_HAS_CERT does not use the "key" field.');
  bad({ type: 'SSL_CONN_HAS_CERT', compare_type: 'EQUAL_TO', value: 'yes' }, 'Invalid L7 Rule: L7rule value yes is not a boolean True string.');
  bad({ type: 'SSL_CONN_HAS_CERT', value: 'true' }, 'Invalid L7 Rule: L7rule type SSL_CONN_HAS_CERT only supports the EQUAL_TO compare type.');
  bad({ type: 'SSL_VERIFY_RESULT', compare_type: 'EQUAL_TO', value: '-1' }, 'Invalid L7 Rule: L7rule type SSL_VERIFY_RESULT needs a int value, which is >= 0');
  bad({ type: 'SSL_VERIFY_RESULT', value: '1' }, 'Invalid L7 Rule: L7rule type SSL_VERIFY_RESULT only supports the EQUAL_TO compare type.');
  bad({ type: 'SSL_DN_FIELD', value: 'x' }, 'Invalid L7 Rule: L7rule type SSL_DN_FIELD needs to specify a key and a value.');
  bad({ type: 'SSL_DN_FIELD', key: '1CN', value: 'x' }, 'Invalid L7 Rule: Invalid L7rule distinguished name field.');
});

test('at most 50 rules per policy', () => {
  checkRuleCount('p', 50);
  fails(() => checkRuleCount('p', 51), 409, 'Too many rules on L7 policy p');
});

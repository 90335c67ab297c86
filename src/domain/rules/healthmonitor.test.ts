import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isApiError } from '../errors.js';
import { checkMonitorTypeForPool, isUrlPath, resolveHealthMonitorCreate, resolveHealthMonitorUpdate, type HealthMonitorRequest } from './healthmonitor.js';

const settings = { allowPing: true, udpConnectMinDelay: 3 };

function fails(fn: () => unknown, status: number, message: string) {
  assert.throws(fn, (e: unknown) => isApiError(e) && e.status === status && e.message === message);
}

const tcp: HealthMonitorRequest = { type: 'TCP', delay: 5, timeout: 3, max_retries: 2 };
const http: HealthMonitorRequest = { type: 'HTTP', delay: 5, timeout: 3, max_retries: 2 };

test('HTTP monitors get GET / "200"; others get nulls; max_retries_down defaults to 3', () => {
  const h = resolveHealthMonitorCreate(http, 'HTTP', settings);
  assert.deepEqual([h.http_method, h.url_path, h.expected_codes, h.max_retries_down, h.name, h.admin_state_up], ['GET', '/', '200', 3, '', true]);
  const t = resolveHealthMonitorCreate(tcp, 'TCP', settings);
  assert.deepEqual([t.http_method, t.url_path, t.expected_codes, t.http_version, t.domain_name], [null, null, null, null, null]);
  assert.equal(resolveHealthMonitorCreate({ ...tcp, admin_state_up: null }, 'TCP', settings).admin_state_up, false);
});

test('HTTP-only fields on other types are refused in Octavia words', () => {
  fails(() => resolveHealthMonitorCreate({ ...tcp, http_method: 'GET' }, 'TCP', settings), 400, 'http_method is not a valid option for health monitors of type TCP');
  fails(() => resolveHealthMonitorCreate({ ...tcp, expected_codes: '200' }, 'TCP', settings), 400, 'expected_codes is not a valid option for health monitors of type TCP');
  // Octavia tests truthiness on create: an explicit null passes.
  assert.equal(resolveHealthMonitorCreate({ ...tcp, url_path: null }, 'TCP', settings).url_path, null);
});

test('pool protocol matrix (§3.14)', () => {
  for (const type of ['HTTP', 'HTTPS', 'PING', 'TCP', 'TLS-HELLO']) checkMonitorTypeForPool(type, 5, 'HTTP', settings);
  for (const type of ['UDP-CONNECT', 'SCTP', 'TCP', 'HTTP']) checkMonitorTypeForPool(type, 5, 'UDP', settings);
  fails(() => checkMonitorTypeForPool('UDP-CONNECT', 5, 'TCP', settings), 400, 'Validation failure: The UDP-CONNECT type is only supported for pools of type UDP/SCTP.');
  fails(() => checkMonitorTypeForPool('SCTP', 5, 'HTTP', settings), 400, 'Validation failure: The SCTP type is only supported for pools of type UDP/SCTP.');
  fails(() => checkMonitorTypeForPool('PING', 5, 'UDP', settings), 400, 'Validation failure: The associated pool protocol is UDP, so only a UDP-CONNECT/SCTP/TCP/HTTP health monitor is supported.');
  fails(() => checkMonitorTypeForPool('HTTPS', 5, 'SCTP', settings), 400, 'Validation failure: The associated pool protocol is SCTP, so only a UDP-CONNECT/SCTP/TCP/HTTP health monitor is supported.');
  fails(() => checkMonitorTypeForPool('UDP-CONNECT', 2, 'UDP', settings), 400, 'Validation failure: The request delay value 2 should be larger than 3 for UDP-CONNECT health monitor type.');
  checkMonitorTypeForPool('UDP-CONNECT', 3, 'UDP', settings);
});

test('PING can be disallowed by the deployment', () => {
  fails(() => resolveHealthMonitorCreate({ ...tcp, type: 'PING' }, 'TCP', { ...settings, allowPing: false }), 400, 'The selected type is not allowed in this deployment: PING');
});

test('url_path grammar', () => {
  for (const ok of ['/', '/health', '/a/b?x=1&y=2', '/%20x', "/a-b_c.d~e!$&'()*+,;=:@"]) assert.ok(isUrlPath(ok), ok);
  for (const bad of ['', 'health', '/a b', '//host/x', 'http://h/x', '/\n', '/a<b', '/%zz']) assert.ok(!isUrlPath(bad), bad);
  fails(() => resolveHealthMonitorCreate({ ...http, url_path: 'nope' }, 'HTTP', settings), 400, "Invalid input for field/attribute url_path. Value: 'nope'. Value must be a valid URL Path string");
});

test('domain_name needs http_version 1.1', () => {
  fails(() => resolveHealthMonitorCreate({ ...http, domain_name: 'a.example' }, 'HTTP', settings), 400, "Validation failure: 'http_version' must be specified when 'domain_name' is provided.");
  fails(() => resolveHealthMonitorCreate({ ...http, domain_name: 'a.example', http_version: 1 }, 'HTTP', settings), 400, 'http_version 1.0 is not a valid option for health monitors HTTP 1.1 domain name health check');
  assert.equal(resolveHealthMonitorCreate({ ...http, domain_name: 'a.example', http_version: 1.1 }, 'HTTP', settings).domain_name, 'a.example');
});

test('update: nulls reset, refused for delay/timeout/max_retries; the merged monitor is checked', () => {
  const stored = resolveHealthMonitorCreate({ ...http, http_method: 'HEAD', max_retries_down: 5 }, 'HTTP', settings);
  const reset = resolveHealthMonitorUpdate(stored, { http_method: null, max_retries_down: null, name: null }, 'HTTP', settings);
  assert.deepEqual([reset.http_method, reset.max_retries_down, reset.name], ['GET', 3, '']);
  assert.equal(resolveHealthMonitorUpdate(stored, { delay: 9 }, 'HTTP', settings).delay, 9);
  for (const f of ['delay', 'timeout', 'max_retries'] as const)
    fails(() => resolveHealthMonitorUpdate(stored, { [f]: null }, 'HTTP', settings), 400, `None is not a valid option for ${f}`);
  const t = resolveHealthMonitorCreate(tcp, 'TCP', settings);
  fails(() => resolveHealthMonitorUpdate(t, { http_method: null }, 'TCP', settings), 400, 'http_method is not a valid option for health monitors of type TCP');
  fails(() => resolveHealthMonitorUpdate(stored, { domain_name: 'x.example' }, 'HTTP', settings), 400, "Validation failure: 'http_version' must be specified when 'domain_name' is provided.");
  const udp = resolveHealthMonitorCreate({ ...tcp, type: 'UDP-CONNECT' }, 'UDP', settings);
  fails(() => resolveHealthMonitorUpdate(udp, { delay: 1 }, 'UDP', settings), 400, 'Validation failure: The request delay value 1 should be larger than 3 for UDP-CONNECT health monitor type.');
});

test('an expected-codes range must go upwards', () => {
  fails(() => resolveHealthMonitorCreate({ ...http, expected_codes: '204-200' }, 'HTTP', settings), 400, '204-200 is not a valid option for expected_codes');
  assert.equal(resolveHealthMonitorCreate({ ...http, expected_codes: '200-204' }, 'HTTP', settings).expected_codes, '200-204');
});

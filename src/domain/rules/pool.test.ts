import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isApiError } from '../errors.js';
import { mergeSessionPersistence, poolSpecForCreate, poolSpecForUpdate, validateSessionPersistence } from './pool.js';
import { PoolDefaults } from '../defaults.js';

function refuses(fn: () => unknown, message: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(isApiError(e), String(e));
    assert.equal(e.message, message);
    assert.equal(e.status, 400);
    return true;
  });
}

const sp = (type: string, extra: Record<string, unknown> = {}) => ({ type, cookie_name: null, persistence_timeout: null, persistence_granularity: null, ...extra });

test('session persistence: cookie names only and always for APP_COOKIE', () => {
  validateSessionPersistence(sp('APP_COOKIE', { cookie_name: 'JSESSIONID' }), 'HTTP');
  validateSessionPersistence(sp('HTTP_COOKIE'), 'HTTP');
  validateSessionPersistence(sp('SOURCE_IP'), 'TCP');
  refuses(() => validateSessionPersistence(sp('HTTP_COOKIE', { cookie_name: 'x' }), 'HTTP'),
    'Validation failure: Field "cookie_name" can only be specified with session persistence of type "APP_COOKIE".');
  refuses(() => validateSessionPersistence(sp('APP_COOKIE'), 'HTTP'),
    'Validation failure: Field "cookie_name" must be specified when using the "APP_COOKIE" session persistence type.');
  refuses(() => validateSessionPersistence(sp('APP_COOKIE', { cookie_name: 'a b' }), 'HTTP'), 'Validation failure: Supplied "cookie_name" is invalid.');
  refuses(() => validateSessionPersistence(sp('APP_COOKIE', { cookie_name: 'a;b' }), 'HTTP'), 'Validation failure: Supplied "cookie_name" is invalid.');
});

test('session persistence: timeout and granularity only on UDP/SCTP, which take SOURCE_IP only', () => {
  refuses(() => validateSessionPersistence(sp('SOURCE_IP', { persistence_timeout: 10 }), 'TCP'),
    'Validation failure: persistence_timeout and persistence_granularity is only for UDP and SCTP protocol pools.');
  validateSessionPersistence(sp('SOURCE_IP', { persistence_timeout: 10, persistence_granularity: '255.255.255.0' }), 'UDP');
  refuses(() => validateSessionPersistence(sp('HTTP_COOKIE'), 'SCTP'), 'Validation failure: Session persistence of type HTTP_COOKIE is not supported for UDP/SCTP protocol pools.');
  refuses(() => validateSessionPersistence(sp('APP_COOKIE', { cookie_name: 'c' }), 'UDP'), 'Validation failure: Cookie names are not supported for UDP/SCTP pools.');
});

test('session persistence merge: null or {} removes, a missing type keeps the stored one', () => {
  const stored = sp('APP_COOKIE', { cookie_name: 'c' });
  assert.equal(mergeSessionPersistence(stored, null), null);
  assert.equal(mergeSessionPersistence(stored, {}), null);
  assert.equal(mergeSessionPersistence(stored, undefined), stored);
  assert.deepEqual(mergeSessionPersistence(stored, { cookie_name: 'd' }), sp('APP_COOKIE', { cookie_name: 'd' }));
  assert.deepEqual(mergeSessionPersistence(stored, { type: 'HTTP_COOKIE' }), sp('HTTP_COOKIE'));
  assert.throws(() => mergeSessionPersistence(null, { cookie_name: 'x' }), /Mandatory field missing/);
});

test('pool TLS defaults follow tls_enabled', () => {
  const plain = poolSpecForCreate({ protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' });
  assert.equal(plain.tls_enabled, false);
  assert.equal(plain.tls_ciphers, null);
  assert.equal(plain.tls_versions, null);
  assert.equal(plain.alpn_protocols, null);
  assert.equal(plain.session_persistence, null);
  const tls = poolSpecForCreate({ protocol: 'HTTPS', lb_algorithm: 'ROUND_ROBIN', tls_enabled: true, tls_versions: ['TLSv1.3'] });
  assert.equal(tls.tls_ciphers, PoolDefaults.tls_ciphers);
  assert.deepEqual(tls.tls_versions, ['TLSv1.3']);
  assert.deepEqual(tls.alpn_protocols, ['h2', 'http/1.1', 'http/1.0']);
  const enabled = poolSpecForUpdate(plain, { tls_enabled: true });
  assert.deepEqual(enabled.tls_versions, ['TLSv1.2', 'TLSv1.3']);
  const reset = poolSpecForUpdate(tls, { tls_versions: null, lb_algorithm: 'LEAST_CONNECTIONS' });
  assert.deepEqual(reset.tls_versions, ['TLSv1.2', 'TLSv1.3']);
  assert.equal(reset.lb_algorithm, 'LEAST_CONNECTIONS');
  refuses(() => poolSpecForCreate({ protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', crl_container_ref: 'crl' }),
    'Validation failure: A CA certificate reference is required to specify a revocation list.');
  refuses(() => poolSpecForCreate({ protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', tls_versions: [] }),
    'Validation failure: Empty TLS version list. Either specify at least one TLS version or remove this parameter to use the default.');
});

test('pool update validates the merged session persistence against the pool protocol', () => {
  const udp = poolSpecForCreate({ protocol: 'UDP', lb_algorithm: 'ROUND_ROBIN', session_persistence: { type: 'SOURCE_IP', persistence_timeout: 30 } });
  assert.deepEqual(udp.session_persistence, sp('SOURCE_IP', { persistence_timeout: 30 }));
  refuses(() => poolSpecForUpdate(udp, { session_persistence: { type: 'HTTP_COOKIE' } }),
    'Validation failure: Session persistence of type HTTP_COOKIE is not supported for UDP/SCTP protocol pools.');
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isApiError } from '../errors.js';
import {
  assertPoolProtocolAllowed, assertPortFree, l4Protocol, listenerSpecForCreate, listenerSpecForUpdate, normaliseAllowedCidrs,
  portHolder, pyList, validateInsertHeaders, withDefaults, type ListenerEnv,
} from './listener.js';
import { ListenerDefaults } from '../defaults.js';

const env: ListenerEnv = { vipAddresses: ['10.0.0.5'], hasVipSecurityGroups: false, allowTerminatedHttps: true, allowPrometheus: true };

/** Asserts `fn` throws the catalog error with this status and message. */
function refuses(fn: () => unknown, status: number, message: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(isApiError(e), String(e));
    assert.equal(e.message, message);
    assert.equal(e.status, status);
    return true;
  });
}

test('L4 families: the TCP family shares ports, UDP and SCTP have their own', () => {
  assert.equal(l4Protocol('HTTP'), 'TCP');
  assert.equal(l4Protocol('TERMINATED_HTTPS'), 'TCP');
  assert.equal(l4Protocol('PROMETHEUS'), 'TCP');
  assert.equal(l4Protocol('UDP'), 'UDP');
  assert.equal(l4Protocol('SCTP'), 'SCTP');
  const taken = [{ protocol: 'HTTP', protocol_port: 80 }];
  assert.equal(portHolder({ protocol: 'UDP', protocol_port: 80 }, taken), undefined);
  assert.equal(portHolder({ protocol: 'TCP', protocol_port: 81 }, taken), undefined);
  assert.deepEqual(portHolder({ protocol: 'TCP', protocol_port: 80 }, taken), taken[0]);
  refuses(() => assertPortFree({ protocol: 'TCP', protocol_port: 80 }, taken), 409, 'Another Listener on this Load Balancer is already using protocol HTTP and protocol_port 80');
});

test('listener → pool protocol matrix', () => {
  assertPoolProtocolAllowed('TCP', 'HTTP');
  assertPoolProtocolAllowed('HTTPS', 'TCP');
  assertPoolProtocolAllowed('TERMINATED_HTTPS', 'PROXYV2');
  assertPoolProtocolAllowed('UDP', 'UDP');
  refuses(() => assertPoolProtocolAllowed('HTTP', 'TCP'), 400, "Validation failure: The pool protocol 'TCP' is invalid while the listener protocol is 'HTTP'.");
  refuses(() => assertPoolProtocolAllowed('UDP', 'TCP'), 400, "Validation failure: The pool protocol 'TCP' is invalid while the listener protocol is 'UDP'.");
  refuses(() => assertPoolProtocolAllowed('PROMETHEUS', 'HTTP'), 400, 'Protocol PROMETHEUS listeners cannot have child objects.');
});

test('create applies defaults; TLS defaults only for TERMINATED_HTTPS', () => {
  const http = listenerSpecForCreate({ protocol: 'HTTP', protocol_port: 80 }, env);
  assert.equal(http.connection_limit, -1);
  assert.equal(http.timeout_client_data, 50000);
  assert.equal(http.timeout_member_connect, 5000);
  assert.equal(http.timeout_tcp_inspect, 0);
  assert.deepEqual(http.insert_headers, {});
  assert.deepEqual(http.sni_container_refs, []);
  assert.equal(http.allowed_cidrs, null);
  assert.equal(http.tls_ciphers, null);
  assert.equal(http.tls_versions, null);
  assert.equal(http.client_authentication, 'NONE');
  const https = listenerSpecForCreate({ protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: 'ref' }, env);
  assert.equal(https.tls_ciphers, ListenerDefaults.tls_ciphers);
  assert.deepEqual(https.tls_versions, ['TLSv1.2', 'TLSv1.3']);
  assert.deepEqual(https.alpn_protocols, ['h2', 'http/1.1', 'http/1.0']);
  // An explicit null on create means "default", too.
  assert.equal(listenerSpecForCreate({ protocol: 'HTTP', protocol_port: 80, connection_limit: null }, env).connection_limit, -1);
});

test('TLS reference rules per protocol', () => {
  refuses(() => listenerSpecForCreate({ protocol: 'TERMINATED_HTTPS', protocol_port: 443 }, env), 400,
    'Validation failure: An SNI or default certificate container reference must be provided for TERMINATED_HTTPS protocol listeners.');
  assert.ok(listenerSpecForCreate({ protocol: 'TERMINATED_HTTPS', protocol_port: 443, sni_container_refs: ['a'] }, env));
  refuses(() => listenerSpecForCreate({ protocol: 'HTTP', protocol_port: 80, default_tls_container_ref: 'x' }, env), 400,
    'Validation failure: Certificate container references are not allowed on HTTP protocol listeners.');
  refuses(() => listenerSpecForCreate({ protocol: 'UDP', protocol_port: 53, default_tls_container_ref: 'x' }, env), 400,
    'Validation failure: UDP protocol listener does not support TLS.');
  refuses(() => listenerSpecForCreate({ protocol: 'SCTP', protocol_port: 53, insert_headers: { 'X-Forwarded-For': 'true' } }, env), 400,
    'Validation failure: SCTP protocol listener does not support TLS.');
  refuses(() => listenerSpecForCreate({ protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: 'a', client_authentication: 'MANDATORY' }, env), 400,
    'Validation failure: Client authentication setting MANDATORY requires a client CA container reference.');
  refuses(() => listenerSpecForCreate({ protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: 'a', client_crl_container_ref: 'crl' }, env), 400,
    'Validation failure: A client authentication CA reference is required to specify a client authentication revocation list.');
  // PROMETHEUS may terminate TLS when given a certificate.
  assert.ok(listenerSpecForCreate({ protocol: 'PROMETHEUS', protocol_port: 9100, default_tls_container_ref: 'a' }, env));
  refuses(() => listenerSpecForCreate({ protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: 'a' }, { ...env, allowTerminatedHttps: false }), 400,
    'The selected protocol is not allowed in this deployment: TERMINATED_HTTPS');
});

test('TLS version and ALPN lists', () => {
  const base = { protocol: 'TERMINATED_HTTPS' as const, protocol_port: 443, default_tls_container_ref: 'a' };
  refuses(() => listenerSpecForCreate({ ...base, tls_versions: [] }, env), 400,
    'Validation failure: Empty TLS version list. Either specify at least one TLS version or remove this parameter to use the default.');
  refuses(() => listenerSpecForCreate({ ...base, tls_versions: ['TLSv9'] }, env), 400, 'Validation failure: Invalid TLS versions: TLSv9');
  refuses(() => listenerSpecForCreate({ ...base, alpn_protocols: [] }, env), 400,
    'Validation failure: Empty ALPN protocol list. Either specify at least one ALPN protocol or remove this parameter to use the default.');
  refuses(() => listenerSpecForCreate({ ...base, alpn_protocols: ['h3'] }, env), 400, 'Validation failure: Invalid ALPN protocol: h3');
});

test('insert_headers rules', () => {
  validateInsertHeaders('HTTP', { 'X-Forwarded-For': 'true' });
  validateInsertHeaders('TERMINATED_HTTPS', { 'X-SSL-Client-DN': 'true' });
  validateInsertHeaders('TCP', {});
  refuses(() => validateInsertHeaders('TCP', { 'X-Forwarded-For': 'true' }), 400, 'insert-headers is not a valid option for a TCP protocol listener.');
  refuses(() => validateInsertHeaders('HTTP', { 'X-Bogus': 'true' }), 400, "['X-Bogus'] is not a valid option for insert_headers");
  refuses(() => validateInsertHeaders('HTTP', { 'X-Forwarded-For': 'true', 'X-SSL-Client-CN': 'true' }), 400, "['X-SSL-Client-CN'] is not a valid option for HTTP protocol listener.");
});

test('allowed_cidrs: normalised, deduplicated, null when empty, family checked', () => {
  assert.equal(normaliseAllowedCidrs(null, env), null);
  assert.equal(normaliseAllowedCidrs([], env), null);
  assert.deepEqual(normaliseAllowedCidrs(['10.0.0.5/24', '10.0.0.0/24', '192.168.1.1/32'], env), ['10.0.0.0/24', '192.168.1.1/32']);
  refuses(() => normaliseAllowedCidrs(['2001:db8::/32'], env), 400, "Validation failure: CIDR 2001:db8::/32 IP version incompatible with all VIPs ['10.0.0.5'] IP version.");
  assert.deepEqual(normaliseAllowedCidrs(['2001:db8::1/32'], { ...env, vipAddresses: ['10.0.0.5', '2001:db8::5'] }), ['2001:db8::/32']);
  refuses(() => normaliseAllowedCidrs(['10.0.0.0/8'], { ...env, hasVipSecurityGroups: true }), 400,
    'Validation failure: Allowed CIDRs are not allowed when using custom VIP Security Groups.');
});

test('HSTS only on TERMINATED_HTTPS, and the flags need a max age', () => {
  refuses(() => listenerSpecForCreate({ protocol: 'HTTP', protocol_port: 80, hsts_max_age: 10 }, env), 400,
    'Validation failure: The HSTS feature can only be used for listeners using the TERMINATED_HTTPS protocol.');
  refuses(() => listenerSpecForCreate({ protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: 'a', hsts_preload: true }, env), 400,
    'Validation failure: HSTS configuration options hsts_include_subdomains and hsts_preload only make sense if hsts_max_age is set as well.');
  const ok = listenerSpecForCreate({ protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: 'a', hsts_max_age: 3600, hsts_preload: true }, env);
  assert.equal(ok.hsts_max_age, 3600);
  assert.equal(ok.hsts_preload, true);
});

test('update: omitted keeps, null resets to the default, the merged listener is judged', () => {
  const stored = listenerSpecForCreate({ protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: 'a', connection_limit: 5, tls_versions: ['TLSv1.3'] }, env);
  const kept = listenerSpecForUpdate(stored, { timeout_client_data: 1 }, env);
  assert.equal(kept.connection_limit, 5);
  assert.equal(kept.timeout_client_data, 1);
  const reset = listenerSpecForUpdate(stored, { connection_limit: null, tls_versions: null }, env);
  assert.equal(reset.connection_limit, -1);
  assert.deepEqual(reset.tls_versions, ['TLSv1.2', 'TLSv1.3']);
  refuses(() => listenerSpecForUpdate(stored, { default_tls_container_ref: null }, env), 400,
    'Validation failure: An SNI or default certificate container reference must be provided for TERMINATED_HTTPS protocol listeners.');
  const udp = listenerSpecForCreate({ protocol: 'UDP', protocol_port: 53 }, env);
  refuses(() => listenerSpecForUpdate(udp, { insert_headers: { 'X-Forwarded-For': 'true' } }, env), 400,
    'Validation failure: UDP protocol listener does not support TLS or header insertion.');
  assert.deepEqual(listenerSpecForUpdate(udp, { allowed_cidrs: ['10.1.2.3/16'] }, env).allowed_cidrs, ['10.1.0.0/16']);
});

test('helpers: withDefaults and pyList', () => {
  const defaults = { a: 1, b: 2 };
  assert.deepEqual(withDefaults({ a: 5, b: 6 }, { a: null, b: undefined }, defaults), { a: 1, b: 6 });
  assert.equal(pyList(['x', 'y']), "['x', 'y']");
});

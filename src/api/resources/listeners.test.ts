import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, admin, memberA, memberB, readerA, type Harness } from '../../../test/support/harness.js';
import { VIP_SUBNET_ID } from '../../config.js';
import { consumersOf, deleteSecret, grantRead, storeContainer, storeSecret, WITH_KEY_MANAGER } from '../../../test/support/tls-secrets.js';
import { createTestPki, type IssuedCert, type TestPki } from '../../../test/support/test-pki.js';

let h: Harness;
let pki: TestPki;
/** Project A's: a PKCS#12 bundle of `www`, containers of `api` and `img`. */
let www: IssuedCert;
let p12: string;
let apiContainer: string;
let imgContainer: string;
before(async () => {
  h = await startHarness(WITH_KEY_MANAGER);
  pki = createTestPki();
  www = pki.leaf({ cn: 'www.project-a.example', dnsNames: ['www.project-a.example'], key: 'ec-p256' });
  const api = pki.leaf({ cn: 'api.project-a.example', dnsNames: ['api.project-a.example'], key: 'ec-p256' });
  const img = pki.leaf({ cn: 'img.project-a.example', dnsNames: ['img.project-a.example'], key: 'ec-p256' });
  p12 = await storeSecret(h, memberA, pki.pkcs12({ key: www, certs: [www, pki.intermediate] }));
  apiContainer = await storeContainer(h, memberA, { certificate: api.certPem, private_key: api.keyPem, intermediates: pki.intermediate.certPem });
  imgContainer = await storeContainer(h, memberA, { certificate: img.certPem, private_key: img.keyPem });
});
after(async () => {
  await h.close();
  pki.remove();
});

async function activeLb(): Promise<string> {
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } }, as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  const id = r.json().loadbalancer.id;
  assert.equal(await h.settled(id), 'ACTIVE');
  return id;
}

async function createListener(lbId: string, body: Record<string, unknown>) {
  const r = await h.request('POST', '/v2/lbaas/listeners', { body: { listener: { loadbalancer_id: lbId, ...body } }, as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  await h.settled(lbId);
  return r.json().listener;
}

const status = async (table: 'load_balancer' | 'listener' | 'pool', id: string) =>
  (await h.runtime.db.kysely.selectFrom(table).select('provisioning_status').where('id', '=', id).executeTakeFirstOrThrow()).provisioning_status;

test('create renders every default, locks the LB, then settles ACTIVE (OFFLINE under noop)', async () => {
  const lbId = await activeLb();
  const r = await h.request('POST', '/v2/lbaas/listeners', { body: { listener: { loadbalancer_id: lbId, protocol: 'HTTP', protocol_port: '80', tags: ['t'] } }, as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  const l = r.json().listener;
  assert.equal(l.provisioning_status, 'PENDING_CREATE');
  assert.equal(l.operating_status, 'OFFLINE');
  assert.equal(l.protocol_port, 80);
  assert.equal(l.name, '');
  assert.equal(l.description, '');
  assert.equal(l.admin_state_up, true);
  assert.equal(l.connection_limit, -1);
  assert.equal(l.timeout_client_data, 50000);
  assert.equal(l.timeout_member_connect, 5000);
  assert.equal(l.timeout_member_data, 50000);
  assert.equal(l.timeout_tcp_inspect, 0);
  assert.deepEqual(l.insert_headers, {});
  assert.deepEqual(l.sni_container_refs, []);
  assert.equal(l.default_tls_container_ref, null);
  assert.equal(l.default_pool_id, null);
  assert.equal(l.allowed_cidrs, null);
  assert.equal(l.tls_ciphers, null);
  assert.equal(l.tls_versions, null);
  assert.equal(l.alpn_protocols, null);
  assert.equal(l.client_authentication, 'NONE');
  assert.equal(l.hsts_max_age, null);
  assert.equal(l.hsts_include_subdomains, false);
  assert.equal(l.hsts_preload, false);
  assert.deepEqual(l.loadbalancers, [{ id: lbId }]);
  assert.deepEqual(l.l7policies, []);
  assert.deepEqual(l.tags, ['t']);
  assert.equal(l.tenant_id, l.project_id);
  assert.equal(l.updated_at, null);
  assert.equal(await h.settled(lbId), 'ACTIVE');
  const got = (await h.request('GET', `/v2.0/lbaas/listeners/${l.id}`, { as: memberA })).json().listener;
  assert.equal(got.provisioning_status, 'ACTIVE');
  assert.equal(got.operating_status, 'OFFLINE', 'noop: nothing reports health');
  const lb = (await h.request('GET', `/v2/lbaas/loadbalancers/${lbId}`, { as: memberA })).json().loadbalancer;
  assert.deepEqual(lb.listeners, [{ id: l.id }]);
});

test('TERMINATED_HTTPS with a PKCS#12 secret and SNI containers gets the TLS defaults and shows the refs as given', async () => {
  const lbId = await activeLb();
  const l = await createListener(lbId, { protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: p12, sni_container_refs: [apiContainer, imgContainer], insert_headers: { 'X-Forwarded-For': 'true', 'X-SSL-Client-CN': 'true' }, allowed_cidrs: ['127.16.3.4/16'] });
  assert.equal(l.default_tls_container_ref, p12);
  assert.deepEqual(l.sni_container_refs, [apiContainer, imgContainer]);
  assert.equal(l.tls_versions.join(','), 'TLSv1.2,TLSv1.3');
  assert.deepEqual(l.alpn_protocols, ['h2', 'http/1.1', 'http/1.0']);
  assert.match(l.tls_ciphers, /^TLS_AES_256_GCM_SHA384:/);
  assert.deepEqual(l.allowed_cidrs, ['127.16.0.0/16']);
  assert.deepEqual(l.insert_headers, { 'X-Forwarded-For': 'true', 'X-SSL-Client-CN': 'true' });
});

test('ports are unique per L4 family', async () => {
  const lbId = await activeLb();
  await createListener(lbId, { protocol: 'HTTP', protocol_port: 80 });
  const clash = await h.request('POST', '/v2/lbaas/listeners', { body: { listener: { loadbalancer_id: lbId, protocol: 'TCP', protocol_port: 80 } }, as: memberA });
  assert.equal(clash.statusCode, 409);
  assert.equal(clash.json().faultstring, 'Another Listener on this Load Balancer is already using protocol HTTP and protocol_port 80');
  assert.equal(await status('load_balancer', lbId), 'ACTIVE', 'a refused create leaves the LB unlocked');
  await createListener(lbId, { protocol: 'UDP', protocol_port: 80 });
});

test('invalid input is a 400 (or 404 for a missing LB) and writes nothing', async () => {
  const lbId = await activeLb();
  const count = async () => Number((await h.runtime.db.kysely.selectFrom('listener').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  const before = await count();
  const missing = '11111111-2222-3333-4444-555555555555';
  const cases: Array<[Record<string, unknown>, number, string]> = [
    [{ protocol_port: 80 }, 400, "Invalid input for field/attribute protocol. Value: 'None'. Mandatory field missing."],
    [{ protocol: 'HTTP', protocol_port: 0 }, 400, "Invalid input for field/attribute protocol_port. Value: '0'. Value should be greater or equal to 1"],
    [{ protocol: 'FTP', protocol_port: 21 }, 400, "Invalid input for field/attribute protocol. Value: 'FTP'. Value should be one of: TCP, HTTP, HTTPS, TERMINATED_HTTPS, UDP, SCTP, PROMETHEUS"],
    [{ protocol: 'HTTP', protocol_port: 80, bogus: 1 }, 400, 'Unknown attribute for argument listener_.listener: bogus'],
    [{ protocol: 'TERMINATED_HTTPS', protocol_port: 443 }, 400, 'Validation failure: An SNI or default certificate container reference must be provided for TERMINATED_HTTPS protocol listeners.'],
    [{ protocol: 'TCP', protocol_port: 80, insert_headers: { 'X-Forwarded-For': 'true' } }, 400, 'insert-headers is not a valid option for a TCP protocol listener.'],
    [{ protocol: 'UDP', protocol_port: 53, default_tls_container_ref: 'x' }, 400, 'Validation failure: UDP protocol listener does not support TLS.'],
    [{ protocol: 'HTTP', protocol_port: 80, sni_container_refs: ['x'] }, 400, 'Validation failure: Certificate container references are not allowed on HTTP protocol listeners.'],
    [{ protocol: 'HTTP', protocol_port: 80, allowed_cidrs: ['10.0.0.0/33'] }, 400, "Invalid input for field/attribute allowed_cidrs. Value: '10.0.0.0/33'. Value should be IPv4 or IPv6 CIDR format"],
    [{ protocol: 'HTTP', protocol_port: 80, allowed_cidrs: ['2001:db8::/64'] }, 400, `Validation failure: CIDR 2001:db8::/64 IP version incompatible with all VIPs ['${(await h.request('GET', `/v2/lbaas/loadbalancers/${lbId}`, { as: memberA })).json().loadbalancer.vip_address}'] IP version.`],
    [{ protocol: 'HTTP', protocol_port: 80, hsts_max_age: 5 }, 400, 'Validation failure: The HSTS feature can only be used for listeners using the TERMINATED_HTTPS protocol.'],
    [{ protocol: 'HTTP', protocol_port: 80, default_pool_id: missing }, 404, `Pool ${missing} not found.`],
  ];
  for (const [body, code, message] of cases) {
    const r = await h.request('POST', '/v2/lbaas/listeners', { body: { listener: { loadbalancer_id: lbId, ...body } }, as: memberA });
    assert.equal(r.statusCode, code, JSON.stringify(body));
    assert.deepEqual(r.json(), { faultcode: 'Client', faultstring: message, debuginfo: null });
  }
  const noLb = await h.request('POST', '/v2/lbaas/listeners', { body: { listener: { loadbalancer_id: missing, protocol: 'HTTP', protocol_port: 80 } }, as: memberA });
  assert.equal(noLb.statusCode, 404);
  assert.equal(noLb.json().faultstring, `Load Balancer ${missing} not found.`);
  assert.equal(await count(), before);
  assert.equal(await status('load_balancer', lbId), 'ACTIVE');
});

test('a locked load balancer refuses child changes with 409', async () => {
  const lbId = await activeLb();
  await h.runtime.db.kysely.updateTable('load_balancer').set({ provisioning_status: 'PENDING_UPDATE' }).where('id', '=', lbId).execute();
  const r = await h.request('POST', '/v2/lbaas/listeners', { body: { listener: { loadbalancer_id: lbId, protocol: 'HTTP', protocol_port: 80 } }, as: memberA });
  assert.equal(r.statusCode, 409);
  assert.equal(r.json().faultstring, `Load Balancer ${lbId} is immutable and cannot be updated.`);
  await h.runtime.db.kysely.updateTable('load_balancer').set({ provisioning_status: 'ACTIVE' }).where('id', '=', lbId).execute();
});

test('update: null resets, PENDING_UPDATE on listener and LB, default pool checks', async () => {
  const lbId = await activeLb();
  const l = await createListener(lbId, { protocol: 'HTTP', protocol_port: 80, connection_limit: 10, name: 'a' });
  const tcpPool = await h.request('POST', '/v2/lbaas/pools', { body: { pool: { loadbalancer_id: lbId, protocol: 'TCP', lb_algorithm: 'ROUND_ROBIN' } }, as: memberA });
  assert.equal(tcpPool.statusCode, 201, tcpPool.body);
  await h.settled(lbId);
  const incompatible = await h.request('PUT', `/v2/lbaas/listeners/${l.id}`, { body: { listener: { default_pool_id: tcpPool.json().pool.id } }, as: memberA });
  assert.equal(incompatible.statusCode, 400);
  assert.equal(incompatible.json().faultstring, "Validation failure: The pool protocol 'TCP' is invalid while the listener protocol is 'HTTP'.");
  assert.equal(await status('load_balancer', lbId), 'ACTIVE');
  const r = await h.request('PUT', `/v2/lbaas/listeners/${l.id}`, { body: { listener: { connection_limit: null, name: null, timeout_client_data: 7, allowed_cidrs: ['10.0.0.1/8'] } }, as: memberA });
  assert.equal(r.statusCode, 200, r.body);
  const u = r.json().listener;
  assert.equal(u.connection_limit, -1);
  assert.equal(u.name, '');
  assert.equal(u.timeout_client_data, 7);
  assert.deepEqual(u.allowed_cidrs, ['10.0.0.0/8']);
  assert.equal(u.provisioning_status, 'PENDING_UPDATE');
  assert.match(u.updated_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/);
  assert.equal(await h.settled(lbId), 'ACTIVE');
  const protocolChange = await h.request('PUT', `/v2/lbaas/listeners/${l.id}`, { body: { listener: { protocol: 'TCP' } }, as: memberA });
  assert.equal(protocolChange.statusCode, 400);
  assert.equal(protocolChange.json().faultstring, 'Unknown attribute for argument listener_.listener: protocol');
});

test('delete: PENDING_DELETE, then 404', async () => {
  const lbId = await activeLb();
  const l = await createListener(lbId, { protocol: 'TCP', protocol_port: 22 });
  const r = await h.request('DELETE', `/v2/lbaas/listeners/${l.id}`, { as: memberA });
  assert.equal(r.statusCode, 204);
  assert.equal(r.body, '');
  assert.equal(await h.settled(lbId), 'ACTIVE');
  const gone = await h.request('GET', `/v2/lbaas/listeners/${l.id}`, { as: memberA });
  assert.equal(gone.statusCode, 404);
  assert.equal(gone.json().faultstring, `Listener ${l.id} not found.`);
  assert.equal((await h.request('DELETE', `/v2/lbaas/listeners/${l.id}`, { as: memberA })).statusCode, 404);
});

test('RBAC and listing: project scope, filters, fields, stats', async () => {
  const lbId = await activeLb();
  const l = await createListener(lbId, { protocol: 'HTTP', protocol_port: 8080, name: 'scoped' });
  assert.equal((await h.request('GET', `/v2/lbaas/listeners/${l.id}`, { as: memberB })).statusCode, 403);
  assert.equal((await h.request('PUT', `/v2/lbaas/listeners/${l.id}`, { body: { listener: {} }, as: memberB })).statusCode, 403);
  assert.equal((await h.request('DELETE', `/v2/lbaas/listeners/${l.id}`, { as: readerA })).statusCode, 403);
  const post = await h.request('POST', '/v2/lbaas/listeners', { body: { listener: { loadbalancer_id: lbId, protocol: 'HTTP', protocol_port: 81 } }, as: readerA });
  assert.equal(post.statusCode, 403);
  assert.ok(!(await h.request('GET', '/v2/lbaas/listeners', { as: memberB })).json().listeners.some((x: { id: string }) => x.id === l.id));
  const mine = (await h.request('GET', `/v2/lbaas/listeners?loadbalancer_id=${lbId}&fields=id&fields=name`, { as: readerA })).json();
  assert.deepEqual(mine, { listeners: [{ id: l.id, name: 'scoped' }], listeners_links: [] });
  const byPort = (await h.request('GET', '/v2/lbaas/listeners?protocol_port=8080&admin_state_up=true', { as: admin })).json().listeners;
  assert.ok(byPort.some((x: { id: string }) => x.id === l.id));
  const stats = (await h.request('GET', `/v2/lbaas/listeners/${l.id}/stats`, { as: readerA })).json();
  assert.deepEqual(stats, { stats: { bytes_in: 0, bytes_out: 0, active_connections: 0, total_connections: 0, request_errors: 0 } });
});

test('lists filter by the API name and by the data-model name of the load balancer id', async () => {
  const lbId = await activeLb();
  const listener = await createListener(lbId, { protocol: 'TCP', protocol_port: 7001 });
  await h.settled(lbId);
  for (const key of ['loadbalancer_id', 'load_balancer_id']) {
    const r = await h.request('GET', `/v2/lbaas/listeners?${key}=${lbId}`, { as: memberA });
    assert.equal(r.statusCode, 200, r.body);
    assert.deepEqual(r.json().listeners.map((l: { id: string }) => l.id), [listener.id]);
  }
});

async function lbOf(as: typeof memberA): Promise<string> {
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } }, as });
  assert.equal(r.statusCode, 201, r.body);
  assert.equal(await h.settled(r.json().loadbalancer.id), 'ACTIVE');
  return r.json().loadbalancer.id;
}

const listenersOf = async (lbId: string) => (await h.runtime.db.kysely.selectFrom('listener').select('id').where('load_balancer_id', '=', lbId).execute()).length;

test('another project cannot reference A\'s secrets: 400 naming them, nothing written, nothing of A\'s certificate told; an ACL grant lets it', async () => {
  const lbB = await lbOf(memberB);
  const attempt = () => h.request('POST', '/v2/lbaas/listeners', {
    as: memberB,
    body: { listener: { loadbalancer_id: lbB, protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: p12, sni_container_refs: [apiContainer] } },
  });
  const denied = await attempt();
  assert.equal(denied.statusCode, 400, denied.body);
  assert.deepEqual(denied.json(), { faultcode: 'Client', faultstring: `Could not retrieve certificate: ['${apiContainer}', '${p12}']`, debuginfo: null });
  for (const secretDetail of [www.cn, 'api.project-a.example', 'Ostia Test']) assert.ok(!denied.body.includes(secretDetail), secretDetail);
  assert.equal(await listenersOf(lbB), 0);
  assert.equal(await status('load_balancer', lbB), 'ACTIVE');

  // The harness gives every caller one user id: A grants read to it, and B's project may use the secret.
  const shared = await storeSecret(h, memberA, pki.pkcs12({ key: www, certs: [www] }));
  await grantRead(h, memberA, shared, ['u-test']);
  const accepted = await h.request('POST', '/v2/lbaas/listeners', {
    as: memberB,
    body: { listener: { loadbalancer_id: lbB, protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: shared } },
  });
  assert.equal(accepted.statusCode, 201, accepted.body);
});

test('a certificate that does not fit its key, or garbage, is a 400 naming the reference', async () => {
  const lbId = await activeLb();
  const mismatched = await storeContainer(h, memberA, { certificate: www.certPem, private_key: pki.leaf({ cn: 'x', key: 'ec-p256' }).keyPem });
  const garbage = await storeSecret(h, memberA, 'hello, I am not a certificate');
  for (const [ref, reason] of [[mismatched, 'the certificate and the private key do not match'], [garbage, 'the secret is neither a PKCS#12 bundle nor PEM']]) {
    const r = await h.request('POST', '/v2/lbaas/listeners', { as: memberA, body: { listener: { loadbalancer_id: lbId, protocol: 'TERMINATED_HTTPS', protocol_port: 443, sni_container_refs: [ref] } } });
    assert.equal(r.statusCode, 400, r.body);
    assert.equal(r.json().faultstring, `Invalid TLS reference ${ref}: ${reason}`);
  }
  assert.equal(await listenersOf(lbId), 0);
});

test('client authentication with a CA and a CRL it signed; a CRL of another CA is refused', async () => {
  const lbId = await activeLb();
  const ca = await storeSecret(h, memberA, pki.root.certPem);
  const crl = await storeSecret(h, memberA, pki.crl(pki.root));
  const foreignCrl = await storeSecret(h, memberA, pki.crl(pki.ca('Another CA')));
  const body = (crlRef: string) => ({ listener: { loadbalancer_id: lbId, protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: p12, client_authentication: 'MANDATORY', client_ca_tls_container_ref: ca, client_crl_container_ref: crlRef } });
  const refused = await h.request('POST', '/v2/lbaas/listeners', { as: memberA, body: body(foreignCrl) });
  assert.equal(refused.statusCode, 400, refused.body);
  assert.equal(refused.json().faultstring, `Invalid TLS reference ${foreignCrl}: the CRL is not signed by a CA certificate of ${ca}`);
  const r = await h.request('POST', '/v2/lbaas/listeners', { as: memberA, body: body(crl) });
  assert.equal(r.statusCode, 201, r.body);
  assert.equal(r.json().listener.client_ca_tls_container_ref, ca);
  assert.equal(r.json().listener.client_crl_container_ref, crl);
  assert.deepEqual(await consumersOf(h, memberA, crl), [`octavia listener/${r.json().listener.id}`]);
});

test('an update that touches no reference never asks the key manager; one that re-sets a reference does', async () => {
  const lbId = await activeLb();
  const doomed = await storeSecret(h, memberA, pki.pkcs12({ key: www, certs: [www] }));
  const l = await createListener(lbId, { protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: doomed });
  // The secret is gone: any look-up would fail, so a 200 proves none was made.
  await deleteSecret(h, memberA, doomed);
  const renamed = await h.request('PUT', `/v2/lbaas/listeners/${l.id}`, { as: memberA, body: { listener: { name: 'renamed', connection_limit: 5 } } });
  assert.equal(renamed.statusCode, 200, renamed.body);
  assert.equal(renamed.json().listener.default_tls_container_ref, doomed);
  await h.settled(lbId);
  const resent = await h.request('PUT', `/v2/lbaas/listeners/${l.id}`, { as: memberA, body: { listener: { default_tls_container_ref: doomed } } });
  assert.equal(resent.statusCode, 400, resent.body);
  assert.equal(resent.json().faultstring, `Could not retrieve certificate: ['${doomed}']`);
});

test('consumers: registered at create; an update registers the new at once and releases the replaced once its job ends; released when the delete settles', async () => {
  const lbId = await activeLb();
  const l = await createListener(lbId, { protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: p12, sni_container_refs: [apiContainer] });
  const me = `octavia listener/${l.id}`;
  assert.ok((await consumersOf(h, memberA, p12)).includes(me));
  assert.ok((await consumersOf(h, memberA, apiContainer)).includes(me));

  const swapped = await h.request('PUT', `/v2/lbaas/listeners/${l.id}`, { as: memberA, body: { listener: { sni_container_refs: [imgContainer] } } });
  assert.equal(swapped.statusCode, 200, swapped.body);
  assert.ok((await consumersOf(h, memberA, imgContainer)).includes(me));
  assert.equal(await h.settled(lbId), 'ACTIVE');
  await released(apiContainer, me);
  assert.ok((await consumersOf(h, memberA, p12)).includes(me));

  assert.equal((await h.request('DELETE', `/v2/lbaas/listeners/${l.id}`, { as: memberA })).statusCode, 204);
  assert.equal(await h.settled(lbId), 'ACTIVE');
  // The worker releases once its job has finished, a moment after the tree settles.
  for (const ref of [p12, imgContainer]) await released(ref, me);
});

async function released(ref: string, consumer: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while ((await consumersOf(h, memberA, ref)).includes(consumer)) {
    if (Date.now() > deadline) assert.fail(`${consumer} still consumes ${ref}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, admin, memberA, memberB, readerA, type Harness } from '../../../test/support/harness.js';
import { VIP_SUBNET_ID } from '../../config.js';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

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

test('create renders every default, locks the LB, then settles ACTIVE/ONLINE', async () => {
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
  assert.equal(got.operating_status, 'ONLINE');
  const lb = (await h.request('GET', `/v2/lbaas/loadbalancers/${lbId}`, { as: memberA })).json().loadbalancer;
  assert.deepEqual(lb.listeners, [{ id: l.id }]);
});

test('TERMINATED_HTTPS gets the TLS defaults; refs are accepted as opaque strings', async () => {
  const lbId = await activeLb();
  const l = await createListener(lbId, { protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: 'https://kms.example/v1/containers/abc', sni_container_refs: ['s1'], insert_headers: { 'X-Forwarded-For': 'true', 'X-SSL-Client-CN': 'true' }, allowed_cidrs: ['127.16.3.4/16'] });
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
    [{ protocol: 'HTTP', protocol_port: 80, bogus: 1 }, 400, 'Unknown attribute for argument listener: bogus'],
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
  assert.equal(protocolChange.json().faultstring, 'Unknown attribute for argument listener: protocol');
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

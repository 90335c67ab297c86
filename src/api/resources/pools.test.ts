import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, memberA, memberB, readerA, type Harness } from '../../../test/support/harness.js';
import { MEMBER_SUBNET_ID, VIP_SUBNET_ID } from '../../config.js';
import { settleSuccess } from '../../db/lb-tree.js';
import { consumersOf, storeContainer, storeSecret, WITH_KEY_MANAGER } from '../../../test/support/tls-secrets.js';
import { createTestPki, type TestPki } from '../../../test/support/test-pki.js';

let h: Harness;
/** No worker: pending states stay visible until the test settles the tree itself. */
let quiet: Harness;
let pki: TestPki;
before(async () => {
  h = await startHarness(WITH_KEY_MANAGER);
  quiet = await startHarness();
  await quiet.runtime.worker?.close();
  pki = createTestPki();
});
after(async () => {
  await h.close();
  await quiet.close();
  pki.remove();
});

async function activeLb(): Promise<string> {
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } }, as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  const id = r.json().loadbalancer.id;
  assert.equal(await h.settled(id), 'ACTIVE');
  return id;
}

/** POSTs under /v2/lbaas/<path> as memberA, expects 201 and waits for the LB to settle. */
async function created(lbId: string, path: string, body: Record<string, unknown>) {
  const r = await h.request('POST', `/v2/lbaas/${path}`, { body, as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  await h.settled(lbId);
  return Object.values(r.json())[0] as Record<string, any>;
}

const status = async (table: 'load_balancer' | 'listener' | 'pool', id: string, on = h) =>
  (await on.runtime.db.kysely.selectFrom(table).select('provisioning_status').where('id', '=', id).executeTakeFirstOrThrow()).provisioning_status;

/** In the worker-less harness: POST, expect 201, then settle the tree as a finished job would. */
async function quietCreate(lbId: string | null, path: string, body: Record<string, unknown>) {
  const r = await quiet.request('POST', `/v2/lbaas/${path}`, { body, as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  const obj = Object.values(r.json())[0] as Record<string, any>;
  await settleSuccess(quiet.runtime.db.kysely, lbId ?? obj.id);
  return obj;
}

test('create on a load balancer: defaults and relations', async () => {
  const lbId = await activeLb();
  const r = await h.request('POST', '/v2/lbaas/pools', { body: { pool: { loadbalancer_id: lbId, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' } }, as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  const p = r.json().pool;
  assert.equal(p.provisioning_status, 'PENDING_CREATE');
  assert.equal(p.operating_status, 'OFFLINE');
  assert.equal(p.name, '');
  assert.equal(p.description, '');
  assert.equal(p.admin_state_up, true);
  assert.equal(p.session_persistence, null);
  assert.equal(p.tls_enabled, false);
  assert.equal(p.tls_container_ref, null);
  assert.equal(p.tls_ciphers, null);
  assert.equal(p.tls_versions, null);
  assert.equal(p.alpn_protocols, null);
  assert.equal(p.healthmonitor_id, null);
  assert.deepEqual(p.members, []);
  assert.deepEqual(p.listeners, []);
  assert.deepEqual(p.loadbalancers, [{ id: lbId }]);
  assert.deepEqual(p.tags, []);
  assert.equal(p.tenant_id, p.project_id);
  assert.equal(await h.settled(lbId), 'ACTIVE');
  const got = (await h.request('GET', `/v2/lbaas/pools/${p.id}`, { as: memberA })).json().pool;
  assert.equal(got.provisioning_status, 'ACTIVE');
  assert.equal(got.operating_status, 'OFFLINE', 'noop: nothing reports health');
});

test('create on a listener makes it the default pool and marks the listener; a second one is a 409', async () => {
  const lb = await quietCreate(null, 'loadbalancers', { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } });
  const l = await quietCreate(lb.id, 'listeners', { listener: { loadbalancer_id: lb.id, protocol: 'HTTP', protocol_port: 80 } });
  const r = await quiet.request('POST', '/v2/lbaas/pools', { body: { pool: { listener_id: l.id, protocol: 'HTTP', lb_algorithm: 'LEAST_CONNECTIONS' } }, as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  const p = r.json().pool;
  assert.deepEqual(p.listeners, [{ id: l.id }]);
  assert.deepEqual(p.loadbalancers, [{ id: lb.id }]);
  assert.equal(await status('listener', l.id, quiet), 'PENDING_UPDATE');
  assert.equal(await status('load_balancer', lb.id, quiet), 'PENDING_UPDATE');
  await settleSuccess(quiet.runtime.db.kysely, lb.id);
  assert.equal((await quiet.request('GET', `/v2/lbaas/listeners/${l.id}`, { as: memberA })).json().listener.default_pool_id, p.id);
  const again = await quiet.request('POST', '/v2/lbaas/pools', { body: { pool: { listener_id: l.id, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' } }, as: memberA });
  assert.equal(again.statusCode, 409);
  assert.equal(again.json().faultstring, 'This listener already has a default pool');
  const wrongProtocol = await quiet.request('POST', '/v2/lbaas/pools', { body: { pool: { listener_id: l.id, protocol: 'TCP', lb_algorithm: 'ROUND_ROBIN' } }, as: memberA });
  assert.equal(wrongProtocol.statusCode, 400);
  assert.equal(wrongProtocol.json().faultstring, "Validation failure: The pool protocol 'TCP' is invalid while the listener protocol is 'HTTP'.");
  assert.equal(await status('load_balancer', lb.id, quiet), 'ACTIVE');
});

test('invalid pools are refused and write nothing', async () => {
  const lbId = await activeLb();
  const count = async () => Number((await h.runtime.db.kysely.selectFrom('pool').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  const before = await count();
  const missing = '11111111-2222-3333-4444-555555555555';
  const base = { protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' };
  const cases: Array<[Record<string, unknown>, number, string]> = [
    [base, 400, 'Validation failure: Must provide at least one of: loadbalancer_id, listener_id'],
    [{ ...base, listener_id: missing }, 404, `Listener ${missing} not found.`],
    [{ ...base, loadbalancer_id: missing }, 404, `Load Balancer ${missing} not found.`],
    [{ loadbalancer_id: lbId, protocol: 'HTTP' }, 400, "Invalid input for field/attribute lb_algorithm. Value: 'None'. Mandatory field missing."],
    [{ ...base, loadbalancer_id: lbId, session_persistence: { type: 'APP_COOKIE' } }, 400, 'Validation failure: Field "cookie_name" must be specified when using the "APP_COOKIE" session persistence type.'],
    [{ ...base, loadbalancer_id: lbId, session_persistence: { type: 'HTTP_COOKIE', cookie_name: 'c' } }, 400, 'Validation failure: Field "cookie_name" can only be specified with session persistence of type "APP_COOKIE".'],
    [{ ...base, loadbalancer_id: lbId, session_persistence: { type: 'SOURCE_IP', persistence_timeout: 5 } }, 400, 'Validation failure: persistence_timeout and persistence_granularity is only for UDP and SCTP protocol pools.'],
    [{ ...base, loadbalancer_id: lbId, session_persistence: { cookie_name: 'c' } }, 400, "Invalid input for field/attribute type. Value: 'None'. Mandatory field missing."],
    [{ ...base, loadbalancer_id: lbId, crl_container_ref: 'crl' }, 400, 'Validation failure: A CA certificate reference is required to specify a revocation list.'],
    [{ ...base, loadbalancer_id: lbId, members: [{ address: '169.254.169.254', protocol_port: 80 }] }, 400, '169.254.169.254 is not a valid option for member address'],
  ];
  for (const [pool, code, message] of cases) {
    const r = await h.request('POST', '/v2/lbaas/pools', { body: { pool }, as: memberA });
    assert.equal(r.statusCode, code, JSON.stringify(pool));
    assert.deepEqual(r.json(), { faultcode: 'Client', faultstring: message, debuginfo: null });
  }
  assert.equal(await count(), before);
  assert.equal(await status('load_balancer', lbId), 'ACTIVE');
});

test('session persistence and backend TLS: rendering, update merge, reset', async () => {
  const lbId = await activeLb();
  const p = await created(lbId, 'pools', { pool: { loadbalancer_id: lbId, protocol: 'HTTP', lb_algorithm: 'SOURCE_IP_PORT', session_persistence: { type: 'APP_COOKIE', cookie_name: 'JSESSIONID' } } });
  assert.deepEqual(p.session_persistence, { type: 'APP_COOKIE', cookie_name: 'JSESSIONID', persistence_timeout: null, persistence_granularity: null });
  const renamed = await h.request('PUT', `/v2/lbaas/pools/${p.id}`, { body: { pool: { session_persistence: { cookie_name: 'other' }, tls_enabled: true } }, as: memberA });
  assert.equal(renamed.statusCode, 200, renamed.body);
  const u = renamed.json().pool;
  assert.equal(u.provisioning_status, 'PENDING_UPDATE');
  assert.deepEqual(u.session_persistence, { type: 'APP_COOKIE', cookie_name: 'other', persistence_timeout: null, persistence_granularity: null });
  assert.equal(u.tls_enabled, true);
  assert.deepEqual(u.tls_versions, ['TLSv1.2', 'TLSv1.3']);
  assert.deepEqual(u.alpn_protocols, ['h2', 'http/1.1', 'http/1.0']);
  await h.settled(lbId);
  const cleared = (await h.request('PUT', `/v2/lbaas/pools/${p.id}`, { body: { pool: { session_persistence: null, description: 'd' } }, as: memberA })).json().pool;
  assert.equal(cleared.session_persistence, null);
  assert.equal(cleared.description, 'd');
  await h.settled(lbId);
  const udp = await created(lbId, 'pools', { pool: { loadbalancer_id: lbId, protocol: 'UDP', lb_algorithm: 'ROUND_ROBIN', session_persistence: { type: 'SOURCE_IP', persistence_timeout: 60, persistence_granularity: '255.255.255.0' } } });
  assert.deepEqual(udp.session_persistence, { type: 'SOURCE_IP', cookie_name: null, persistence_timeout: 60, persistence_granularity: '255.255.255.0' });
  const badUdp = await h.request('PUT', `/v2/lbaas/pools/${udp.id}`, { body: { pool: { session_persistence: { type: 'HTTP_COOKIE' } } }, as: memberA });
  assert.equal(badUdp.statusCode, 400);
  assert.equal(badUdp.json().faultstring, 'Validation failure: Session persistence of type HTTP_COOKIE is not supported for UDP/SCTP protocol pools.');
});

test('pool update and delete put the listeners using it in PENDING_UPDATE', async () => {
  const lb = await quietCreate(null, 'loadbalancers', { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } });
  const l = await quietCreate(lb.id, 'listeners', { listener: { loadbalancer_id: lb.id, protocol: 'TCP', protocol_port: 80 } });
  const p = await quietCreate(lb.id, 'pools', { pool: { listener_id: l.id, protocol: 'TCP', lb_algorithm: 'ROUND_ROBIN' } });
  const r = await quiet.request('PUT', `/v2/lbaas/pools/${p.id}`, { body: { pool: { name: 'x' } }, as: memberA });
  assert.equal(r.statusCode, 200);
  assert.equal(r.json().pool.provisioning_status, 'PENDING_UPDATE');
  assert.equal(await status('listener', l.id, quiet), 'PENDING_UPDATE');
  assert.equal(await status('load_balancer', lb.id, quiet), 'PENDING_UPDATE');
  const locked = await quiet.request('PUT', `/v2/lbaas/pools/${p.id}`, { body: { pool: { name: 'y' } }, as: memberA });
  assert.equal(locked.statusCode, 409);
  assert.equal(locked.json().faultstring, `Load Balancer ${lb.id} is immutable and cannot be updated.`);
  await settleSuccess(quiet.runtime.db.kysely, lb.id);
  const d = await quiet.request('DELETE', `/v2/lbaas/pools/${p.id}`, { as: memberA });
  assert.equal(d.statusCode, 204);
  assert.equal(await status('pool', p.id, quiet), 'PENDING_DELETE');
  assert.equal(await status('listener', l.id, quiet), 'PENDING_UPDATE');
  await settleSuccess(quiet.runtime.db.kysely, lb.id);
  assert.equal((await quiet.request('GET', `/v2/lbaas/pools/${p.id}`, { as: memberA })).statusCode, 404);
  assert.equal((await quiet.request('GET', `/v2/lbaas/listeners/${l.id}`, { as: memberA })).json().listener.default_pool_id, null);
});

test('listeners of a pool include those whose enabled L7 policy with rules redirects to it; such a pool cannot be deleted', async () => {
  const lbId = await activeLb();
  const l = await created(lbId, 'listeners', { listener: { loadbalancer_id: lbId, protocol: 'HTTP', protocol_port: 80 } });
  const p = await created(lbId, 'pools', { pool: { loadbalancer_id: lbId, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' } });
  const ruleless = await created(lbId, 'l7policies', { l7policy: { listener_id: l.id, action: 'REDIRECT_TO_POOL', redirect_pool_id: p.id } });
  assert.deepEqual((await h.request('GET', `/v2/lbaas/pools/${p.id}`, { as: memberA })).json().pool.listeners, []);
  await created(lbId, `l7policies/${ruleless.id}/rules`, { rule: { type: 'PATH', compare_type: 'STARTS_WITH', value: '/api' } });
  assert.deepEqual((await h.request('GET', `/v2/lbaas/pools/${p.id}`, { as: memberA })).json().pool.listeners, [{ id: l.id }]);
  const d = await h.request('DELETE', `/v2/lbaas/pools/${p.id}`, { as: memberA });
  assert.equal(d.statusCode, 409);
  assert.equal(d.json().faultstring, `Pool ${p.id} is in use by L7 policy ${ruleless.id}`);
  assert.equal(await status('load_balancer', lbId), 'ACTIVE');
});

test('POST /pools may carry its health monitor and members', async () => {
  const lbId = await activeLb();
  const p = await created(lbId, 'pools', {
    pool: {
      loadbalancer_id: lbId, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN',
      healthmonitor: { type: 'HTTP', delay: '3', timeout: 1, max_retries: 2 },
      members: [{ address: '127.32.0.5', protocol_port: 8080, subnet_id: MEMBER_SUBNET_ID }, { address: '127.32.0.6', protocol_port: 8080 }],
    },
  });
  assert.equal(p.members.length, 2);
  assert.ok(p.healthmonitor_id);
  const members = (await h.request('GET', `/v2/lbaas/pools/${p.id}/members`, { as: memberA })).json().members;
  assert.deepEqual(members.map((m: { address: string }) => m.address).sort(), ['127.32.0.5', '127.32.0.6']);
});

test('RBAC and listing', async () => {
  const lbId = await activeLb();
  const p = await created(lbId, 'pools', { pool: { loadbalancer_id: lbId, protocol: 'PROXY', lb_algorithm: 'SOURCE_IP', name: 'listed', tags: ['a', 'b'] } });
  assert.equal((await h.request('GET', `/v2/lbaas/pools/${p.id}`, { as: memberB })).statusCode, 403);
  assert.equal((await h.request('PUT', `/v2/lbaas/pools/${p.id}`, { body: { pool: {} }, as: readerA })).statusCode, 403);
  const post = await h.request('POST', '/v2/lbaas/pools', { body: { pool: { loadbalancer_id: lbId, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' } }, as: memberB });
  assert.equal(post.statusCode, 403);
  const listed = (await h.request('GET', `/v2/lbaas/pools?loadbalancer_id=${lbId}&tags=a,b&fields=name`, { as: readerA })).json();
  assert.deepEqual(listed, { pools: [{ name: 'listed' }], pools_links: [] });
  assert.ok(!(await h.request('GET', '/v2/lbaas/pools', { as: memberB })).json().pools.some((x: { id: string }) => x.id === p.id));
});

test('backend TLS by reference: client certificate, CA and CRL resolve for the owner only, and the pool consumes them until deleted', async () => {
  const lbId = await activeLb();
  const client = pki.leaf({ cn: 'client.project-a.example', key: 'ec-p256' });
  const cert = await storeContainer(h, memberA, { certificate: client.certPem, private_key: client.keyPem, intermediates: pki.intermediate.certPem });
  const ca = await storeSecret(h, memberA, pki.root.certPem);
  const crl = await storeSecret(h, memberA, pki.crl(pki.root, [], { der: true }));
  const tls = { tls_enabled: true, tls_container_ref: cert, ca_tls_container_ref: ca, crl_container_ref: crl };

  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } }, as: memberB });
  const lbB = r.json().loadbalancer.id;
  await h.settled(lbB);
  const denied = await h.request('POST', '/v2/lbaas/pools', { as: memberB, body: { pool: { loadbalancer_id: lbB, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', ...tls } } });
  assert.equal(denied.statusCode, 400, denied.body);
  assert.equal(denied.json().faultstring, `Could not retrieve certificate: ['${cert}', '${ca}', '${crl}']`);
  assert.ok(!denied.body.includes('client.project-a.example') && !denied.body.includes('Ostia Test'));

  const p = await created(lbId, 'pools', { pool: { loadbalancer_id: lbId, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', ...tls } });
  assert.deepEqual([p.tls_container_ref, p.ca_tls_container_ref, p.crl_container_ref], [cert, ca, crl]);
  for (const ref of [cert, ca, crl]) assert.deepEqual(await consumersOf(h, memberA, ref), [`octavia pool/${p.id}`]);

  // A new CA must have signed the CRL the pool keeps.
  const otherCa = await storeSecret(h, memberA, pki.ca('Other CA').certPem);
  const mismatch = await h.request('PUT', `/v2/lbaas/pools/${p.id}`, { as: memberA, body: { pool: { ca_tls_container_ref: otherCa } } });
  assert.equal(mismatch.statusCode, 400, mismatch.body);
  assert.equal(mismatch.json().faultstring, `Invalid TLS reference ${crl}: the CRL is not signed by a CA certificate of ${otherCa}`);
  const withoutCrl = await h.request('PUT', `/v2/lbaas/pools/${p.id}`, { as: memberA, body: { pool: { ca_tls_container_ref: otherCa, crl_container_ref: null } } });
  assert.equal(withoutCrl.statusCode, 200, withoutCrl.body);
  assert.deepEqual(await consumersOf(h, memberA, otherCa), [`octavia pool/${p.id}`]);
  assert.equal(await h.settled(lbId), 'ACTIVE');
  // The replaced references are released once the update's job has ended.
  const replacedBy = Date.now() + 5000;
  while ((await consumersOf(h, memberA, ca)).length || (await consumersOf(h, memberA, crl)).length) {
    if (Date.now() > replacedBy) assert.fail('the pool still consumes the references its update replaced');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }

  assert.equal((await h.request('DELETE', `/v2/lbaas/pools/${p.id}`, { as: memberA })).statusCode, 204);
  assert.equal(await h.settled(lbId), 'ACTIVE');
  const deadline = Date.now() + 5000;
  // The worker releases once its job has finished, a moment after the tree settles.
  while ((await consumersOf(h, memberA, cert)).length || (await consumersOf(h, memberA, otherCa)).length) {
    if (Date.now() > deadline) assert.fail('the deleted pool still consumes its references');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
});

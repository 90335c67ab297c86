import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, admin, memberA, memberB, readerA, type Harness } from '../../../test/support/harness.js';
import { VIP_SUBNET_ID, VIP_NETWORK_ID } from '../../config.js';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

async function createLb(body: Record<string, unknown> = {}, as = memberA) {
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, ...body } }, as });
  assert.equal(r.statusCode, 201, r.body);
  return r.json().loadbalancer;
}

test('create returns the full form in PENDING_CREATE, then the worker makes it ACTIVE (OFFLINE under noop)', async () => {
  const lb = await createLb({ name: 'web', tags: ['a', 'b'] });
  assert.equal(lb.provisioning_status, 'PENDING_CREATE');
  assert.equal(lb.operating_status, 'OFFLINE');
  assert.deepEqual(lb.listeners, []);
  assert.deepEqual(lb.pools, []);
  assert.equal(lb.provider, 'noop');
  assert.equal(lb.vip_subnet_id, VIP_SUBNET_ID);
  assert.equal(lb.vip_network_id, VIP_NETWORK_ID);
  assert.match(lb.vip_address, /^127\.16\./);
  assert.equal(lb.tenant_id, lb.project_id);
  assert.match(lb.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/);
  assert.equal(lb.updated_at, null);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  const got = (await h.request('GET', `/v2.0/lbaas/loadbalancers/${lb.id}`, { as: memberA })).json().loadbalancer;
  assert.equal(got.provisioning_status, 'ACTIVE');
  assert.equal(got.operating_status, 'OFFLINE', 'noop: nothing reports health, as with Octavia\'s no-op drivers');
  assert.deepEqual(got.tags, ['a', 'b']);
});

test('two load balancers never share a VIP, and a taken address is a 409', async () => {
  const a = await createLb();
  const b = await createLb();
  assert.notEqual(a.vip_address, b.vip_address);
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, vip_address: a.vip_address } }, as: memberA });
  assert.equal(r.statusCode, 409);
  assert.equal(r.json().faultstring, `The VIP IP address is already in use: ${a.vip_address}`);
});

test('bad input is a 400 with the WSME body and writes nothing', async () => {
  const count = async () => (await h.runtime.db.kysely.selectFrom('load_balancer').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n;
  const before = await count();
  const cases: Array<[unknown, string]> = [
    [{ loadbalancer: {} }, 'Validation failure: VIP must contain one of: vip_port_id, vip_network_id, vip_subnet_id.'],
    [{ loadbalancer: { vip_subnet_id: 'nope' } }, "Invalid input for field/attribute vip_subnet_id. Value: 'nope'. Value should be UUID format"],
    [{ loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, bogus: 1 } }, 'Unknown attribute for argument load_balancer.loadbalancer: bogus'],
    [{ loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, name: 'x'.repeat(256) } }, `Invalid input for field/attribute name. Value: '${'x'.repeat(256)}'. Value should have a maximum character requirement of 255`],
    [{ loadbalancer: { vip_subnet_id: '11111111-2222-3333-4444-555555555555' } }, 'Subnet 11111111-2222-3333-4444-555555555555 not found.'],
    [{ loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, provider: 'amphora' } }, "Provider 'amphora' is not enabled."],
    [{ loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, vip_address: '10.0.0.1' } }, `Validation failure: VIP address 10.0.0.1 is not in subnet ${VIP_SUBNET_ID} (127.16.0.0/16).`],
    [{ loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, vip_address: '127.16.0.0' } }, `IP address 127.16.0.0 is not a valid IP for the specified subnet: it is the network address of subnet ${VIP_SUBNET_ID} (127.16.0.0/16).`],
    [{ loadbalancer: { vip_network_id: VIP_NETWORK_ID, vip_address: '127.16.255.255' } }, `IP address 127.16.255.255 is not a valid IP for the specified subnet: it is the broadcast address of subnet ${VIP_SUBNET_ID} (127.16.0.0/16).`],
  ];
  for (const [body, message] of cases) {
    const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body, as: memberA });
    assert.equal(r.statusCode, 400, JSON.stringify(body));
    assert.deepEqual(r.json(), { faultcode: 'Client', faultstring: message, debuginfo: null });
  }
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: '{not json', as: memberA, headers: { 'content-type': 'application/json' } });
  assert.equal(r.statusCode, 400);
  assert.equal(r.json().faultstring, 'Request is not in valid JSON format');
  assert.equal(await count(), before);
});

test('lenient coercion: 32-hex UUIDs and string booleans', async () => {
  const lb = await createLb({ vip_subnet_id: VIP_SUBNET_ID.replace(/-/g, '').toUpperCase(), admin_state_up: 'off' });
  assert.equal(lb.vip_subnet_id, VIP_SUBNET_ID);
  assert.equal(lb.admin_state_up, false);
});

test('another project gets 403 on show, update and delete; a reader cannot create', async () => {
  const lb = await createLb({}, memberA);
  await h.settled(lb.id);
  for (const [method, body] of [['GET', undefined], ['PUT', { loadbalancer: { name: 'x' } }], ['DELETE', undefined]] as const) {
    const r = await h.request(method, `/v2/lbaas/loadbalancers/${lb.id}`, { body, as: memberB });
    assert.equal(r.statusCode, 403, method);
    assert.equal(r.json().faultstring, 'Policy does not allow this request to be performed.');
  }
  const listB = (await h.request('GET', '/v2/lbaas/loadbalancers', { as: memberB })).json().loadbalancers;
  assert.ok(!listB.some((x: { id: string }) => x.id === lb.id));
  const foreign = await h.request('GET', `/v2/lbaas/loadbalancers?project_id=${lb.project_id}`, { as: memberB });
  assert.equal(foreign.statusCode, 403);
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } }, as: readerA });
  assert.equal(r.statusCode, 403);
  const adminList = (await h.request('GET', '/v2/lbaas/loadbalancers', { as: admin })).json().loadbalancers;
  assert.ok(adminList.some((x: { id: string }) => x.id === lb.id));
});

test('update flips to PENDING_UPDATE with the change visible; a second update while pending is a 409', async () => {
  const lb = await createLb();
  const early = await h.request('PUT', `/v2/lbaas/loadbalancers/${lb.id}`, { body: { loadbalancer: { name: 'n' } }, as: memberA });
  if (early.statusCode === 409) assert.equal(early.json().faultstring, `Invalid state PENDING_CREATE of loadbalancer resource ${lb.id}`);
  await h.settled(lb.id);
  const r = await h.request('PUT', `/v2/lbaas/loadbalancers/${lb.id}`, { body: { loadbalancer: { name: 'renamed', description: null, tags: ['z'] } }, as: memberA });
  assert.equal(r.statusCode, 200);
  const body = r.json().loadbalancer;
  assert.equal(body.name, 'renamed');
  assert.equal(body.description, '');
  assert.deepEqual(body.tags, ['z']);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  const bad = await h.request('PUT', `/v2/lbaas/loadbalancers/${lb.id}`, { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } }, as: memberA });
  assert.equal(bad.statusCode, 400);
  assert.equal(bad.json().faultstring, 'Unknown attribute for argument load_balancer.loadbalancer: vip_subnet_id');
});

test('delete goes PENDING_DELETE then 404, and frees the VIP', async () => {
  const lb = await createLb();
  await h.settled(lb.id);
  const r = await h.request('DELETE', `/v2/lbaas/loadbalancers/${lb.id}?cascade=True`, { as: memberA, headers: { accept: '' } });
  assert.equal(r.statusCode, 204);
  assert.equal(r.body, '');
  assert.equal(await h.settled(lb.id), 'DELETED');
  const gone = await h.request('GET', `/v2/lbaas/loadbalancers/${lb.id}`, { as: memberA });
  assert.equal(gone.statusCode, 404);
  assert.equal(gone.json().faultstring, `Load Balancer ${lb.id} not found.`);
  const ports = await h.runtime.db.kysely.selectFrom('port').select('id').where('device_id', '=', lb.id).execute();
  assert.equal(ports.length, 0);
});

test('lists filter, sort and page with links that keep the filters', async () => {
  const tag = `page-${Date.now()}`;
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await createLb({ name: `p${i}`, tags: [tag] })).id);
  const first = (await h.request('GET', `/v2/lbaas/loadbalancers?tags=${tag}&limit=2&sort=name:desc`, { as: memberA })).json();
  assert.deepEqual(first.loadbalancers.map((l: { name: string }) => l.name), ['p4', 'p3']);
  const next = first.loadbalancers_links.find((l: { rel: string }) => l.rel === 'next');
  assert.ok(next, 'a full page has a next link');
  const url = new URL(next.href);
  assert.equal(url.searchParams.get('tags'), tag);
  const second = (await h.request('GET', `${url.pathname}${url.search}`, { as: memberA })).json();
  assert.deepEqual(second.loadbalancers.map((l: { name: string }) => l.name), ['p2', 'p1']);
  assert.ok(second.loadbalancers_links.some((l: { rel: string }) => l.rel === 'previous'));
  const byName = (await h.request('GET', `/v2/lbaas/loadbalancers?name=p3&fields=id&fields=name`, { as: memberA })).json().loadbalancers;
  assert.deepEqual(byName, [{ id: ids[3], name: 'p3' }]);
  const bad = await h.request('GET', '/v2/lbaas/loadbalancers?bogus=1', { as: memberA });
  assert.equal(bad.statusCode, 400);
  assert.equal(bad.json().faultstring, 'One or more arguments are either duplicate or invalid');
  const badMarker = await h.request('GET', '/v2/lbaas/loadbalancers?marker=nope', { as: memberA });
  assert.equal(badMarker.statusCode, 400);
  const notAny = (await h.request('GET', `/v2/lbaas/loadbalancers?not-tags-any=${tag}`, { as: memberA })).json().loadbalancers;
  assert.ok(!notAny.some((l: { id: string }) => ids.includes(l.id)));
});

test('status tree, stats and trace of a load balancer', async () => {
  const lb = await createLb({ name: 'st' });
  await h.settled(lb.id);
  const s = (await h.request('GET', `/v2/lbaas/loadbalancers/${lb.id}/status`, { as: memberA })).json();
  assert.deepEqual(s, { statuses: { loadbalancer: { id: lb.id, name: 'st', operating_status: 'OFFLINE', provisioning_status: 'ACTIVE', listeners: [] } } });
  const stats = (await h.request('GET', `/v2/lbaas/loadbalancers/${lb.id}/stats`, { as: memberA })).json();
  assert.deepEqual(stats, { stats: { bytes_in: 0, bytes_out: 0, active_connections: 0, total_connections: 0, request_errors: 0 } });
  const trace = (await h.request('GET', `/v2/lbaas/loadbalancers/${lb.id}/trace`, { as: memberA })).json().trace;
  assert.equal(trace[0].operation, 'loadbalancer.create');
  assert.equal(trace[0].step, 'settle-statuses');
  assert.equal(trace[0].error, null);
});

test('failover is admin-only and answers 202', async () => {
  const lb = await createLb();
  await h.settled(lb.id);
  assert.equal((await h.request('PUT', `/v2/lbaas/loadbalancers/${lb.id}/failover`, { as: memberA })).statusCode, 403);
  const r = await h.request('PUT', `/v2/lbaas/loadbalancers/${lb.id}/failover`, { as: admin });
  assert.equal(r.statusCode, 202);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
});

test('routing: version document, /v2 string, 405, pecan 404, 406, 403 without identity', async () => {
  const root = (await h.request('GET', '/', { as: {} })).json();
  const last = root.versions[root.versions.length - 1];
  assert.equal(last.status, 'CURRENT');
  assert.ok(root.versions.slice(0, -1).every((v: { status: string }) => v.status === 'SUPPORTED'));
  assert.equal(root.versions[0].id, 'v2.0');
  assert.equal((await h.request('GET', '/v2')).body, '"v2"');
  const m = await h.request('PATCH', '/v2/lbaas/loadbalancers');
  assert.equal(m.statusCode, 405);
  assert.match(String(m.headers.allow), /GET/);
  const nf = await h.request('GET', '/v2/lbaas/nothing');
  assert.equal(nf.statusCode, 404);
  assert.equal(nf.json().code, 404);
  const na = await h.request('GET', '/v2/lbaas/loadbalancers', { headers: { accept: 'text/html' } });
  assert.equal(na.statusCode, 406);
  // The harness runs Octavia's testing auth strategy: no headers is a caller without roles, which the policy refuses.
  const anonymous = await h.request('GET', '/v2/lbaas/loadbalancers', { as: {} });
  assert.equal(anonymous.statusCode, 403);
  assert.equal(anonymous.json().faultstring, 'Policy does not allow this request to be performed.');
  const json = await h.request('GET', '/v2/lbaas/loadbalancers.json', { as: memberA });
  assert.equal(json.statusCode, 200);
});

test('a token-checking identity mode answers a request without a token with 401 and where to log in', async () => {
  const embedded = await startHarness({ identity: { mode: 'embedded', tokenSecret: 'test-secret' } });
  try {
    const unauth = await embedded.request('GET', '/v2/lbaas/loadbalancers', { as: {} });
    assert.equal(unauth.statusCode, 401);
    assert.equal(unauth.json().error.code, 401);
    assert.match(String(unauth.headers['www-authenticate']), /^Keystone uri="http:\/\/.*\/identity"$/);
    assert.match(String(unauth.headers['x-openstack-request-id']), /^req-/);
    const anonymousMetrics = await embedded.runtime.app!.inject({ method: 'GET', url: '/metrics' });
    assert.equal(anonymousMetrics.statusCode, 401);
  } finally {
    await embedded.close();
  }
});

test('body limits and media types: 413 over 112 KiB, 415 for non-JSON bodies', async () => {
  const big = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, description: 'x'.repeat(120000) } }, as: memberA });
  assert.equal(big.statusCode, 413);
  assert.equal(big.json().faultcode, 'Client');
  const xml = await h.request('POST', '/v2/lbaas/loadbalancers', { body: '<lb/>', as: memberA, headers: { 'content-type': 'application/xml' } });
  assert.equal(xml.statusCode, 415);
  assert.equal(xml.json().faultstring, 'Unknown mimetype: application/xml');
});

test('tenant_id is accepted for project_id, and only admins may create in another project', async () => {
  const other = 'cccccccccccccccccccccccccccccccc';
  const denied = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, tenant_id: other } }, as: memberA });
  assert.equal(denied.statusCode, 403);
  const lb = await createLb({ tenant_id: other }, admin);
  assert.equal(lb.project_id, other);
});

test("additional VIPs at a subnet's broadcast or subnet-router anycast address are refused and leave no port", async () => {
  const v4b = '7d6c5b4a-3f2e-4d1c-8b0a-9f8e7d6c5b4a';
  const v6 = '8e7d6c5b-4a3f-4e2d-9c1b-0a9f8e7d6c5b';
  const own = await startHarness({
    network: {
      networks: [{
        id: VIP_NETWORK_ID, name: 'public', projects: [],
        subnets: [
          { id: VIP_SUBNET_ID, name: 'a', cidr: '127.16.0.0/24', gateway_ip: null, allocation_pools: [{ start: '127.16.0.10', end: '127.16.0.20' }] },
          { id: v4b, name: 'b', cidr: '127.17.0.0/24', gateway_ip: null, allocation_pools: [{ start: '127.17.0.10', end: '127.17.0.20' }] },
          { id: v6, name: 'c', cidr: 'fd00:16::/64', gateway_ip: null, allocation_pools: [{ start: 'fd00:16::10', end: 'fd00:16::20' }] },
        ],
      }],
    },
  });
  try {
    const ports = async () => (await own.runtime.db.kysely.selectFrom('port').select('id').execute()).length;
    const post = (additional_vips: unknown[]) => own.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, additional_vips } }, as: memberA });
    for (const [vip, reserved, subnet] of [[{ subnet_id: v4b, ip_address: '127.17.0.255' }, 'broadcast', v4b], [{ subnet_id: v6, ip_address: 'fd00:16::' }, 'subnet-router anycast', v6]] as const) {
      const r = await post([vip]);
      assert.equal(r.statusCode, 400);
      assert.deepEqual(r.json(), { faultcode: 'Client', faultstring: `IP address ${vip.ip_address} is not a valid IP for the specified subnet: it is the ${reserved} address of subnet ${subnet} (${subnet === v6 ? 'fd00:16::/64' : '127.17.0.0/24'}).`, debuginfo: null });
      assert.equal(await ports(), 0);
    }
    const ok = await post([{ subnet_id: v4b, ip_address: '127.17.0.254' }, { subnet_id: v6, ip_address: 'fd00:16::1' }]);
    assert.equal(ok.statusCode, 201, ok.body);
  } finally {
    await own.close();
  }
});

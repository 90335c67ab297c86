import type { PoolProtocol } from '../../domain/enums.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, admin, memberA, memberB, readerA, PROJECT_B, type Harness } from '../../../test/support/harness.js';
import { activeLoadBalancer, holdJobs, seedListener, seedPool, statusOf, type SeededLb } from '../../../test/support/seed-rows.js';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

const HM = '/v2/lbaas/healthmonitors';

async function createHm(body: Record<string, unknown>, as = memberA) {
  const r = await h.request('POST', HM, { body: { healthmonitor: body }, as });
  assert.equal(r.statusCode, 201, r.body);
  return r.json().healthmonitor;
}

async function lbWithPool(protocol: PoolProtocol = 'HTTP'): Promise<{ lb: SeededLb; poolId: string; listenerId: string }> {
  const lb = await activeLoadBalancer(h);
  const poolId = await seedPool(h, lb, protocol);
  const listenerId = await seedListener(h, lb, protocol === 'UDP' ? 'UDP' : 'HTTP', 80, poolId);
  return { lb, poolId, listenerId };
}

async function hmCount() {
  return Number((await h.runtime.db.kysely.selectFrom('health_monitor').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
}

test('create: HTTP defaults, PENDING_CREATE, parents pending per §5.2, then ACTIVE/ONLINE', async () => {
  const { lb, poolId, listenerId } = await lbWithPool();
  const release = await holdJobs(h, lb.id);
  const hm = await createHm({ pool_id: poolId, type: 'HTTP', delay: '5', timeout: 3, max_retries: 2, name: 'probe', tags: ['t'] });
  assert.equal(hm.provisioning_status, 'PENDING_CREATE');
  assert.equal(hm.operating_status, 'OFFLINE');
  assert.deepEqual(
    [hm.delay, hm.http_method, hm.url_path, hm.expected_codes, hm.max_retries_down, hm.http_version, hm.domain_name, hm.admin_state_up],
    [5, 'GET', '/', '200', 3, null, null, true],
  );
  assert.deepEqual(hm.pools, [{ id: poolId }]);
  assert.equal(hm.tenant_id, hm.project_id);
  assert.equal(hm.project_id, lb.project_id);
  assert.deepEqual(hm.tags, ['t']);
  assert.equal(hm.updated_at, null);
  assert.equal('description' in hm, false);
  assert.equal(await statusOf(h, 'load_balancer', lb.id), 'PENDING_UPDATE');
  assert.equal(await statusOf(h, 'listener', listenerId), 'PENDING_UPDATE');
  assert.equal(await statusOf(h, 'pool', poolId), 'PENDING_UPDATE');
  await release();
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  const got = (await h.request('GET', `/v2.0/healthmonitors/${hm.id}`, { as: readerA })).json().healthmonitor;
  assert.equal(got.provisioning_status, 'ACTIVE');
  assert.equal(got.operating_status, 'ONLINE');
});

test('one monitor per pool; pool and LB must be ACTIVE', async () => {
  const { lb, poolId } = await lbWithPool();
  await createHm({ pool_id: poolId, type: 'TCP', delay: 5, timeout: 3, max_retries: 2 });
  await h.settled(lb.id);
  let r = await h.request('POST', HM, { body: { healthmonitor: { pool_id: poolId, type: 'PING', delay: 5, timeout: 3, max_retries: 2 } }, as: memberA });
  assert.equal(r.statusCode, 409);
  assert.equal(r.json().faultstring, 'This pool already has a health monitor');

  const busy = await seedPool(h, lb, 'TCP');
  await h.runtime.db.kysely.updateTable('pool').set({ provisioning_status: 'PENDING_UPDATE' }).where('id', '=', busy).execute();
  r = await h.request('POST', HM, { body: { healthmonitor: { pool_id: busy, type: 'TCP', delay: 5, timeout: 3, max_retries: 2 } }, as: memberA });
  assert.equal(r.statusCode, 409);
  assert.equal(r.json().faultstring, `Pool ${busy} is immutable and cannot be updated.`);
  assert.equal(await statusOf(h, 'load_balancer', lb.id), 'ACTIVE');

  const other = await seedPool(h, lb, 'TCP');
  await h.runtime.db.kysely.updateTable('load_balancer').set({ provisioning_status: 'PENDING_UPDATE' }).where('id', '=', lb.id).execute();
  r = await h.request('POST', HM, { body: { healthmonitor: { pool_id: other, type: 'TCP', delay: 5, timeout: 3, max_retries: 2 } }, as: memberA });
  assert.equal(r.statusCode, 409);
  assert.equal(r.json().faultstring, `Load Balancer ${lb.id} is immutable and cannot be updated.`);
  await h.runtime.db.kysely.updateTable('load_balancer').set({ provisioning_status: 'ACTIVE' }).where('id', '=', lb.id).execute();
  assert.equal(await statusOf(h, 'pool', other), 'ACTIVE');
});

test('bad input is a 400 (or 404 for the pool) with Octavia wording, and writes nothing', async () => {
  const { lb, poolId } = await lbWithPool();
  const udp = await seedPool(h, lb, 'UDP');
  const before = await hmCount();
  const base = { pool_id: poolId, delay: 5, timeout: 3, max_retries: 2 };
  const cases: Array<[Record<string, unknown>, number, string]> = [
    [{ pool_id: poolId, type: 'TCP', timeout: 3, max_retries: 2 }, 400, "Invalid input for field/attribute delay. Value: 'None'. Mandatory field missing."],
    [{ ...base, type: 'TCP', http_method: 'GET' }, 400, 'http_method is not a valid option for health monitors of type TCP'],
    [{ ...base, type: 'PING', url_path: '/x' }, 400, 'url_path is not a valid option for health monitors of type PING'],
    [{ ...base, type: 'UDP-CONNECT' }, 400, 'Validation failure: The UDP-CONNECT type is only supported for pools of type UDP/SCTP.'],
    [{ ...base, pool_id: udp, type: 'HTTPS' }, 400, 'Validation failure: The associated pool protocol is UDP, so only a UDP-CONNECT/SCTP/TCP/HTTP health monitor is supported.'],
    [{ ...base, pool_id: udp, type: 'UDP-CONNECT', delay: 1 }, 400, 'Validation failure: The request delay value 1 should be larger than 3 for UDP-CONNECT health monitor type.'],
    [{ ...base, type: 'HTTP', expected_codes: '20x' }, 400, String.raw`Invalid input for field/attribute expected_codes. Value: '20x'. Value should match the pattern ^(\d{3}(\s*,\s*\d{3})*)$|^(\d{3}-\d{3})$`],
    [{ ...base, type: 'HTTP', url_path: 'health' }, 400, "Invalid input for field/attribute url_path. Value: 'health'. Value must be a valid URL Path string"],
    [{ ...base, type: 'HTTP', domain_name: 'a.example' }, 400, "Validation failure: 'http_version' must be specified when 'domain_name' is provided."],
    [{ ...base, type: 'HTTP', max_retries: 11 }, 400, "Invalid input for field/attribute max_retries. Value: '11'. Value should be lower or equal to 10"],
    [{ ...base, type: 'BOGUS' }, 400, "Invalid input for field/attribute type. Value: 'BOGUS'. Value should be one of: HTTP, HTTPS, PING, TCP, TLS-HELLO, UDP-CONNECT, SCTP"],
    [{ ...base, type: 'TCP', description: 'x' }, 400, 'Unknown attribute for argument health_monitor_.healthmonitor: description'],
    [{ ...base, pool_id: '11111111-2222-3333-4444-555555555555', type: 'TCP' }, 404, 'Pool 11111111-2222-3333-4444-555555555555 not found.'],
  ];
  for (const [body, status, message] of cases) {
    const r = await h.request('POST', HM, { body: { healthmonitor: body }, as: memberA });
    assert.equal(r.statusCode, status, JSON.stringify(body));
    assert.deepEqual(r.json(), { faultcode: 'Client', faultstring: message, debuginfo: null });
  }
  assert.equal(await hmCount(), before);
  assert.equal(await statusOf(h, 'load_balancer', lb.id), 'ACTIVE');
  // UDP pools do take HTTP monitors (v2.16).
  await createHm({ ...base, pool_id: udp, type: 'HTTP', http_version: 1.1, domain_name: 'a.example' });
});

test('update: fields change, nulls reset, refusals in Octavia wording, §5.2 statuses', async () => {
  const { lb, poolId, listenerId } = await lbWithPool();
  const hm = await createHm({ pool_id: poolId, type: 'HTTP', delay: 5, timeout: 3, max_retries: 2, http_method: 'HEAD', max_retries_down: 7 });
  await h.settled(lb.id);
  const url = `${HM}/${hm.id}`;
  for (const [body, message] of [
    [{ delay: null }, 'None is not a valid option for delay'],
    [{ timeout: null }, 'None is not a valid option for timeout'],
    [{ max_retries: null }, 'None is not a valid option for max_retries'],
    [{ type: 'TCP' }, 'Unknown attribute for argument health_monitor_.healthmonitor: type'],
    [{ url_path: 'x y' }, "Invalid input for field/attribute url_path. Value: 'x y'. Value must be a valid URL Path string"],
    [{ domain_name: 'a.example', http_version: 1.0 }, 'http_version 1.0 is not a valid option for health monitors HTTP 1.1 domain name health check'],
  ] as const) {
    const r = await h.request('PUT', url, { body: { healthmonitor: body }, as: memberA });
    assert.equal(r.statusCode, 400, JSON.stringify(body));
    assert.equal(r.json().faultstring, message);
  }
  assert.equal(await statusOf(h, 'load_balancer', lb.id), 'ACTIVE');
  const release = await holdJobs(h, lb.id);
  const r = await h.request('PUT', url, { body: { healthmonitor: { delay: 9, http_method: null, max_retries_down: null, name: 'n', tags: ['x'] } }, as: memberA });
  assert.equal(r.statusCode, 200, r.body);
  const updated = r.json().healthmonitor;
  assert.deepEqual([updated.delay, updated.http_method, updated.max_retries_down, updated.name, updated.tags, updated.provisioning_status], [9, 'GET', 3, 'n', ['x'], 'PENDING_UPDATE']);
  assert.equal(await statusOf(h, 'load_balancer', lb.id), 'PENDING_UPDATE');
  assert.equal(await statusOf(h, 'listener', listenerId), 'PENDING_UPDATE');
  assert.equal(await statusOf(h, 'pool', poolId), 'PENDING_UPDATE');
  await release();
  await h.settled(lb.id);

  const tcpPool = await seedPool(h, lb, 'TCP');
  const tcp = await createHm({ pool_id: tcpPool, type: 'TCP', delay: 5, timeout: 3, max_retries: 2 });
  assert.deepEqual([tcp.http_method, tcp.url_path, tcp.expected_codes], [null, null, null]);
  await h.settled(lb.id);
  const bad = await h.request('PUT', `${HM}/${tcp.id}`, { body: { healthmonitor: { http_method: 'GET' } }, as: memberA });
  assert.equal(bad.statusCode, 400);
  assert.equal(bad.json().faultstring, 'http_method is not a valid option for health monitors of type TCP');
});

test('delete marks PENDING_DELETE; once settled the monitor is gone (404)', async () => {
  const { lb, poolId } = await lbWithPool();
  const hm = await createHm({ pool_id: poolId, type: 'TCP', delay: 5, timeout: 3, max_retries: 2 });
  await h.settled(lb.id);
  const release = await holdJobs(h, lb.id);
  const r = await h.request('DELETE', `${HM}/${hm.id}`, { as: memberA });
  assert.equal(r.statusCode, 204);
  assert.equal(await statusOf(h, 'health_monitor', hm.id), 'PENDING_DELETE');
  assert.equal(await statusOf(h, 'pool', poolId), 'PENDING_UPDATE');
  await release();
  await h.settled(lb.id);
  const gone = await h.request('GET', `${HM}/${hm.id}`, { as: memberA });
  assert.equal(gone.statusCode, 404);
  assert.equal(gone.json().faultstring, `Health Monitor ${hm.id} not found.`);
  // The pool may take a new monitor now.
  await createHm({ pool_id: poolId, type: 'TCP', delay: 5, timeout: 3, max_retries: 2 });
});

test('RBAC and project scoping; list filters and fields', async () => {
  const { lb, poolId } = await lbWithPool();
  const hm = await createHm({ pool_id: poolId, type: 'TCP', delay: 5, timeout: 3, max_retries: 2 });
  await h.settled(lb.id);
  for (const [method, body] of [['GET', undefined], ['PUT', { healthmonitor: { name: 'x' } }], ['DELETE', undefined]] as const) {
    const r = await h.request(method, `${HM}/${hm.id}`, { body, as: memberB });
    assert.equal(r.statusCode, 403, method);
    assert.equal(r.json().faultstring, 'Policy does not allow this request to be performed.');
  }
  const other = await seedPool(h, lb, 'HTTP');
  for (const as of [memberB, readerA]) {
    const r = await h.request('POST', HM, { body: { healthmonitor: { pool_id: other, type: 'TCP', delay: 5, timeout: 3, max_retries: 2 } }, as });
    assert.equal(r.statusCode, 403);
  }
  const listB = (await h.request('GET', HM, { as: memberB })).json();
  assert.deepEqual(listB, { healthmonitors: [], healthmonitors_links: [] });
  const listA = (await h.request('GET', `${HM}?pool_id=${poolId}&fields=id&fields=pools`, { as: readerA })).json();
  assert.deepEqual(listA.healthmonitors, [{ id: hm.id, pools: [{ id: poolId }] }]);
  const all = (await h.request('GET', `${HM}?type=TCP`, { as: admin })).json().healthmonitors;
  assert.ok(all.some((m: { id: string }) => m.id === hm.id));
  const one = (await h.request('GET', `${HM}/${hm.id}?fields=type`, { as: memberA })).json();
  assert.deepEqual(one, { healthmonitor: { type: 'TCP' } });
});

test('quota: 403 when the project has no health monitors left', async () => {
  const lb = await activeLoadBalancer(h, memberB);
  const poolId = await seedPool(h, lb, 'TCP');
  let r = await h.request('PUT', `/v2/lbaas/quotas/${PROJECT_B}`, { body: { quota: { health_monitor: 0 } }, as: admin });
  assert.equal(r.statusCode, 202, r.body);
  r = await h.request('POST', HM, { body: { healthmonitor: { pool_id: poolId, type: 'TCP', delay: 5, timeout: 3, max_retries: 2 } }, as: memberB });
  assert.equal(r.statusCode, 403);
  assert.equal(r.json().faultstring, 'Quota has been met for resources: Health Monitor');
  await h.request('DELETE', `/v2/lbaas/quotas/${PROJECT_B}`, { as: admin });
});

test('PING monitors can be disallowed by config', async () => {
  const h2 = await startHarness({ api: { allowPingHealthMonitors: false } });
  try {
    const lb = await activeLoadBalancer(h2);
    const poolId = await seedPool(h2, lb, 'TCP');
    const r = await h2.request('POST', HM, { body: { healthmonitor: { pool_id: poolId, type: 'PING', delay: 5, timeout: 3, max_retries: 2 } }, as: memberA });
    assert.equal(r.statusCode, 400);
    assert.equal(r.json().faultstring, 'The selected type is not allowed in this deployment: PING');
  } finally {
    await h2.close();
  }
});

test('a pool reached through an enabled L7 redirect with rules puts that listener pending too', async () => {
  const { lb, poolId, listenerId } = await lbWithPool();
  const viaPolicy = await seedListener(h, lb, 'HTTP', 81);
  const ruleless = await seedListener(h, lb, 'HTTP', 82);
  for (const [listener, rules] of [[viaPolicy, [{ type: 'PATH', compare_type: 'STARTS_WITH', value: '/' }]], [ruleless, []]] as const) {
    const r = await h.request('POST', '/v2/lbaas/l7policies', { body: { l7policy: { listener_id: listener, action: 'REDIRECT_TO_POOL', redirect_pool_id: poolId, rules } }, as: memberA });
    assert.equal(r.statusCode, 201, r.body);
    await h.settled(lb.id);
  }
  const release = await holdJobs(h, lb.id);
  await createHm({ pool_id: poolId, type: 'TCP', delay: 5, timeout: 3, max_retries: 2 });
  assert.deepEqual(
    [await statusOf(h, 'listener', listenerId), await statusOf(h, 'listener', viaPolicy), await statusOf(h, 'listener', ruleless)],
    ['PENDING_UPDATE', 'PENDING_UPDATE', 'ACTIVE'],
  );
  await release();
  await h.settled(lb.id);
});

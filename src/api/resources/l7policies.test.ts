import type { ListenerProtocol } from '../../domain/enums.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, admin, memberA, memberB, readerA, type Harness } from '../../../test/support/harness.js';
import { activeLoadBalancer, holdJobs, seedListener, seedPool, statusOf, type SeededLb } from '../../../test/support/seed-rows.js';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

const P = '/v2/lbaas/l7policies';

async function createPolicy(body: Record<string, unknown>, as = memberA) {
  const r = await h.request('POST', P, { body: { l7policy: body }, as });
  assert.equal(r.statusCode, 201, r.body);
  return r.json().l7policy;
}

let port = 1000;
async function httpListener(protocol: ListenerProtocol = 'HTTP'): Promise<{ lb: SeededLb; listenerId: string }> {
  const lb = await activeLoadBalancer(h);
  return { lb, listenerId: await seedListener(h, lb, protocol, port++) };
}

async function positions(listenerId: string) {
  const rows = await h.runtime.db.kysely.selectFrom('l7policy').select(['name', 'position']).where('listener_id', '=', listenerId).orderBy('position').execute();
  return rows.map((r) => `${r.position}:${r.name}`);
}

test('create REJECT: wire shape, PENDING_CREATE, LB and listener pending, then ACTIVE', async () => {
  const { lb, listenerId } = await httpListener();
  const release = await holdJobs(h, lb.id);
  const p = await createPolicy({ listener_id: listenerId, action: 'REJECT', name: 'deny', tags: ['t'] });
  assert.deepEqual(
    [p.action, p.position, p.redirect_pool_id, p.redirect_url, p.redirect_prefix, p.redirect_http_code, p.listener_id, p.description, p.admin_state_up],
    ['REJECT', 1, null, null, null, null, listenerId, '', true],
  );
  assert.deepEqual(p.rules, []);
  assert.deepEqual(p.tags, ['t']);
  assert.equal(p.tenant_id, lb.project_id);
  assert.equal(p.provisioning_status, 'PENDING_CREATE');
  assert.equal(p.operating_status, 'OFFLINE');
  assert.equal(await statusOf(h, 'load_balancer', lb.id), 'PENDING_UPDATE');
  assert.equal(await statusOf(h, 'listener', listenerId), 'PENDING_UPDATE');
  await release();
  await h.settled(lb.id);
  const got = (await h.request('GET', `${P}/${p.id}`, { as: readerA })).json().l7policy;
  assert.deepEqual([got.provisioning_status, got.operating_status], ['ACTIVE', 'ONLINE']);
});

test('redirects: 302 default for URL/prefix, pool redirect checked for LB and protocol', async () => {
  const { lb, listenerId } = await httpListener();
  const url = await createPolicy({ listener_id: listenerId, action: 'REDIRECT_TO_URL', redirect_url: 'http://www.example.com' });
  assert.deepEqual([url.redirect_url, url.redirect_http_code], ['http://www.example.com', 302]);
  await h.settled(lb.id);
  const prefix = await createPolicy({ listener_id: listenerId, action: 'REDIRECT_PREFIX', redirect_prefix: 'https://example.com', redirect_http_code: 308 });
  assert.equal(prefix.redirect_http_code, 308);
  await h.settled(lb.id);
  const poolId = await seedPool(h, lb, 'HTTP');
  const toPool = await createPolicy({ listener_id: listenerId, action: 'REDIRECT_TO_POOL', redirect_pool_id: poolId, redirect_http_code: 308 });
  assert.deepEqual([toPool.action, toPool.redirect_pool_id, toPool.redirect_http_code, toPool.position], ['REDIRECT_TO_POOL', poolId, null, 3]);
  await h.settled(lb.id);

  const tcpPool = await seedPool(h, lb, 'TCP');
  const elsewhere = await seedPool(h, await activeLoadBalancer(h), 'HTTP');
  const cases: Array<[Record<string, unknown>, number, string]> = [
    [{ action: 'REDIRECT_TO_POOL', redirect_pool_id: tcpPool }, 400, "Validation failure: The pool protocol 'TCP' is invalid while the listener protocol is 'HTTP'."],
    [{ action: 'REDIRECT_TO_POOL', redirect_pool_id: elsewhere }, 404, `Pool ${elsewhere} not found.`],
    [{ action: 'REDIRECT_TO_POOL' }, 400, 'Invalid L7 Policy arguments: redirect_pool_id or redirect_pool must not be None'],
    [{ action: 'REDIRECT_TO_URL' }, 400, 'Invalid L7 Policy arguments: redirect_url must not be None'],
    [{ action: 'REDIRECT_TO_URL', redirect_url: 'bad url' }, 400, "Invalid input for field/attribute redirect_url. Value: 'bad url'. Value must be a valid URL string"],
    [{ action: 'REDIRECT_TO_URL', redirect_url: 'http://a', redirect_http_code: 1 }, 400, "Invalid input for field/attribute redirect_http_code. Value: '1'. Value should be one of: 301, 302, 303, 307, 308"],
    [{ action: 'REDIRECT_TO_POOL', redirect_pool_id: poolId, redirect_prefix: 'http://a' }, 400, 'Invalid L7 Policy arguments: Cannot specify redirect_pool_id and redirect_url or redirect_prefix at the same time'],
    [{ action: 'NOPE' }, 400, "Invalid input for field/attribute action. Value: 'NOPE'. Value should be one of: REJECT, REDIRECT_TO_URL, REDIRECT_TO_POOL, REDIRECT_PREFIX"],
    [{ name: 'no action' }, 400, "Invalid input for field/attribute action. Value: 'None'. Mandatory field missing."],
    [{ action: 'REJECT', position: 0 }, 400, "Invalid input for field/attribute position. Value: '0'. Value should be greater or equal to 1"],
  ];
  for (const [body, status, message] of cases) {
    const r = await h.request('POST', P, { body: { l7policy: { listener_id: listenerId, ...body } }, as: memberA });
    assert.equal(r.statusCode, status, JSON.stringify(body));
    assert.deepEqual(r.json(), { faultcode: 'Client', faultstring: message, debuginfo: null });
  }
  const missing = await h.request('POST', P, { body: { l7policy: { listener_id: '11111111-2222-3333-4444-555555555555', action: 'REJECT' } }, as: memberA });
  assert.equal(missing.statusCode, 404);
  assert.equal(missing.json().faultstring, 'Listener 11111111-2222-3333-4444-555555555555 not found.');
  assert.equal((await positions(listenerId)).length, 3);
  assert.equal(await statusOf(h, 'load_balancer', lb.id), 'ACTIVE');
});

test('listener protocols: PROMETHEUS refused, TCP accepted by the noop provider', async () => {
  const prom = await httpListener('PROMETHEUS');
  const r = await h.request('POST', P, { body: { l7policy: { listener_id: prom.listenerId, action: 'REJECT' } }, as: memberA });
  assert.equal(r.statusCode, 400);
  assert.equal(r.json().faultstring, 'Protocol PROMETHEUS listeners cannot have child objects.');
  const tcp = await httpListener('TCP');
  await createPolicy({ listener_id: tcp.listenerId, action: 'REJECT' });
});

test('positions: insertion and moves renumber the listener list 1..n', async () => {
  const { lb, listenerId } = await httpListener();
  const make = async (name: string, position?: number) => {
    const p = await createPolicy({ listener_id: listenerId, action: 'REJECT', name, ...(position ? { position } : {}) });
    await h.settled(lb.id);
    return p;
  };
  const a = await make('a');
  await make('b');
  await make('c', 1);
  await make('d', 99);
  await make('e', 2);
  assert.deepEqual(await positions(listenerId), ['1:c', '2:e', '3:a', '4:b', '5:d']);
  const r = await h.request('PUT', `${P}/${a.id}`, { body: { l7policy: { position: 1 } }, as: memberA });
  assert.equal(r.statusCode, 200, r.body);
  assert.equal(r.json().l7policy.position, 1);
  assert.deepEqual(await positions(listenerId), ['1:a', '2:c', '3:e', '4:b', '5:d']);
  await h.settled(lb.id);
  const listed = (await h.request('GET', `${P}?listener_id=${listenerId}&sort=position:desc&fields=name`, { as: memberA })).json().l7policies;
  assert.deepEqual(listed.map((p: { name: string }) => p.name), ['d', 'b', 'e', 'c', 'a']);
});

test('update: action changes clear unused targets; empty update refused', async () => {
  const { lb, listenerId } = await httpListener();
  const p = await createPolicy({ listener_id: listenerId, action: 'REJECT' });
  await h.settled(lb.id);
  const put = (body: unknown) => h.request('PUT', `${P}/${p.id}`, { body: { l7policy: body }, as: memberA });
  const release = await holdJobs(h, lb.id);
  let r = await put({ action: 'REDIRECT_TO_URL', redirect_url: 'http://www.example.com', redirect_http_code: 308, tags: ['n'] });
  assert.equal(r.statusCode, 200, r.body);
  const u = r.json().l7policy;
  assert.deepEqual([u.action, u.redirect_url, u.redirect_http_code, u.tags, u.provisioning_status], ['REDIRECT_TO_URL', 'http://www.example.com', 308, ['n'], 'PENDING_UPDATE']);
  assert.equal(await statusOf(h, 'listener', listenerId), 'PENDING_UPDATE');
  r = await put({ name: 'x' });
  assert.equal(r.statusCode, 409);
  assert.equal(r.json().faultstring, `Load Balancer ${lb.id} is immutable and cannot be updated.`);
  await release();
  await h.settled(lb.id);
  r = await put({ redirect_http_code: null });
  assert.equal(r.json().l7policy.redirect_http_code, null);
  await h.settled(lb.id);
  const poolId = await seedPool(h, lb, 'HTTP');
  r = await put({ redirect_pool_id: poolId });
  assert.deepEqual([r.json().l7policy.action, r.json().l7policy.redirect_url, r.json().l7policy.redirect_pool_id], ['REDIRECT_TO_POOL', null, poolId]);
  await h.settled(lb.id);
  for (const [body, status, message] of [
    [{}, 400, 'Invalid L7 Policy arguments: Invalid update options'],
    [{ action: 'REDIRECT_PREFIX' }, 400, 'Invalid L7 Policy arguments: redirect_prefix must not be None'],
    [{ listener_id: listenerId }, 400, 'Unknown attribute for argument l7policy_.l7policy: listener_id'],
    [{ redirect_pool_id: '11111111-2222-3333-4444-555555555555' }, 404, 'Pool 11111111-2222-3333-4444-555555555555 not found.'],
  ] as const) {
    r = await put(body);
    assert.equal(r.statusCode, status, JSON.stringify(body));
    assert.equal(r.json().faultstring, message);
  }
  assert.equal(await statusOf(h, 'load_balancer', lb.id), 'ACTIVE');
});

test('delete, 404 afterwards; RBAC and scoping', async () => {
  const { lb, listenerId } = await httpListener();
  const p = await createPolicy({ listener_id: listenerId, action: 'REJECT', rules: [{ type: 'PATH', compare_type: 'STARTS_WITH', value: '/api' }] });
  assert.equal(p.rules.length, 1);
  await h.settled(lb.id);
  for (const [method, body] of [['GET', undefined], ['PUT', { l7policy: { name: 'x' } }], ['DELETE', undefined]] as const) {
    const r = await h.request(method, `${P}/${p.id}`, { body, as: memberB });
    assert.equal(r.statusCode, 403, method);
  }
  assert.equal((await h.request('POST', P, { body: { l7policy: { listener_id: listenerId, action: 'REJECT' } }, as: readerA })).statusCode, 403);
  assert.deepEqual((await h.request('GET', P, { as: memberB })).json(), { l7policies: [], l7policies_links: [] });
  assert.ok((await h.request('GET', P, { as: admin })).json().l7policies.some((x: { id: string }) => x.id === p.id));
  const release = await holdJobs(h, lb.id);
  const r = await h.request('DELETE', `${P}/${p.id}`, { as: memberA });
  assert.equal(r.statusCode, 204);
  assert.equal(await statusOf(h, 'l7policy', p.id), 'PENDING_DELETE');
  assert.equal(await statusOf(h, 'listener', listenerId), 'PENDING_UPDATE');
  await release();
  await h.settled(lb.id);
  const gone = await h.request('GET', `${P}/${p.id}`, { as: memberA });
  assert.equal(gone.statusCode, 404);
  assert.equal(gone.json().faultstring, `L7 Policy ${p.id} not found.`);
  assert.equal(await statusOf(h, 'l7rule', p.rules[0].id), undefined);
});

test('inline rules: validated, at most 50', async () => {
  const { lb, listenerId } = await httpListener();
  const rule = { type: 'HEADER', compare_type: 'EQUAL_TO', key: 'X-A', value: 'b' };
  let r = await h.request('POST', P, { body: { l7policy: { listener_id: listenerId, action: 'REJECT', rules: Array(51).fill(rule) } }, as: memberA });
  assert.equal(r.statusCode, 409);
  assert.match(r.json().faultstring, /^Too many rules on L7 policy [0-9a-f-]{36}$/);
  r = await h.request('POST', P, { body: { l7policy: { listener_id: listenerId, action: 'REJECT', rules: [{ ...rule, key: 'bad key' }] } }, as: memberA });
  assert.equal(r.statusCode, 400);
  assert.equal(r.json().faultstring, 'Error parsing L7Rule: Invalid characters in key');
  assert.deepEqual(await positions(listenerId), []);
  const p = await createPolicy({ listener_id: listenerId, action: 'REJECT', rules: Array(50).fill(rule) });
  assert.equal(p.rules.length, 50);
  await h.settled(lb.id);
});

test('deleting a policy closes the gap in its listener positions', async () => {
  const { lb, listenerId } = await httpListener();
  const made = [];
  for (const name of ['first', 'second', 'third']) {
    made.push(await createPolicy({ listener_id: listenerId, action: 'REJECT', name }));
    await h.settled(lb.id);
  }
  assert.equal((await h.request('DELETE', `${P}/${made[1].id}`, { as: memberA })).statusCode, 204);
  await h.settled(lb.id);
  assert.deepEqual(await positions(listenerId), ['1:first', '2:third']);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, admin, memberA, memberB, readerA, PROJECT_A, PROJECT_B, type Harness } from '../../../test/support/harness.js';
import { VIP_SUBNET_ID } from '../../config.js';

let h: Harness;
// A non-default default makes "effective" distinguishable from "stored".
before(async () => {
  h = await startHarness({ quotas: { load_balancer: 10 } });
});
after(() => h.close());

const PROJECT_C = 'cccccccccccccccccccccccccccccccc';
const limits = (lb: number | null, hm: number | null, rest: number | null) => ({
  load_balancer: lb, loadbalancer: lb, listener: rest, member: rest, pool: rest, health_monitor: hm, healthmonitor: hm, l7policy: rest, l7rule: rest,
});
const zeros = limits(0, 0, 0);

test('a project without a row gets the configured defaults, both spellings, and zero usage', async () => {
  const r = await h.request('GET', `/v2/lbaas/quotas/${PROJECT_C}`, { as: admin });
  assert.equal(r.statusCode, 200);
  assert.deepEqual(r.json(), { quota: { project_id: PROJECT_C, tenant_id: PROJECT_C, ...limits(10, -1, -1), in_use: zeros } });
});

test('PUT accepts either spelling, answers 202 with the effective quota; the list shows raw rows', async () => {
  const r = await h.request('PUT', `/v2.0/lbaas/quotas/${PROJECT_C}`, { body: { quota: { load_balancer: 5, healthmonitor: '3', listener: -1 } }, as: admin });
  assert.equal(r.statusCode, 202);
  const q = r.json().quota;
  assert.equal(q.loadbalancer, 5);
  assert.equal(q.load_balancer, 5);
  assert.equal(q.health_monitor, 3);
  assert.equal(q.healthmonitor, 3);
  assert.equal(q.pool, -1);
  assert.deepEqual(q.in_use, zeros);

  const list = (await h.request('GET', `/v2/lbaas/quotas?project_id=${PROJECT_C}`, { as: admin })).json();
  assert.deepEqual(list, { quotas: [{ project_id: PROJECT_C, tenant_id: PROJECT_C, load_balancer: 5, loadbalancer: 5, listener: -1, member: null, pool: null, health_monitor: 3, healthmonitor: 3, l7policy: null, l7rule: null }], quotas_links: [] });

  // null resets one limit to the default; the underscore-less spelling wins when both are sent.
  const reset = await h.request('PUT', `/v2/quotas/${PROJECT_C}`, { body: { quota: { load_balancer: 7, loadbalancer: null } }, as: admin });
  assert.equal(reset.statusCode, 202);
  assert.equal(reset.json().quota.load_balancer, 10);
  assert.equal(reset.json().quota.listener, -1);
  const row = (await h.request('GET', `/v2/lbaas/quotas?project_id=${PROJECT_C}&fields=load_balancer&fields=listener`, { as: admin })).json().quotas[0];
  assert.deepEqual(row, { load_balancer: null, listener: -1 });
});

test('invalid quota bodies are 400 and change nothing', async () => {
  const cases: Array<[unknown, string]> = [
    [{ quota: { listener: -2 } }, "Invalid input for field/attribute listener. Value: '-2'. Value should be greater or equal to -1"],
    [{ quota: { pool: 2000000001 } }, "Invalid input for field/attribute pool. Value: '2000000001'. Value should be lower or equal to 2000000000"],
    [{ quota: { member: 'many' } }, "Invalid input for field/attribute member. Value: 'many'. Wrong type. Expected '<class 'int'>', got '<class 'str'>'"],
    [{}, "Invalid input for field/attribute quota. Value: 'None'. Mandatory field missing."],
  ];
  for (const [body, message] of cases) {
    const r = await h.request('PUT', `/v2/lbaas/quotas/${PROJECT_B}`, { body, as: admin });
    assert.equal(r.statusCode, 400, JSON.stringify(body));
    assert.equal(r.json().faultstring, message);
  }
  const unknown = await h.request('PUT', `/v2/lbaas/quotas/${PROJECT_B}`, { body: { quota: { bogus: 1 } }, as: admin });
  assert.equal(unknown.statusCode, 400);
  assert.equal(unknown.json().faultstring, 'Unknown attribute for argument quotas.quota: bogus');
  const rows = await h.runtime.db.kysely.selectFrom('quota').selectAll().where('project_id', '=', PROJECT_B).execute();
  assert.deepEqual(rows, []);
});

test('defaults: /quotas/defaults is admin-only like upstream, /quotas/{p}/default is the project’s own', async () => {
  const d = await h.request('GET', '/v2/lbaas/quotas/defaults', { as: admin });
  assert.equal(d.statusCode, 200);
  assert.deepEqual(d.json(), { quota: { project_id: 'defaults', tenant_id: 'defaults', ...limits(10, -1, -1) } });
  assert.equal((await h.request('GET', '/v2/lbaas/quotas/defaults', { as: memberA })).statusCode, 403);

  // Customised limits do not leak into the default view.
  const own = await h.request('GET', `/v2/lbaas/quotas/${PROJECT_C}/default`, { as: admin });
  assert.deepEqual(own.json(), { quota: { project_id: PROJECT_C, tenant_id: PROJECT_C, ...limits(10, -1, -1) } });
  assert.equal((await h.request('GET', `/v2/lbaas/quotas/${PROJECT_A}/default`, { as: readerA })).statusCode, 200);
  const foreign = await h.request('GET', `/v2/lbaas/quotas/${PROJECT_B}/default`, { as: memberA });
  assert.equal(foreign.statusCode, 403);
  assert.equal(foreign.json().faultstring, 'Policy does not allow this request to be performed.');
});

test('RBAC: members and readers read their own quota only; only admins write', async () => {
  assert.equal((await h.request('GET', `/v2/lbaas/quotas/${PROJECT_A}`, { as: readerA })).statusCode, 200);
  assert.equal((await h.request('GET', `/v2/lbaas/quotas/${PROJECT_B}`, { as: memberA })).statusCode, 403);
  assert.equal((await h.request('PUT', `/v2/lbaas/quotas/${PROJECT_A}`, { body: { quota: { pool: 1 } }, as: memberA })).statusCode, 403);
  assert.equal((await h.request('DELETE', `/v2/lbaas/quotas/${PROJECT_A}`, { as: memberA })).statusCode, 403);
  assert.equal((await h.request('GET', `/v2/lbaas/quotas?project_id=${PROJECT_B}`, { as: memberA })).statusCode, 403);

  await h.request('PUT', `/v2/lbaas/quotas/${PROJECT_A}`, { body: { quota: { pool: 4 } }, as: admin });
  const mine = (await h.request('GET', '/v2/lbaas/quotas', { as: memberA })).json().quotas as Array<{ project_id: string }>;
  assert.deepEqual(mine.map((q) => q.project_id), [PROJECT_A]);
  const all = (await h.request('GET', '/v2/lbaas/quotas', { as: admin })).json().quotas as Array<{ project_id: string }>;
  assert.ok(all.length >= 2);
});

test('DELETE resets every limit to null (202, no body); a project without a row is a 404', async () => {
  const missing = await h.request('DELETE', '/v2/lbaas/quotas/dddddddddddddddddddddddddddddddd', { as: admin });
  assert.equal(missing.statusCode, 404);
  assert.equal(missing.json().faultstring, 'Quotas dddddddddddddddddddddddddddddddd not found.');

  const r = await h.request('DELETE', `/v2/lbaas/quotas/${PROJECT_C}`, { as: admin });
  assert.equal(r.statusCode, 202);
  assert.equal(r.body, '');
  const row = (await h.request('GET', `/v2/lbaas/quotas?project_id=${PROJECT_C}`, { as: admin })).json().quotas[0];
  assert.deepEqual(row, { project_id: PROJECT_C, tenant_id: PROJECT_C, ...limits(null, null, null) });
  assert.equal((await h.request('GET', `/v2/lbaas/quotas/${PROJECT_C}`, { as: admin })).json().quota.listener, -1);
});

test('limits are enforced on create and the effective quota reports usage under in_use', async () => {
  await h.request('PUT', `/v2/lbaas/quotas/${PROJECT_B}`, { body: { quota: { loadbalancer: 1 } }, as: admin });
  const create = () => h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } }, as: memberB });
  const first = await create();
  assert.equal(first.statusCode, 201);
  const over = await create();
  assert.equal(over.statusCode, 403);
  assert.equal(over.json().faultstring, 'Quota has been met for resources: Load Balancer');

  const q = (await h.request('GET', `/v2/lbaas/quotas/${PROJECT_B}`, { as: memberB })).json().quota;
  assert.equal(q.load_balancer, 1);
  assert.deepEqual(q.in_use, { ...zeros, load_balancer: 1, loadbalancer: 1 });
  await h.settled(first.json().loadbalancer.id);
});

test('the quota list pages by project_id', async () => {
  const page = (await h.request('GET', '/v2/lbaas/quotas?limit=1', { as: admin })).json();
  assert.equal(page.quotas.length, 1);
  assert.equal(page.quotas_links[0].rel, 'next');
  const next = new URL(page.quotas_links[0].href);
  const second = (await h.request('GET', `${next.pathname}${next.search}`, { as: admin })).json();
  assert.ok(second.quotas[0].project_id > page.quotas[0].project_id);
  assert.equal((await h.request('GET', '/v2/lbaas/quotas?bogus=1', { as: admin })).json().faultstring, 'One or more arguments are either duplicate or invalid');
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, memberA, memberB, readerA, type Harness } from '../../../test/support/harness.js';
import { activeLoadBalancer, holdJobs, seedListener, statusOf, type SeededLb } from '../../../test/support/seed-rows.js';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

let port = 2000;
async function policy(rules: unknown[] = []): Promise<{ lb: SeededLb; listenerId: string; policyId: string; rules: string }> {
  const lb = await activeLoadBalancer(h);
  const listenerId = await seedListener(h, lb, 'HTTP', port++);
  const r = await h.request('POST', '/v2/lbaas/l7policies', { body: { l7policy: { listener_id: listenerId, action: 'REJECT', rules } }, as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  await h.settled(lb.id);
  const policyId = r.json().l7policy.id;
  return { lb, listenerId, policyId, rules: `/v2/lbaas/l7policies/${policyId}/rules` };
}

async function createRule(url: string, body: Record<string, unknown>) {
  const r = await h.request('POST', url, { body: { rule: body }, as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  return r.json().rule;
}

test('create: `rule` envelope, defaults, §5.2 statuses, then ACTIVE', async () => {
  const t = await policy();
  const release = await holdJobs(h, t.lb.id);
  const rule = await createRule(t.rules, { type: 'PATH', compare_type: 'STARTS_WITH', value: '/api', tags: ['x'] });
  assert.deepEqual(
    [rule.type, rule.compare_type, rule.key, rule.value, rule.invert, rule.admin_state_up, rule.tags, rule.provisioning_status, rule.operating_status],
    ['PATH', 'STARTS_WITH', null, '/api', false, true, ['x'], 'PENDING_CREATE', 'OFFLINE'],
  );
  assert.equal(rule.tenant_id, t.lb.project_id);
  assert.equal('l7policy_id' in rule || 'name' in rule, false);
  assert.equal(await statusOf(h, 'load_balancer', t.lb.id), 'PENDING_UPDATE');
  assert.equal(await statusOf(h, 'listener', t.listenerId), 'PENDING_UPDATE');
  assert.equal(await statusOf(h, 'l7policy', t.policyId), 'PENDING_UPDATE');
  await release();
  await h.settled(t.lb.id);
  const list = (await h.request('GET', t.rules, { as: readerA })).json();
  assert.deepEqual(Object.keys(list).sort(), ['rules', 'rules_links']);
  assert.deepEqual(list.rules.map((r: { id: string; provisioning_status: string }) => [r.id, r.provisioning_status]), [[rule.id, 'ACTIVE']]);
  const p = (await h.request('GET', `/v2/lbaas/l7policies/${t.policyId}`, { as: memberA })).json().l7policy;
  assert.deepEqual(p.rules, [{ id: rule.id }]);
});

test('unknown policy in the path is a pecan 404; a rule of another policy is a WSME 404', async () => {
  const t = await policy();
  const other = await policy([{ type: 'HOST_NAME', compare_type: 'EQUAL_TO', value: 'a.example' }]);
  const missing = '11111111-2222-3333-4444-555555555555';
  const r = await h.request('GET', `/v2/lbaas/l7policies/${missing}/rules`, { as: memberA });
  assert.equal(r.statusCode, 404);
  assert.deepEqual(r.json(), { code: 404, title: 'Not Found', description: `L7 Policy ${missing} not found.` });
  const post = await h.request('POST', `/v2/lbaas/l7policies/${missing}/rules`, { body: { rule: { type: 'PATH', compare_type: 'EQUAL_TO', value: '/' } }, as: memberA });
  assert.equal(post.statusCode, 404);
  assert.equal(post.json().description, `L7 Policy ${missing} not found.`);
  const otherRule = (await h.request('GET', other.rules, { as: memberA })).json().rules[0].id;
  const wrong = await h.request('GET', `${t.rules}/${otherRule}`, { as: memberA });
  assert.equal(wrong.statusCode, 404);
  assert.deepEqual(wrong.json(), { faultcode: 'Client', faultstring: `L7 Rule ${otherRule} not found.`, debuginfo: null });
});

test('bad rules are a 400 with Octavia wording and write nothing', async () => {
  const t = await policy();
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ type: 'HEADER', compare_type: 'EQUAL_TO', value: 'v' }, 'Error parsing L7Rule: Invalid L7 Rule: L7 rule type requires a key'],
    [{ type: 'COOKIE', compare_type: 'REGEX', key: 'c', value: '(' }, 'Error parsing L7Rule: Unable to parse regular expression: value has an unclosed group at position 0'],
    [{ type: 'FILE_TYPE', compare_type: 'STARTS_WITH', value: 'jpg' }, 'Error parsing L7Rule: Invalid L7 Rule: invalid comparison type for rule type'],
    [{ type: 'SSL_CONN_HAS_CERT', compare_type: 'EQUAL_TO', key: 'k', value: 'true' }, 'Error parsing L7Rule: Invalid L7 Rule: L7rule type SSL_CONN_HAS_CERT does not use the "key" field.'],
    [{ type: 'PATH', compare_type: 'EQUAL_TO', value: 'a\nb' }, "Invalid input for field/attribute value. Value: 'a\nb'. Value should match the pattern ^[^\\r\\n]*$"],
    [{ type: 'PATH', compare_type: 'EQUAL_TO' }, "Invalid input for field/attribute value. Value: 'None'. Mandatory field missing."],
    [{ type: 'PATH', compare_type: 'EQUAL_TO', value: '/', name: 'x' }, 'Unknown attribute for argument rule_.rule: name'],
  ];
  for (const [body, message] of cases) {
    const r = await h.request('POST', t.rules, { body: { rule: body }, as: memberA });
    assert.equal(r.statusCode, 400, JSON.stringify(body));
    assert.equal(r.json().faultstring, message);
  }
  assert.deepEqual((await h.request('GET', t.rules, { as: memberA })).json().rules, []);
  assert.equal(await statusOf(h, 'load_balancer', t.lb.id), 'ACTIVE');
});

test('the 51st rule is a 409; the policy must be ACTIVE', async () => {
  const rule = { type: 'PATH', compare_type: 'STARTS_WITH', value: '/x' };
  const t = await policy(Array(50).fill(rule));
  let r = await h.request('POST', t.rules, { body: { rule }, as: memberA });
  assert.equal(r.statusCode, 409);
  assert.equal(r.json().faultstring, `Too many rules on L7 policy ${t.policyId}`);
  const u = await policy();
  await h.runtime.db.kysely.updateTable('l7policy').set({ provisioning_status: 'ERROR' }).where('id', '=', u.policyId).execute();
  r = await h.request('POST', u.rules, { body: { rule }, as: memberA });
  assert.equal(r.statusCode, 409);
  assert.equal(r.json().faultstring, `L7Policy ${u.policyId} is immutable and cannot be updated.`);
  assert.equal(await statusOf(h, 'load_balancer', u.lb.id), 'ACTIVE');
});

test('update validates the merged rule; invert null resets; delete then 404', async () => {
  const t = await policy();
  const rule = await createRule(t.rules, { type: 'HEADER', compare_type: 'EQUAL_TO', key: 'X-A', value: 'b', invert: true });
  await h.settled(t.lb.id);
  const url = `${t.rules}/${rule.id}`;
  let r = await h.request('PUT', url, { body: { rule: { value: 'two words' } }, as: memberA });
  assert.equal(r.statusCode, 400);
  assert.equal(r.json().faultstring, 'Error parsing L7Rule: Invalid characters in header value');
  r = await h.request('PUT', url, { body: { rule: { type: 'COOKIE', key: null } }, as: memberA });
  assert.equal(r.statusCode, 400);
  assert.equal(r.json().faultstring, 'Error parsing L7Rule: Invalid L7 Rule: L7 rule type requires a key');
  const hold = await holdJobs(h, t.lb.id);
  r = await h.request('PUT', url, { body: { rule: { type: 'COOKIE', invert: null, tags: ['z'] } }, as: memberA });
  assert.equal(r.statusCode, 200, r.body);
  const u = r.json().rule;
  assert.deepEqual([u.type, u.key, u.value, u.invert, u.tags, u.provisioning_status], ['COOKIE', 'X-A', 'b', false, ['z'], 'PENDING_UPDATE']);
  assert.equal(await statusOf(h, 'l7policy', t.policyId), 'PENDING_UPDATE');
  assert.equal(await statusOf(h, 'listener', t.listenerId), 'PENDING_UPDATE');
  await hold();
  await h.settled(t.lb.id);
  for (const [method, body] of [['GET', undefined], ['PUT', { rule: { value: 'x' } }], ['DELETE', undefined]] as const) {
    assert.equal((await h.request(method, url, { body, as: memberB })).statusCode, 403, method);
  }
  const release = await holdJobs(h, t.lb.id);
  r = await h.request('DELETE', url, { as: memberA });
  assert.equal(r.statusCode, 204);
  assert.equal(await statusOf(h, 'l7rule', rule.id), 'PENDING_DELETE');
  await release();
  await h.settled(t.lb.id);
  assert.equal((await h.request('GET', url, { as: memberA })).statusCode, 404);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, memberA, type Harness } from '../../test/support/harness.js';
import { VIP_SUBNET_ID } from '../config.js';

let h: Harness;
let lbId: string;
let poolId: string;
let policyId: string;
before(async () => {
  h = await startHarness();
  const tree = {
    vip_subnet_id: VIP_SUBNET_ID,
    name: 'fields',
    tags: ['t1'],
    listeners: [
      {
        protocol: 'HTTP',
        protocol_port: 80,
        tags: ['t2'],
        default_pool: { name: 'web', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members: [{ address: '192.0.2.10', protocol_port: 8080, tags: ['t3'] }], healthmonitor: { type: 'HTTP', delay: 5, timeout: 3, max_retries: 2, url_path: '/ok' } },
        l7policies: [{ action: 'REJECT', rules: [{ type: 'PATH', compare_type: 'STARTS_WITH', value: '/x' }] }],
      },
      { protocol: 'TCP', protocol_port: 81, default_pool: { name: 'tcp', protocol: 'TCP', lb_algorithm: 'ROUND_ROBIN', healthmonitor: { type: 'TCP', delay: 5, timeout: 3, max_retries: 2 } } },
    ],
  };
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: tree }, as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  lbId = r.json().loadbalancer.id;
  await h.settled(lbId);
  poolId = (await h.request('GET', `/v2/lbaas/pools?loadbalancer_id=${lbId}&protocol=HTTP`, { as: memberA })).json().pools[0].id;
  policyId = (await h.request('GET', '/v2/lbaas/l7policies', { as: memberA })).json().l7policies[0].id;
});
after(() => h.close());

const collections = () => [
  ['/v2/lbaas/loadbalancers', 'loadbalancers'],
  ['/v2/lbaas/listeners', 'listeners'],
  ['/v2/lbaas/pools', 'pools'],
  [`/v2/lbaas/pools/${poolId}/members`, 'members'],
  ['/v2/lbaas/healthmonitors', 'healthmonitors'],
  ['/v2/lbaas/l7policies', 'l7policies'],
  [`/v2/lbaas/l7policies/${policyId}/rules`, 'rules'],
] as const;

test('a list with `fields` answers exactly those fields of the full objects, whatever it reads less', async () => {
  for (const [path, key] of collections()) {
    const full = (await h.request('GET', path, { as: memberA })).json()[key] as Array<Record<string, unknown>>;
    assert.ok(full.length > 0, path);
    const names = Object.keys(full[0]!);
    const pick = (fields: string[]) => full.map((o) => Object.fromEntries(fields.filter((f) => f in o).map((f) => [f, o[f]])));
    for (const fields of [...names.map((n) => [n]), ['id', 'name'], names, ['tags', 'unknown_field'], names.filter((_, i) => i % 3 === 0)]) {
      const r = await h.request('GET', `${path}?${fields.map((f) => `fields=${f}`).join('&')}`, { as: memberA });
      assert.equal(r.statusCode, 200, r.body);
      assert.deepEqual(r.json()[key], pick(fields), `${path} fields=${fields.join(',')}`);
    }
  }
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, memberA, memberB, admin, PROJECT_B, type Harness } from '../../test/support/harness.js';
import { VIP_NETWORK_ID, VIP_SUBNET_ID } from '../config.js';

let h: Harness;
const PRIVATE_NET = '99999999-9999-4999-8999-999999999999';
before(async () => {
  h = await startHarness({
    network: {
      networks: [
        { id: VIP_NETWORK_ID, name: 'public', projects: [], subnets: [{ id: VIP_SUBNET_ID, name: 'public-subnet', cidr: '127.16.0.0/29', gateway_ip: null, allocation_pools: [{ start: '127.16.0.2', end: '127.16.0.3' }] }] },
        { id: PRIVATE_NET, name: 'b-only', projects: [PROJECT_B], subnets: [{ id: '88888888-8888-4888-8888-888888888888', name: 'b-subnet', cidr: '127.48.0.0/24', gateway_ip: null, allocation_pools: [{ start: '127.48.0.10', end: '127.48.0.20' }] }] },
      ],
    },
  });
});
after(() => h.close());

test('the look-ups the CLI makes before create answer by id and by name', async () => {
  const byId = (await h.request('GET', `/v2.0/subnets?id=${VIP_SUBNET_ID}`, { as: memberA })).json().subnets;
  assert.equal(byId.length, 1);
  assert.equal(byId[0].network_id, VIP_NETWORK_ID);
  const byName = (await h.request('GET', '/v2.0/networks?name=public', { as: memberA })).json().networks;
  assert.deepEqual(byName.map((n: { id: string }) => n.id), [VIP_NETWORK_ID]);
  const none = (await h.request('GET', '/v2.0/subnets?name=nope', { as: memberA })).json().subnets;
  assert.deepEqual(none, []);
  const qos = (await h.request('GET', '/v2.0/qos/policies?name=default-qos', { as: memberA })).json().policies;
  assert.equal(qos.length, 1);
});

test('a network reserved for one project is invisible and unusable to another', async () => {
  const a = (await h.request('GET', `/v2.0/networks?id=${PRIVATE_NET}`, { as: memberA })).json().networks;
  assert.deepEqual(a, []);
  const b = (await h.request('GET', `/v2.0/networks?id=${PRIVATE_NET}`, { as: memberB })).json().networks;
  assert.equal(b.length, 1);
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_network_id: PRIVATE_NET } }, as: memberA });
  assert.equal(r.statusCode, 400);
  assert.equal(r.json().faultstring, `Network ${PRIVATE_NET} not found.`);
});

test('VIP ports show up as ports of their project, and an exhausted subnet says what to do', async () => {
  const made = [];
  for (let i = 0; i < 2; i++) {
    const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } }, as: memberA });
    assert.equal(r.statusCode, 201, r.body);
    made.push(r.json().loadbalancer);
  }
  const ports = (await h.request('GET', `/v2.0/ports?id=${made[0].vip_port_id}`, { as: memberA })).json().ports;
  assert.equal(ports[0].fixed_ips[0].ip_address, made[0].vip_address);
  assert.equal(ports[0].device_id, made[0].id);
  assert.deepEqual((await h.request('GET', `/v2.0/ports?id=${made[0].vip_port_id}`, { as: memberB })).json().ports, []);
  const full = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } }, as: memberA });
  assert.equal(full.statusCode, 409);
  assert.match(full.json().faultstring, /^No more IP addresses available on subnet .*delet(e|ing) load balancers/);
  const all = (await h.request('GET', '/v2.0/ports', { as: admin })).json().ports;
  assert.equal(all.length, 2);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, admin, memberA, readerA, type Harness } from '../../../test/support/harness.js';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

test('every project may list the enabled providers (no links key); fields applies', async () => {
  const r = await h.request('GET', '/v2/lbaas/providers', { as: readerA });
  assert.equal(r.statusCode, 200);
  assert.deepEqual(r.json(), { providers: [{ name: 'noop', description: 'The Ostia no-op provider: API objects only, no data plane.' }] });
  assert.deepEqual((await h.request('GET', '/v2/providers?fields=name', { as: memberA })).json(), { providers: [{ name: 'noop' }] });
});

test('flavor capabilities: admin only, exact name/description filters, fields', async () => {
  const url = '/v2/lbaas/providers/noop/flavor_capabilities';
  const all = (await h.request('GET', url, { as: admin })).json();
  assert.deepEqual(all, { flavor_capabilities: [{ name: 'loadbalancer_topology', description: 'Accepted and ignored: noop builds no data plane.' }] });
  assert.deepEqual((await h.request('GET', `${url}?name=loadbalancer_topology&fields=name`, { as: admin })).json(), { flavor_capabilities: [{ name: 'loadbalancer_topology' }] });
  assert.deepEqual((await h.request('GET', `${url}?name=compute_flavor`, { as: admin })).json(), { flavor_capabilities: [] });
  assert.deepEqual((await h.request('GET', `${url}?description=nope`, { as: admin })).json(), { flavor_capabilities: [] });
  const member = await h.request('GET', url, { as: memberA });
  assert.equal(member.statusCode, 403);
  assert.equal(member.json().faultstring, 'Policy does not allow this request to be performed.');
});

test('availability zone capabilities, and unknown providers', async () => {
  assert.deepEqual((await h.request('GET', '/v2/lbaas/providers/noop/availability_zone_capabilities', { as: admin })).json(), { availability_zone_capabilities: [] });
  for (const kind of ['flavor_capabilities', 'availability_zone_capabilities']) {
    const r = await h.request('GET', `/v2/lbaas/providers/amphora/${kind}`, { as: admin });
    assert.equal(r.statusCode, 400);
    assert.equal(r.json().faultstring, "Provider 'amphora' is not enabled.");
  }
  assert.equal((await h.request('GET', '/v2/lbaas/providers/amphora/availability_zone_capabilities', { as: readerA })).statusCode, 403);
});

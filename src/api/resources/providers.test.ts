import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, admin, memberA, readerA, type Harness } from '../../../test/support/harness.js';
import { AMPHORA_DESCRIPTION } from '../../providers/amphora/driver.js';
import { ProviderAliases } from '../../providers/registry.js';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

test('every project may list the enabled providers (no links key); fields applies', async () => {
  const r = await h.request('GET', '/v2/lbaas/providers', { as: readerA });
  assert.equal(r.statusCode, 200);
  assert.deepEqual(r.json(), { providers: [{ name: 'noop', description: 'NoOp driver.' }] });
  assert.deepEqual((await h.request('GET', '/v2/providers?fields=name', { as: memberA })).json(), { providers: [{ name: 'noop' }] });
});

test('flavor capabilities: admin only, exact name/description filters, fields', async () => {
  const url = '/v2/lbaas/providers/noop/flavor_capabilities';
  const all = (await h.request('GET', url, { as: admin })).json();
  // Octavia's no-op driver's list, word for word (octavia/api/drivers/noop_driver/driver.py).
  assert.deepEqual(all, { flavor_capabilities: [{ name: 'amp_image_tag', description: 'The glance image tag to use for this load balancer.' }] });
  assert.deepEqual((await h.request('GET', `${url}?name=amp_image_tag&fields=name`, { as: admin })).json(), { flavor_capabilities: [{ name: 'amp_image_tag' }] });
  assert.deepEqual((await h.request('GET', `${url}?name=compute_flavor`, { as: admin })).json(), { flavor_capabilities: [] });
  assert.deepEqual((await h.request('GET', `${url}?description=nope`, { as: admin })).json(), { flavor_capabilities: [] });
  const member = await h.request('GET', url, { as: memberA });
  assert.equal(member.statusCode, 403);
  assert.equal(member.json().faultstring, 'Policy does not allow this request to be performed.');
});

test('availability zone capabilities, and unknown providers', async () => {
  assert.deepEqual((await h.request('GET', '/v2/lbaas/providers/noop/availability_zone_capabilities', { as: admin })).json(), {
    availability_zone_capabilities: [{ name: 'compute_zone', description: 'The compute availability zone to use for this loadbalancer.' }],
  });
  for (const kind of ['flavor_capabilities', 'availability_zone_capabilities']) {
    const r = await h.request('GET', `/v2/lbaas/providers/amphora/${kind}`, { as: admin });
    assert.equal(r.statusCode, 400);
    assert.equal(r.json().faultstring, "Provider 'amphora' is not enabled.");
  }
  assert.equal((await h.request('GET', '/v2/lbaas/providers/amphora/availability_zone_capabilities', { as: readerA })).statusCode, 403);
});

test("every provider Ostia has is described in Octavia's words and with no comma (tools split provider lists on commas)", async () => {
  const names = ['noop', 'amphora', 'ovn', ...Object.keys(ProviderAliases)];
  // The ovn provider needs its databases named to start; nothing here connects to them.
  const all = await startHarness({ api: { enabledProviders: names }, ovn: { nbConnection: 'unix:/nonexistent/ovnnb_db.sock', sbConnection: 'unix:/nonexistent/ovnsb_db.sock' } });
  try {
    const providers: Array<{ name: string; description: string }> = (await all.request('GET', '/v2/lbaas/providers', { as: readerA })).json().providers;
    assert.deepEqual(providers.map((p) => p.name), names);
    for (const p of providers) assert.ok(!p.description.includes(','), `${p.name}: ${p.description}`);
    const text = Object.fromEntries(providers.map((p) => [p.name, p.description]));
    assert.equal(text.noop, 'NoOp driver.');
    assert.equal(text.ovn, 'Octavia OVN driver.');
    // startsWith: a deployment note may follow the base text.
    assert.ok(text.amphora!.startsWith(AMPHORA_DESCRIPTION), text.amphora);
    assert.ok(text.octavia!.startsWith('Deprecated alias of the Octavia Amphora driver.'), text.octavia);
  } finally {
    await all.close();
  }
});

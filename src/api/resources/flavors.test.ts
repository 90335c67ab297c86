import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, admin, memberA, readerA, type Harness } from '../../../test/support/harness.js';
import { VIP_SUBNET_ID } from '../../config.js';
import { NIL_UUID } from '../catalog-routes.js';

let h: Harness;
let profileId: string;
before(async () => {
  h = await startHarness();
  const r = await h.request('POST', '/v2/lbaas/flavorprofiles', { body: { flavorprofile: { name: 'fp', provider_name: 'noop', flavor_data: '{}' } }, as: admin });
  profileId = r.json().flavorprofile.id;
});
after(() => h.close());

async function createFlavor(body: Record<string, unknown>) {
  const r = await h.request('POST', '/v2/lbaas/flavors', { body: { flavor: { flavor_profile_id: profileId, ...body } }, as: admin });
  assert.equal(r.statusCode, 201, r.body);
  return r.json().flavor;
}

test('create applies defaults; every project may read flavors', async () => {
  const f = await createFlavor({ name: 'small' });
  assert.deepEqual(f, { id: f.id, name: 'small', description: '', enabled: true, flavor_profile_id: profileId });
  const got = await h.request('GET', `/v2/lbaas/flavors/${f.id}`, { as: readerA });
  assert.deepEqual(got.json(), { flavor: f });
  const list = (await h.request('GET', '/v2/flavors?name=small', { as: memberA })).json();
  assert.deepEqual(list, { flavors: [f], flavors_links: [] });
});

test('create errors: duplicate name, unknown profile, schema; members may not write', async () => {
  await createFlavor({ name: 'dup' });
  const dup = await h.request('POST', '/v2/lbaas/flavors', { body: { flavor: { name: 'dup', flavor_profile_id: profileId } }, as: admin });
  assert.equal(dup.statusCode, 409);
  assert.equal(dup.json().faultstring, 'A flavor of dup already exists.');
  const missing = '11111111-2222-4333-8444-555555555555';
  const noProfile = await h.request('POST', '/v2/lbaas/flavors', { body: { flavor: { name: 'x', flavor_profile_id: missing } }, as: admin });
  assert.equal(noProfile.statusCode, 400);
  assert.equal(noProfile.json().faultstring, `${missing} is not a valid option for flavor_profile_id`);
  const noName = await h.request('POST', '/v2/lbaas/flavors', { body: { flavor: { flavor_profile_id: profileId } }, as: admin });
  assert.equal(noName.json().faultstring, "Invalid input for field/attribute name. Value: 'None'. Mandatory field missing.");
  const badUuid = await h.request('POST', '/v2/lbaas/flavors', { body: { flavor: { name: 'x', flavor_profile_id: 'nope' } }, as: admin });
  assert.equal(badUuid.json().faultstring, "Invalid input for field/attribute flavor_profile_id. Value: 'nope'. Value should be UUID format");
  const member = await h.request('POST', '/v2/lbaas/flavors', { body: { flavor: { name: 'm', flavor_profile_id: profileId } }, as: memberA });
  assert.equal(member.statusCode, 403);
  const rows = await h.runtime.db.kysely.selectFrom('flavor').select('name').where('name', 'in', ['x', 'm']).execute();
  assert.deepEqual(rows, []);
});

test('PUT changes name, description and enabled only', async () => {
  const f = await createFlavor({ name: 'medium', description: 'd' });
  const r = await h.request('PUT', `/v2/lbaas/flavors/${f.id}`, { body: { flavor: { name: 'medium2', description: null, enabled: 'false' } }, as: admin });
  assert.equal(r.statusCode, 200);
  assert.deepEqual(r.json().flavor, { ...f, name: 'medium2', description: '', enabled: false });
  const profile = await h.request('PUT', `/v2/lbaas/flavors/${f.id}`, { body: { flavor: { flavor_profile_id: profileId } }, as: admin });
  assert.equal(profile.json().faultstring, 'Unknown attribute for argument flavor_.flavor: flavor_profile_id');
  await createFlavor({ name: 'taken' });
  const dup = await h.request('PUT', `/v2/lbaas/flavors/${f.id}`, { body: { flavor: { name: 'taken' } }, as: admin });
  assert.equal(dup.statusCode, 409);
  assert.equal(dup.json().faultstring, 'A flavor of taken already exists.');
  assert.equal((await h.request('PUT', `/v2/lbaas/flavors/${f.id}`, { body: { flavor: { enabled: true } }, as: memberA })).statusCode, 403);
});

test('list filters, sorts and pages', async () => {
  await createFlavor({ name: 'z-off', enabled: false });
  const off = (await h.request('GET', '/v2/lbaas/flavors?enabled=false', { as: admin })).json().flavors as Array<{ name: string }>;
  assert.ok(off.length >= 1 && off.every((f) => (f as unknown as { enabled: boolean }).enabled === false));
  const sorted = (await h.request('GET', '/v2/lbaas/flavors?sort=name:desc&fields=name', { as: admin })).json().flavors as Array<{ name: string }>;
  assert.deepEqual(sorted, [...sorted].sort((a, b) => b.name.localeCompare(a.name)));
  assert.deepEqual(Object.keys(sorted[0]!), ['name']);
  const page = (await h.request('GET', '/v2/lbaas/flavors?limit=1', { as: admin })).json();
  assert.equal(page.flavors.length, 1);
  assert.equal(page.flavors_links[0].rel, 'next');
  assert.equal((await h.request('GET', '/v2/lbaas/flavors?flavor_data=x', { as: admin })).statusCode, 400);
});

test('a flavor used by a load balancer cannot be deleted; the nil UUID is 404', async () => {
  const f = await createFlavor({ name: 'in-use' });
  const lb = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } }, as: memberA });
  assert.equal(lb.statusCode, 201, lb.body);
  const lbId = lb.json().loadbalancer.id;
  await h.settled(lbId);
  // Bound in the table directly: this test is about the flavor's rule, not LB create's flavor handling.
  await h.runtime.db.kysely.updateTable('load_balancer').set({ flavor_id: f.id }).where('id', '=', lbId).execute();
  const refused = await h.request('DELETE', `/v2/lbaas/flavors/${f.id}`, { as: admin });
  assert.equal(refused.statusCode, 409);
  assert.equal(refused.json().faultstring, `Flavor ${f.id} is in use and cannot be modified.`);

  assert.equal((await h.request('DELETE', `/v2/lbaas/loadbalancers/${lbId}`, { as: memberA })).statusCode, 204);
  await h.settled(lbId);
  assert.equal((await h.request('DELETE', `/v2/lbaas/flavors/${f.id}`, { as: admin })).statusCode, 204);
  assert.equal((await h.request('GET', `/v2/lbaas/flavors/${f.id}`, { as: admin })).json().faultstring, `Flavor ${f.id} not found.`);
  const nil = await h.request('GET', `/v2/lbaas/flavors/${NIL_UUID}`, { as: admin });
  assert.equal(nil.statusCode, 404);
  assert.equal(nil.json().faultstring, `Flavor ${NIL_UUID} not found.`);
});

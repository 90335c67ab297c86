import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, admin, readerA, type Harness } from '../../../test/support/harness.js';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

const base = '/v2/lbaas/availabilityzoneprofiles';

test('AZ profiles: CRUD with availability_zone_data as a JSON string and the singular links key', async () => {
  const r = await h.request('POST', base, { body: { availability_zone_profile: { name: 'az-p', provider_name: 'noop', availability_zone_data: '{}' } }, as: admin });
  assert.equal(r.statusCode, 201, r.body);
  const azp = r.json().availability_zone_profile;
  assert.deepEqual(azp, { id: azp.id, name: 'az-p', provider_name: 'noop', availability_zone_data: '{}' });
  assert.deepEqual((await h.request('GET', base, { as: admin })).json(), { availability_zone_profiles: [azp], availability_zone_profile_links: [] });

  const put = await h.request('PUT', `${base}/${azp.id}`, { body: { availability_zone_profile: { name: 'renamed' } }, as: admin });
  assert.equal(put.statusCode, 200);
  assert.equal(put.json().availability_zone_profile.name, 'renamed');

  const az = await h.request('POST', '/v2/lbaas/availabilityzones', { body: { availability_zone: { name: 'zone-1', availability_zone_profile_id: azp.id } }, as: admin });
  assert.equal(az.statusCode, 201, az.body);
  const frozen = await h.request('PUT', `${base}/${azp.id}`, { body: { availability_zone_profile: { provider_name: 'noop' } }, as: admin });
  assert.equal(frozen.statusCode, 409);
  assert.equal(frozen.json().faultstring, `Availability Zone Profile ${azp.id} is in use and cannot be modified.`);
  assert.equal((await h.request('DELETE', `${base}/${azp.id}`, { as: admin })).statusCode, 409);

  assert.equal((await h.request('DELETE', '/v2/lbaas/availabilityzones/zone-1', { as: admin })).statusCode, 204);
  assert.equal((await h.request('DELETE', `${base}/${azp.id}`, { as: admin })).statusCode, 204);
  const gone = await h.request('GET', `${base}/${azp.id}`, { as: admin });
  assert.equal(gone.statusCode, 404);
  assert.equal(gone.json().faultstring, `Availability Zone Profile ${azp.id} not found.`);
});

test('AZ profile data is validated as JSON, then by the provider (noop takes any, as Octavia\'s no-op driver does)', async () => {
  const post = (data: string, provider = 'noop') => h.request('POST', base, { body: { availability_zone_profile: { name: 'x', provider_name: provider, availability_zone_data: data } }, as: admin });
  const count = async () => (await h.request('GET', base, { as: admin })).json().availability_zone_profiles.length;
  const before = await count();
  assert.equal((await post('not json')).json().faultstring, 'not json is not a valid option for availability_zone_data');
  assert.equal((await post('{}', 'octavia')).json().faultstring, "Provider 'octavia' is not enabled.");
  assert.equal(await count(), before);
  const data = '{"compute_zone": "nova", "management_network": "m", "valid_vip_networks": ["a"], "unheard_of": 1}';
  const accepted = await post(data);
  assert.equal(accepted.statusCode, 201);
  assert.equal(accepted.json().availability_zone_profile.availability_zone_data, data);
});

test('AZ profiles are admin-only', async () => {
  assert.equal((await h.request('GET', base, { as: readerA })).statusCode, 403);
});

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, admin, memberA, readerA, type Harness } from '../../../test/support/harness.js';
import { VIP_SUBNET_ID } from '../../config.js';

let h: Harness;
let profileId: string;
before(async () => {
  h = await startHarness();
  const r = await h.request('POST', '/v2/lbaas/availabilityzoneprofiles', { body: { availability_zone_profile: { name: 'azp', provider_name: 'noop', availability_zone_data: '{}' } }, as: admin });
  profileId = r.json().availability_zone_profile.id;
});
after(() => h.close());

const base = '/v2/lbaas/availabilityzones';

async function createZone(body: Record<string, unknown>) {
  const r = await h.request('POST', base, { body: { availability_zone: { availability_zone_profile_id: profileId, ...body } }, as: admin });
  assert.equal(r.statusCode, 201, r.body);
  return r.json().availability_zone;
}

test('zones are keyed by name, readable by every project, written by admins', async () => {
  const az = await createZone({ name: 'az1', description: 'first' });
  assert.deepEqual(az, { name: 'az1', description: 'first', enabled: true, availability_zone_profile_id: profileId });
  assert.deepEqual((await h.request('GET', `${base}/az1`, { as: readerA })).json(), { availability_zone: az });
  assert.deepEqual((await h.request('GET', `/v2.0/availabilityzones?name=az1`, { as: memberA })).json(), { availability_zones: [az], availability_zones_links: [] });
  assert.equal((await h.request('POST', base, { body: { availability_zone: { name: 'm', availability_zone_profile_id: profileId } }, as: memberA })).statusCode, 403);
  assert.equal((await h.request('DELETE', `${base}/az1`, { as: memberA })).statusCode, 403);
});

test('create errors: duplicate name, unknown profile', async () => {
  await createZone({ name: 'az-dup' });
  const dup = await h.request('POST', base, { body: { availability_zone: { name: 'az-dup', availability_zone_profile_id: profileId } }, as: admin });
  assert.equal(dup.statusCode, 409);
  assert.equal(dup.json().faultstring, 'A availability zone of az-dup already exists.');
  const missing = '11111111-2222-4333-8444-555555555555';
  const noProfile = await h.request('POST', base, { body: { availability_zone: { name: 'az-x', availability_zone_profile_id: missing } }, as: admin });
  assert.equal(noProfile.statusCode, 400);
  assert.equal(noProfile.json().faultstring, `${missing} is not a valid option for availability_zone_profile_id`);
  assert.equal((await h.request('GET', `${base}/az-x`, { as: admin })).json().faultstring, 'Availability Zone az-x not found.');
});

test('PUT changes description and enabled only', async () => {
  const az = await createZone({ name: 'az-put' });
  const r = await h.request('PUT', `${base}/az-put`, { body: { availability_zone: { description: 'now', enabled: false } }, as: admin });
  assert.equal(r.statusCode, 200);
  assert.deepEqual(r.json().availability_zone, { ...az, description: 'now', enabled: false });
  const rename = await h.request('PUT', `${base}/az-put`, { body: { availability_zone: { name: 'other' } }, as: admin });
  assert.equal(rename.statusCode, 400);
  assert.equal(rename.json().faultstring, 'Unknown attribute for argument availability_zone_.availability_zone: name');
  assert.equal((await h.request('GET', `${base}?enabled=false&fields=name`, { as: admin })).json().availability_zones.length, 1);
});

test('a zone used by a load balancer cannot be deleted', async () => {
  await createZone({ name: 'az-used' });
  const lb = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } }, as: memberA });
  assert.equal(lb.statusCode, 201, lb.body);
  const lbId = lb.json().loadbalancer.id;
  await h.settled(lbId);
  // Bound in the table directly: this test is about the zone's rule, not LB create's AZ handling.
  await h.runtime.db.kysely.updateTable('load_balancer').set({ availability_zone: 'az-used' }).where('id', '=', lbId).execute();
  const refused = await h.request('DELETE', `${base}/az-used`, { as: admin });
  assert.equal(refused.statusCode, 409);
  assert.equal(refused.json().faultstring, 'Availability Zone az-used is in use and cannot be modified.');
  await createZone({ name: 'az-free' });
  assert.equal((await h.request('DELETE', `${base}/az-free`, { as: admin })).statusCode, 204);
  assert.equal((await h.request('DELETE', `${base}/az-free`, { as: admin })).statusCode, 404);
});

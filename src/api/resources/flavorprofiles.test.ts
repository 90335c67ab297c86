import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, admin, memberA, type Harness } from '../../../test/support/harness.js';
import { NIL_UUID } from '../catalog-routes.js';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

async function createProfile(body: Record<string, unknown> = {}) {
  const r = await h.request('POST', '/v2/lbaas/flavorprofiles', { body: { flavorprofile: { name: 'fp', provider_name: 'noop', flavor_data: '{"loadbalancer_topology": "SINGLE"}', ...body } }, as: admin });
  assert.equal(r.statusCode, 201, r.body);
  return r.json().flavorprofile;
}

test('create, show and list a flavor profile; flavor_data stays a string; links key is singular', async () => {
  const fp = await createProfile({ name: 'gold' });
  assert.deepEqual(Object.keys(fp).sort(), ['flavor_data', 'id', 'name', 'provider_name']);
  assert.equal(fp.flavor_data, '{"loadbalancer_topology": "SINGLE"}');
  const got = await h.request('GET', `/v2.0/lbaas/flavorprofiles/${fp.id}`, { as: admin });
  assert.deepEqual(got.json(), { flavorprofile: fp });
  const fields = await h.request('GET', `/v2/flavorprofiles/${fp.id}?fields=name`, { as: admin });
  assert.deepEqual(fields.json(), { flavorprofile: { name: 'gold' } });
  const list = (await h.request('GET', '/v2/lbaas/flavorprofiles?name=gold', { as: admin })).json();
  assert.deepEqual(list, { flavorprofiles: [fp], flavorprofile_links: [] });
});

test("the noop provider takes any flavor metadata, as Octavia's no-op driver does", async () => {
  for (const data of ['{"compute_flavor": "m1", "loadbalancer_topology": "ACTIVE_STANDBY"}', '{"amp_image_tag": "x", "anything": {"nested": [1]}}', '{}']) {
    const r = await h.request('POST', '/v2/lbaas/flavorprofiles', { body: { flavorprofile: { name: 'any', provider_name: 'noop', flavor_data: data } }, as: admin });
    assert.equal(r.statusCode, 201, data);
    assert.equal(r.json().flavorprofile.flavor_data, data);
  }
});

test('invalid profiles are refused with Octavia’s messages and nothing is written', async () => {
  const count = async () => Number((await h.runtime.db.kysely.selectFrom('flavor_profile').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  const before = await count();
  const cases: Array<[Record<string, unknown>, number, string]> = [
    [{ flavor_data: '{bad' }, 400, '{bad is not a valid option for flavor_data'],
    [{ flavor_data: '[1]' }, 400, '[1] is not a valid option for flavor_data'],
    [{ provider_name: 'amphora' }, 400, "Provider 'amphora' is not enabled."],
    [{ flavor_data: 'x'.repeat(4097) }, 400, `Invalid input for field/attribute flavor_data. Value: '${'x'.repeat(4097)}'. Value should have a maximum character requirement of 4096`],
    [{ name: undefined }, 400, "Invalid input for field/attribute name. Value: 'None'. Mandatory field missing."],
    [{ id: NIL_UUID }, 400, 'Unknown attribute for argument flavor_profile_.flavorprofile: id'],
  ];
  for (const [patch, status, message] of cases) {
    const body = { flavorprofile: { name: 'bad', provider_name: 'noop', flavor_data: '{}', ...patch } };
    const r = await h.request('POST', '/v2/lbaas/flavorprofiles', { body, as: admin });
    assert.equal(r.statusCode, status, JSON.stringify(patch));
    assert.equal(r.json().faultstring, message);
  }
  assert.equal(await count(), before);
});

test('PUT: nulls are refused; provider and data are frozen while a flavor uses the profile', async () => {
  const fp = await createProfile();
  for (const key of ['name', 'provider_name', 'flavor_data']) {
    const r = await h.request('PUT', `/v2/lbaas/flavorprofiles/${fp.id}`, { body: { flavorprofile: { [key]: null } }, as: admin });
    assert.equal(r.statusCode, 400);
    assert.equal(r.json().faultstring, `None is not a valid option for ${key}`);
  }
  const bad = await h.request('PUT', `/v2/lbaas/flavorprofiles/${fp.id}`, { body: { flavorprofile: { flavor_data: 'nope' } }, as: admin });
  assert.equal(bad.json().faultstring, 'nope is not a valid option for flavor_data');
  const ok = await h.request('PUT', `/v2/lbaas/flavorprofiles/${fp.id}`, { body: { flavorprofile: { name: 'renamed', flavor_data: '{}' } }, as: admin });
  assert.equal(ok.statusCode, 200);
  assert.deepEqual(ok.json().flavorprofile, { ...fp, name: 'renamed', flavor_data: '{}' });

  const flavor = await h.request('POST', '/v2/lbaas/flavors', { body: { flavor: { name: 'uses-fp', flavor_profile_id: fp.id } }, as: admin });
  assert.equal(flavor.statusCode, 201);
  const frozen = await h.request('PUT', `/v2/lbaas/flavorprofiles/${fp.id}`, { body: { flavorprofile: { flavor_data: '{}' } }, as: admin });
  assert.equal(frozen.statusCode, 409);
  assert.equal(frozen.json().faultstring, `Flavor profile ${fp.id} is in use and cannot be modified.`);
  assert.equal((await h.request('PUT', `/v2/lbaas/flavorprofiles/${fp.id}`, { body: { flavorprofile: { name: 'still-ok' } }, as: admin })).statusCode, 200);

  const del = await h.request('DELETE', `/v2/lbaas/flavorprofiles/${fp.id}`, { as: admin });
  assert.equal(del.statusCode, 409);
  assert.equal(del.json().faultstring, `Flavor profile ${fp.id} is in use and cannot be modified.`);
});

test('delete, then 404; the nil UUID is always 404', async () => {
  const fp = await createProfile();
  const del = await h.request('DELETE', `/v2/lbaas/flavorprofiles/${fp.id}`, { as: admin });
  assert.equal(del.statusCode, 204);
  assert.equal(del.body, '');
  const gone = await h.request('GET', `/v2/lbaas/flavorprofiles/${fp.id}`, { as: admin });
  assert.equal(gone.statusCode, 404);
  assert.equal(gone.json().faultstring, `Flavor Profile ${fp.id} not found.`);
  assert.equal((await h.request('PUT', `/v2/lbaas/flavorprofiles/${fp.id}`, { body: { flavorprofile: { name: 'x' } }, as: admin })).statusCode, 404);
  assert.equal((await h.request('DELETE', `/v2/lbaas/flavorprofiles/${NIL_UUID}`, { as: admin })).json().faultstring, `Flavor Profile ${NIL_UUID} not found.`);
});

test('flavor profiles are admin-only', async () => {
  const fp = await createProfile();
  for (const [method, url] of [['GET', '/v2/lbaas/flavorprofiles'], ['GET', `/v2/lbaas/flavorprofiles/${fp.id}`], ['DELETE', `/v2/lbaas/flavorprofiles/${fp.id}`]] as const) {
    const r = await h.request(method, url, { as: memberA });
    assert.equal(r.statusCode, 403, `${method} ${url}`);
    assert.equal(r.json().faultstring, 'Policy does not allow this request to be performed.');
  }
  const post = await h.request('POST', '/v2/lbaas/flavorprofiles', { body: { flavorprofile: { name: 'x', provider_name: 'noop', flavor_data: '{}' } }, as: memberA });
  assert.equal(post.statusCode, 403);
});

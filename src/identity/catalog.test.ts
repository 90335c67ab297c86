import { test } from 'node:test';
import assert from 'node:assert/strict';
import { identityUrl, serviceCatalog } from './catalog.js';

const B = 'http://127.0.0.1:9876';

test('one entry per service, with the URLs clients expect', () => {
  const catalog = serviceCatalog(B, 'RegionOne');
  const urls = Object.fromEntries(catalog.map((s) => [s.type, s.endpoints[0]!.url]));
  assert.deepEqual(urls, {
    identity: `${B}/identity/v3`,
    'load-balancer': B,
    network: B,
    'key-manager': `${B}/key-manager`,
  });
  assert.equal(identityUrl(B), `${B}/identity/v3`);
  assert.equal(catalog.find((s) => s.type === 'load-balancer')?.name, 'octavia');
});

test('public, internal and admin endpoints, each with region and region_id', () => {
  for (const service of serviceCatalog(B, 'RegionTwo')) {
    assert.deepEqual(service.endpoints.map((e) => e.interface), ['public', 'internal', 'admin']);
    for (const e of service.endpoints) {
      assert.equal(e.region, 'RegionTwo');
      assert.equal(e.region_id, 'RegionTwo');
    }
  }
});

test('ids are stable and unique', () => {
  const a = serviceCatalog(B, 'RegionOne');
  assert.deepEqual(serviceCatalog(B, 'RegionOne'), a);
  const ids = a.flatMap((s) => [s.id, ...s.endpoints.map((e) => e.id)]);
  assert.equal(new Set(ids).size, ids.length);
  for (const id of ids) assert.match(id, /^[0-9a-f]{32}$/);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as identity from './index.js';

test('the public surface the API and CLI build on', () => {
  for (const name of ['createAuthenticator', 'keystone', 'cloudsYaml', 'authorize', 'allowed', 'canSeeAllProjects', 'serviceCatalog', 'identityUrl', 'roleId'] as const)
    assert.equal(typeof identity[name], 'function', name);
  for (const name of ['TokenService', 'Directory', 'ExternalKeystone'] as const) assert.equal(typeof identity[name], 'function', name);
  assert.equal(identity.IDENTITY_PREFIX, '/identity');
  assert.deepEqual(identity.DEFAULT_DOMAIN, { id: 'default', name: 'Default' });
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { defaultConfig, type Config } from '../config.js';
import { cloudsYaml } from './clouds-yaml.js';

const B = 'http://127.0.0.1:9876';
const config = defaultConfig('/tmp/ostia-test');
const withMode = (mode: Config['identity']['mode']): Config => ({ ...config, identity: { ...config.identity, mode } });

test('one password cloud per default user, logging in through the embedded Keystone', () => {
  const { clouds } = parse(cloudsYaml(B, config));
  assert.deepEqual(Object.keys(clouds), ['ostia', 'ostia-demo', 'ostia-alt', 'ostia-reader']);
  assert.deepEqual(clouds.ostia, {
    auth_type: 'password',
    auth: {
      auth_url: `${B}/identity/v3`,
      username: 'admin',
      password: 'secret',
      project_name: 'admin',
      user_domain_name: 'Default',
      project_domain_name: 'Default',
    },
    identity_api_version: 3,
    region_name: 'RegionOne',
    interface: 'public',
  });
  assert.equal(clouds['ostia-reader'].auth.username, 'demo-reader');
  assert.equal(clouds['ostia-reader'].auth.project_name, 'demo');
});

test('the noauth cloud only in noauth mode', () => {
  assert.equal(parse(cloudsYaml(B, withMode('embedded'))).clouds['ostia-noauth'], undefined);
  assert.deepEqual(parse(cloudsYaml(B, withMode('noauth'))).clouds['ostia-noauth'], { auth_type: 'none', auth: { endpoint: B } });
});

test('clouds for users the config does not have are left out', () => {
  const custom = { ...config, identity: { ...config.identity, users: config.identity.users.filter((u) => u.name === 'demo') } };
  assert.deepEqual(Object.keys(parse(cloudsYaml(B, custom)).clouds), ['ostia-demo']);
});

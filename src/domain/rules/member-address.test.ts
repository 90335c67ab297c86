import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultConfig } from '../../config.js';
import { isApiError } from '../errors.js';
import { assertMemberAddressAllowed, memberAddressPolicy, type MemberAddressField } from './member-address.js';

const policy = memberAddressPolicy(defaultConfig('/tmp/x'));

function refusal(address: string, field: MemberAddressField = 'address', p = policy): string | null {
  try {
    assertMemberAddressAllowed(address, field, p);
    return null;
  } catch (e) {
    assert.ok(isApiError(e));
    assert.equal(e.status, 400);
    return e.message;
  }
}

test('reserved addresses are refused with InvalidOption wording, in any spelling', () => {
  assert.equal(refusal('169.254.169.254'), '169.254.169.254 is not a valid option for member address');
  assert.equal(refusal('::ffff:169.254.169.254', 'monitor_address'), '::ffff:169.254.169.254 is not a valid option for member monitor_address');
});

test('the management network, the controller listening addresses and loopback outside the member subnets are refused', () => {
  const cases: Array<[string, RegExp]> = [
    ['127.80.0.10', /management network/],
    ['127.80.255.255', /management network/],
    ['::ffff:127.80.3.4', /management network/],
    ['127.0.0.1', /listens on it/], // api.host and the health manager's host
    ['::ffff:7f00:1', /listens on it/],
    ['127.0.0.2', /loopback address .* outside every member subnet/],
    ['127.255.255.254', /loopback address/],
    ['::1', /loopback address/],
    ['0:0:0:0:0:0:0:1', /loopback address/],
    ['0.0.0.0', /unspecified address/],
    ['::', /unspecified address/],
  ];
  for (const [ip, why] of cases) {
    const message = refusal(ip);
    assert.ok(message, `${ip} was accepted`);
    assert.match(message, why, ip);
    assert.ok(message.startsWith(`Member address ${ip} is not allowed: `), message);
    // Only what the caller sent: no configured range or other internal address.
    assert.doesNotMatch(message.replace(ip, ''), /\d+\.\d+\.\d+|\/\d+|::/, message);
  }
  assert.match(refusal('127.80.0.10', 'monitor_address')!, /^Member monitor_address 127\.80\.0\.10 is not allowed/);
});

test('member subnets, including loopback ones, and ordinary addresses are allowed', () => {
  for (const ip of ['127.32.0.11', '127.32.255.250', '127.16.0.20', '10.0.0.5', '192.0.2.10', '2001:db8::5', '::ffff:10.0.0.5', '128.0.0.1'])
    assert.equal(refusal(ip), null, ip);
});

test('a member subnet containing ::1 makes it a member address; the management network stays refused even inside a member subnet', () => {
  const config = defaultConfig('/tmp/x');
  config.network.networks[1]!.subnets.push({ id: 'v6', name: 'v6', cidr: '::1/128', gateway_ip: null, allocation_pools: [] });
  config.network.networks[1]!.subnets.push({ id: 'wide', name: 'wide', cidr: '127.0.0.0/8', gateway_ip: null, allocation_pools: [] });
  const p = memberAddressPolicy(config);
  assert.equal(refusal('::1', 'address', p), null);
  assert.equal(refusal('127.0.0.2', 'address', p), null);
  assert.match(refusal('127.80.0.10', 'address', p)!, /management network/);
  assert.match(refusal('127.0.0.1', 'address', p)!, /listens on it/);
});

test('the listening addresses follow api.host and amphora.healthListen; wildcard hosts name no single address', () => {
  const config = defaultConfig('/tmp/x');
  config.api.host = '192.0.2.7';
  config.amphora.healthListen = '[2001:db8::9]:5555';
  const p = memberAddressPolicy(config);
  assert.match(refusal('192.0.2.7', 'address', p)!, /listens on it/);
  assert.match(refusal('2001:db8:0::9', 'address', p)!, /listens on it/);
  assert.match(refusal('127.0.0.1', 'address', p)!, /loopback address/);
  config.api.host = '0.0.0.0';
  config.amphora.healthListen = '[::]:5555';
  assert.deepEqual(memberAddressPolicy(config).controllerAddresses, []);
});

test('network.allowControlPlaneMembers (labs) lets every control-plane address through but not the reserved ones', () => {
  const config = defaultConfig('/tmp/x');
  config.network.allowControlPlaneMembers = true;
  const p = memberAddressPolicy(config);
  for (const ip of ['127.80.0.10', '127.0.0.1', '127.0.0.2', '::1', '0.0.0.0']) assert.equal(refusal(ip, 'address', p), null, ip);
  assert.match(refusal('169.254.169.254', 'address', p)!, /not a valid option/);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseCidr, reservedSubnetAddress } from './net.js';

test("reserved subnet addresses follow Neutron's check_subnet_ip", () => {
  const v4 = parseCidr('10.0.0.0/24')!;
  assert.equal(reservedSubnetAddress(v4, '10.0.0.0'), 'network');
  assert.equal(reservedSubnetAddress(v4, '10.0.0.255'), 'broadcast');
  assert.equal(reservedSubnetAddress(v4, '10.0.0.1'), null);
  assert.equal(reservedSubnetAddress(v4, '10.0.0.254'), null);
  assert.equal(reservedSubnetAddress(v4, '10.0.1.0'), null, 'outside the subnet is another rule');
  // Point-to-point /31 and host /32 have neither (RFC 3021).
  assert.equal(reservedSubnetAddress(parseCidr('10.0.0.0/31')!, '10.0.0.0'), null);
  assert.equal(reservedSubnetAddress(parseCidr('10.0.0.7/32')!, '10.0.0.7'), null);
  const v6 = parseCidr('2001:db8:1::/64')!;
  assert.equal(reservedSubnetAddress(v6, '2001:db8:1::'), 'subnet-router anycast');
  assert.equal(reservedSubnetAddress(v6, '2001:db8:1::ffff:ffff:ffff:ffff'), null, 'IPv6 has no broadcast');
});

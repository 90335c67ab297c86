import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KNOWN_ROLES, roleId, withImpliedRoles } from './roles.js';

test('role ids are stable 32-hex strings, distinct per name', () => {
  assert.match(roleId('admin'), /^[0-9a-f]{32}$/);
  assert.equal(roleId('admin'), roleId('admin'));
  assert.equal(new Set(KNOWN_ROLES.map(roleId)).size, KNOWN_ROLES.length);
});

test('admin implies member and reader, member implies reader', () => {
  assert.deepEqual(withImpliedRoles(['admin']), ['admin', 'member', 'reader']);
  assert.deepEqual(withImpliedRoles(['member']), ['member', 'reader']);
  assert.deepEqual(withImpliedRoles(['reader', 'member']), ['reader', 'member']);
  assert.deepEqual(withImpliedRoles(['load-balancer_member']), ['load-balancer_member']);
});

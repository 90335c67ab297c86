import { test } from 'node:test';
import assert from 'node:assert/strict';
import { memberChanges } from './diff.js';
import { ids, listener, loadBalancer, member, monitor, pool } from '../haproxy/testing/fixtures.js';
import type { AmphoraConfig } from '../../domain/amphora-config.js';

function withMembers(members: ReturnType<typeof member>[], overrides: Partial<AmphoraConfig> = {}): AmphoraConfig {
  return loadBalancer(1, {
    listeners: [listener(1, { defaultPoolId: ids.pool(1) })],
    pools: [pool(1, { monitor: monitor(1), members })],
    ...overrides,
  });
}

test('member additions, removals, weights and admin state are runtime changes, removals first', () => {
  const before = withMembers([member(1), member(2), member(3)]);
  const after = { ...withMembers([member(1, { weight: 5 }), member(3, { enabled: false }), member(4)]), version: 2 };
  assert.deepEqual(memberChanges(before, after), [
    { kind: 'remove', poolId: ids.pool(1), memberId: ids.member(2) },
    { kind: 'add', poolId: ids.pool(1), member: member(4) },
    { kind: 'weight', poolId: ids.pool(1), memberId: ids.member(1), weight: 5 },
    { kind: 'enabled', poolId: ids.pool(1), memberId: ids.member(3), enabled: false },
  ]);
});

test('a member whose address, port, backup flag or monitor target changes is replaced', () => {
  for (const change of [{ address: '10.0.9.9' }, { port: 9999 }, { backup: true }, { monitorAddress: '10.0.8.8' }, { monitorPort: 7000 }]) {
    const changes = memberChanges(withMembers([member(1)]), withMembers([member(1, change)]));
    assert.deepEqual(changes, [
      { kind: 'remove', poolId: ids.pool(1), memberId: ids.member(1) },
      { kind: 'add', poolId: ids.pool(1), member: member(1, change) },
    ], JSON.stringify(change));
  }
});

test('a new version with the same members is an empty runtime change', () => {
  assert.deepEqual(memberChanges(withMembers([member(1)]), { ...withMembers([member(1)]), version: 7 }), []);
});

test('anything but members needs a reload', () => {
  const base = withMembers([member(1)]);
  assert.equal(memberChanges(base, withMembers([member(1)], { listeners: [listener(1, { port: 81, defaultPoolId: ids.pool(1) })] })), null);
  assert.equal(memberChanges(base, withMembers([member(1)], { pools: [pool(1, { monitor: monitor(1, { delay: 9 }), members: [member(1)] })] })), null);
  assert.equal(memberChanges(base, withMembers([member(1)], { vip: { address: '203.0.113.11', additional: [] } })), null);
  assert.equal(memberChanges(base, withMembers([member(1)], { pools: [pool(1, { monitor: monitor(1), members: [member(1)] }), pool(2)] })), null);
});

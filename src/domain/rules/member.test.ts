import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isApiError } from '../errors.js';
import { memberSettingsForCreate, memberSettingsForUpdate, planMemberBatch } from './member.js';

test('member defaults and the admin_state_up null quirk', () => {
  assert.deepEqual(memberSettingsForCreate({}), { name: '', admin_state_up: true, weight: 1, backup: false, monitor_address: null, monitor_port: null });
  assert.equal(memberSettingsForCreate({ admin_state_up: null }).admin_state_up, false);
  const stored = memberSettingsForCreate({ name: 'a', weight: 7, backup: true });
  assert.deepEqual(memberSettingsForUpdate(stored, { weight: null, backup: null }), { ...stored, weight: 1, backup: false });
  assert.deepEqual(memberSettingsForUpdate(stored, {}), stored);
});

test('batch plan matches on (address, protocol_port)', () => {
  const existing = [
    { id: 'a', address: '10.0.0.1', protocol_port: 80 },
    { id: 'b', address: '10.0.0.2', protocol_port: 80 },
  ];
  const wanted = [
    { address: '10.0.0.1', protocol_port: 80, weight: 5 },
    { address: '10.0.0.1', protocol_port: 81 },
  ];
  const plan = planMemberBatch(existing, wanted, false);
  assert.deepEqual(plan.update, [{ existing: existing[0], wanted: wanted[0] }]);
  assert.deepEqual(plan.create, [wanted[1]]);
  assert.deepEqual(plan.remove, [existing[1]]);
  assert.deepEqual(planMemberBatch(existing, wanted, true).remove, []);
  assert.deepEqual(planMemberBatch(existing, [], false).remove, existing);
  assert.throws(() => planMemberBatch(existing, [wanted[0]!, wanted[0]!], false), (e: unknown) => {
    assert.ok(isApiError(e));
    assert.equal(e.message, 'Validation failure: Member must be updated only once in the same request.');
    return true;
  });
});

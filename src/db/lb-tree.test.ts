import { test } from 'node:test';
import assert from 'node:assert/strict';
import { changedObjects, type PendingObject } from './lb-tree.js';

const o = (table: PendingObject['table'], id: string, provisioning_status: string): PendingObject => ({ table, id, provisioning_status });

test('the objects a job changed are the deepest updated ones, and every created or deleted one', () => {
  const memberUpdate = [o('listener', 'l', 'PENDING_UPDATE'), o('pool', 'p', 'PENDING_UPDATE'), o('member', 'm', 'PENDING_UPDATE')];
  assert.deepEqual(changedObjects(memberUpdate).map((x) => x.id), ['m']);
  const poolUpdate = [o('listener', 'l1', 'PENDING_UPDATE'), o('listener', 'l2', 'PENDING_UPDATE'), o('pool', 'p', 'PENDING_UPDATE')];
  assert.deepEqual(changedObjects(poolUpdate).map((x) => x.id), ['p']);
  const monitorDelete = [o('listener', 'l', 'PENDING_UPDATE'), o('pool', 'p', 'PENDING_UPDATE'), o('health_monitor', 'h', 'PENDING_DELETE')];
  assert.deepEqual(changedObjects(monitorDelete).map((x) => x.id), ['h']);
  const poolDelete = [o('listener', 'l', 'PENDING_UPDATE'), o('pool', 'p', 'PENDING_DELETE'), o('member', 'm', 'PENDING_DELETE')];
  assert.deepEqual(changedObjects(poolDelete).map((x) => x.id), ['p', 'm']);
  const batch = [o('pool', 'p', 'PENDING_UPDATE'), o('member', 'a', 'PENDING_CREATE'), o('member', 'b', 'PENDING_UPDATE'), o('member', 'c', 'PENDING_DELETE')];
  assert.deepEqual(changedObjects(batch).map((x) => x.id), ['a', 'b', 'c']);
  assert.deepEqual(changedObjects([o('listener', 'l', 'PENDING_UPDATE')]).map((x) => x.id), ['l']);
  assert.deepEqual(changedObjects([]), []);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { VIP_SUBNET_ID } from '../config.js';
import { startHarness } from '../../test/support/harness.js';
import { changedObjects, servedTree, servedTrees, type PendingObject } from './lb-tree.js';

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

test('the served trees of several load balancers, read together, are each one read on its own', async (t) => {
  const h = await startHarness();
  t.after(() => h.close());
  const graph = (name: string, members: number, monitor: boolean) => ({
    loadbalancer: {
      name,
      vip_subnet_id: VIP_SUBNET_ID,
      listeners: [80, 81].map((port) => ({
        protocol: 'TCP',
        protocol_port: port,
        default_pool: {
          name: `${name}-${port}`,
          protocol: 'TCP',
          lb_algorithm: 'ROUND_ROBIN',
          ...(monitor && { healthmonitor: { type: 'TCP', delay: 5, timeout: 2, max_retries: 2 } }),
          members: Array.from({ length: members }, (_, i) => ({ address: `10.9.${port}.${i + 1}`, protocol_port: 8080 })),
        },
      })),
    },
  });
  const ids: string[] = [];
  for (const [i, [members, monitor]] of ([[2, true], [0, false], [3, false]] as const).entries()) {
    const res = await h.request('POST', '/v2/lbaas/loadbalancers', { body: graph(`lb${i}`, members, monitor) });
    assert.equal(res.statusCode, 201, res.body);
    ids.push(res.json().loadbalancer.id);
    assert.equal(await h.settled(ids[i]!), 'ACTIVE');
  }
  const db = h.runtime.db.kysely;
  const together = await servedTrees(db, [...ids, randomUUID()]);
  assert.deepEqual([...together.keys()].sort(), [...ids].sort());
  for (const id of ids) assert.deepEqual(together.get(id), await servedTree(db, id));
  assert.deepEqual(ids.map((id) => [together.get(id)!.members.length, together.get(id)!.monitors.length]), [[4, 2], [0, 0], [6, 0]]);
  const missing = randomUUID();
  await assert.rejects(servedTree(db, missing), { message: `load balancer ${missing} does not exist` });
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, memberA, PROJECT_A } from '../../test/support/harness.js';
import { VIP_SUBNET_ID, MEMBER_SUBNET_ID } from '../config.js';
import type { ProvisioningStatus } from '../domain/enums.js';
import { loadBalancerIdOf } from './status-triggers.js';

const TABLES = ['load_balancer', 'listener', 'pool', 'member', 'health_monitor', 'l7policy', 'l7rule'] as const;

test('a status written to any object of a tree is announced with its load balancer and project, once committed', { timeout: 60_000 }, async (t) => {
  const h = await startHarness();
  t.after(() => h.close());
  const res = await h.request('POST', '/v2/lbaas/loadbalancers', {
    as: memberA,
    body: {
      loadbalancer: {
        vip_subnet_id: VIP_SUBNET_ID,
        listeners: [{
          protocol: 'HTTP', protocol_port: 80,
          default_pool: { name: 'p', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members: [{ address: '10.0.0.5', protocol_port: 80, subnet_id: MEMBER_SUBNET_ID }], healthmonitor: { type: 'HTTP', delay: 5, timeout: 3, max_retries: 3 } },
          l7policies: [{ action: 'REJECT', rules: [{ type: 'PATH', compare_type: 'STARTS_WITH', value: '/x' }] }],
        }],
      },
    },
  });
  assert.equal(res.statusCode, 201, res.body);
  const lbId = res.json().loadbalancer.id as string;
  await h.settled(lbId);
  const db = h.runtime.db;
  const heard: string[] = [];
  const stop = await db.status.watch({ changed: (lb, project) => heard.push(`${lb} ${project}`), resync: () => heard.push('resync') });
  t.after(stop);
  const until = async (n: number) => {
    const deadline = Date.now() + 20_000;
    while (heard.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  };
  for (const table of TABLES) {
    const row = await db.kysely.selectFrom(table).select('id').executeTakeFirstOrThrow();
    assert.equal(await loadBalancerIdOf(db.kysely, table, row.id), lbId, table);
    heard.length = 0;
    // A write that changes nothing is not announced; a rolled-back one neither; a committed one once per transaction.
    await db.kysely.updateTable(table).set({ operating_status: 'OFFLINE' }).where('id', '=', row.id).execute();
    await db.kysely.updateTable(table).set({ operating_status: 'ONLINE' }).where('id', '=', row.id).execute();
    await until(1);
    heard.length = 0;
    await db.kysely.updateTable(table).set({ provisioning_status: 'ACTIVE' as ProvisioningStatus }).where('id', '=', row.id).execute();
    await assert.rejects(
      db.kysely.transaction().execute(async (trx) => {
        await trx.updateTable(table).set({ provisioning_status: 'ERROR' as ProvisioningStatus }).where('id', '=', row.id).execute();
        throw new Error('rolled back');
      }),
      /rolled back/,
    );
    await db.kysely.transaction().execute(async (trx) => {
      await trx.updateTable(table).set({ provisioning_status: 'PENDING_UPDATE' as ProvisioningStatus }).where('id', '=', row.id).execute();
      await trx.updateTable(table).set({ provisioning_status: 'ACTIVE' as ProvisioningStatus }).where('id', '=', row.id).execute();
    });
    await until(1);
    await new Promise((r) => setTimeout(r, 100));
    // SQLite may also hear the rolled-back write (its readers then find nothing changed): the same name.
    assert.deepEqual([...new Set(heard)], [`${lbId} ${PROJECT_A}`], table);
  }
  heard.length = 0;
  assert.equal((await h.request('DELETE', `/v2/lbaas/loadbalancers/${lbId}?cascade=true`, { as: memberA })).statusCode, 204);
  await h.settled(lbId);
  await until(1);
  assert.ok(heard.includes(`${lbId} ${PROJECT_A}`), 'the cascade delete is announced');
});

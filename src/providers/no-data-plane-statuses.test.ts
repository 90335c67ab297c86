/**
 * The noop provider settles a tree as Octavia's amphora provider with no-op drivers does
 * (octavia-baseline.md "What the no-op drivers produce"), and stamps `updated_at` on every
 * object the settle changes, as Octavia's SQLAlchemy `onupdate` does.
 */
import type { ProvisioningStatus } from '../domain/enums.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, memberA, type Harness } from '../../test/support/harness.js';
import { MEMBER_SUBNET_ID, VIP_SUBNET_ID } from '../config.js';
import type { Database } from '../db/schema.js';
import { settleFailure, treeIds } from '../db/lb-tree.js';

let h: Harness;
before(async () => {
  h = await startHarness();
});
after(() => h.close());

type Json = Record<string, any>;
const tables = ['load_balancer', 'listener', 'pool', 'member', 'health_monitor', 'l7policy', 'l7rule'] as const satisfies ReadonlyArray<keyof Database>;
const LONG_AGO = '2001-02-03T04:05:06';

/** Every row of load balancer `lbId`'s tree, the load balancer included. */
async function rows(lbId: string) {
  const db = h.runtime.db.kysely;
  const ids = await treeIds(db, lbId);
  const of: Record<(typeof tables)[number], string[]> = {
    load_balancer: [lbId], listener: ids.listeners, pool: ids.pools, member: ids.members, health_monitor: ids.healthMonitors, l7policy: ids.l7policies, l7rule: ids.l7rules,
  };
  const out: Array<{ table: string; id: string; provisioning_status: string; created_at: string; updated_at: string | null }> = [];
  for (const table of tables) {
    const found = await db.selectFrom(table).select(['id', 'provisioning_status', 'created_at', 'updated_at']).where('id', 'in', of[table]).execute();
    out.push(...found.map((r) => ({ table, ...r })));
  }
  return out;
}

/** Sets columns on every row of the tree. */
async function setAll(lbId: string, values: { created_at?: string; updated_at?: string; provisioning_status?: ProvisioningStatus }) {
  for (const r of await rows(lbId)) await h.runtime.db.kysely.updateTable(r.table as (typeof tables)[number]).set(values).where('id', '=', r.id).execute();
}

/** A tree with something of each kind, some of it disabled. */
async function createTree(): Promise<Json> {
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', {
    as: memberA,
    body: {
      loadbalancer: {
        vip_subnet_id: VIP_SUBNET_ID,
        listeners: [
          {
            protocol: 'HTTP',
            protocol_port: 80,
            default_pool: { name: 'plain' },
            l7policies: [
              { action: 'REJECT', rules: [{ type: 'PATH', compare_type: 'STARTS_WITH', value: '/a' }, { type: 'PATH', compare_type: 'EQUAL_TO', value: '/b', admin_state_up: false }] },
              { action: 'REJECT', admin_state_up: false },
            ],
          },
          { protocol: 'TCP', protocol_port: 81, admin_state_up: false },
        ],
        pools: [
          {
            name: 'plain',
            protocol: 'HTTP',
            lb_algorithm: 'ROUND_ROBIN',
            members: [{ address: '127.32.0.5', protocol_port: 80, subnet_id: MEMBER_SUBNET_ID }, { address: '127.32.0.6', protocol_port: 80, admin_state_up: false }],
          },
          {
            name: 'watched',
            protocol: 'HTTP',
            lb_algorithm: 'ROUND_ROBIN',
            healthmonitor: { type: 'HTTP', delay: 3, timeout: 1, max_retries: 2 },
            members: [{ address: '127.32.0.7', protocol_port: 80 }],
          },
          { name: 'off', protocol: 'TCP', lb_algorithm: 'ROUND_ROBIN', admin_state_up: false, healthmonitor: { type: 'TCP', delay: 3, timeout: 1, max_retries: 2, admin_state_up: false } },
        ],
      },
    },
  });
  assert.equal(r.statusCode, 201, r.body);
  const lb = r.json().loadbalancer;
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  return lb;
}

test('noop: LB, listeners and pools stay OFFLINE; members NO_MONITOR whatever their admin state; monitors and L7 objects ONLINE when enabled', async () => {
  const lb = await createTree();
  const status = async (path: string) => (await h.request('GET', `/v2/lbaas/${path}`, { as: memberA })).json();
  const tree = (await status(`loadbalancers/${lb.id}/status`)).statuses.loadbalancer;
  assert.equal(tree.operating_status, 'OFFLINE');
  assert.equal(tree.listeners.length, 2);
  for (const l of tree.listeners) {
    assert.equal(l.operating_status, 'OFFLINE');
    for (const p of l.pools) assert.equal(p.operating_status, 'OFFLINE');
  }
  for (const p of (await status(`pools?loadbalancer_id=${lb.id}`)).pools) assert.equal(p.operating_status, 'OFFLINE', p.name);
  const pools = Object.fromEntries((await status(`pools?loadbalancer_id=${lb.id}`)).pools.map((p: Json) => [p.name, p]));
  const plain = (await status(`pools/${pools.plain.id}/members`)).members;
  assert.deepEqual(plain.map((m: Json) => [m.admin_state_up, m.operating_status]).sort(), [[false, 'NO_MONITOR'], [true, 'NO_MONITOR']]);
  // Octavia creates a monitored pool's members OFFLINE, and nothing changes that without a health manager.
  assert.deepEqual((await status(`pools/${pools.watched.id}/members`)).members.map((m: Json) => m.operating_status), ['OFFLINE']);
  const monitors = (await status('healthmonitors')).healthmonitors.filter((m: Json) => [pools.watched.id, pools.off.id].includes(m.pools[0].id));
  assert.deepEqual(monitors.map((m: Json) => [m.admin_state_up, m.operating_status]).sort(), [[false, 'OFFLINE'], [true, 'ONLINE']]);
  const listenerId = lb.listeners.find((l: Json) => l.protocol_port === 80)?.id ?? (await status(`listeners?loadbalancer_id=${lb.id}&protocol_port=80`)).listeners[0].id;
  const policies = (await status(`l7policies?listener_id=${listenerId}`)).l7policies;
  assert.deepEqual(policies.map((p: Json) => [p.admin_state_up, p.operating_status]).sort(), [[false, 'OFFLINE'], [true, 'ONLINE']]);
  const withRules = policies.find((p: Json) => p.rules.length);
  const rules = (await status(`l7policies/${withRules.id}/rules`)).rules;
  assert.deepEqual(rules.map((r: Json) => [r.admin_state_up, r.operating_status]).sort(), [[false, 'OFFLINE'], [true, 'ONLINE']]);

  // A member changed to disabled and back stays NO_MONITOR; deleting the monitor makes its pool's members NO_MONITOR.
  const member = plain.find((m: Json) => m.admin_state_up);
  assert.equal((await h.request('PUT', `/v2/lbaas/pools/${pools.plain.id}/members/${member.id}`, { as: memberA, body: { member: { admin_state_up: false } } })).statusCode, 200);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  assert.equal((await status(`pools/${pools.plain.id}/members/${member.id}`)).member.operating_status, 'NO_MONITOR');
  const watchedMonitor = monitors.find((m: Json) => m.admin_state_up);
  assert.equal((await h.request('DELETE', `/v2/lbaas/healthmonitors/${watchedMonitor.id}`, { as: memberA })).statusCode, 204);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  assert.deepEqual((await status(`pools/${pools.watched.id}/members`)).members.map((m: Json) => m.operating_status), ['NO_MONITOR']);
});

test('every object a settle changes gets updated_at; created_at never changes', async () => {
  const lb = await createTree();
  const db = h.runtime.db.kysely;
  const created = await rows(lb.id);
  assert.equal(created.length, 15);
  for (const r of created) {
    assert.equal(r.provisioning_status, 'ACTIVE', `${r.table} ${r.id}`);
    // Octavia's onupdate stamps the row the create's ACTIVE settle updates.
    assert.ok(r.updated_at && r.updated_at >= r.created_at, `${r.table} ${r.id}: ${r.updated_at}`);
  }

  // Age every row, then change the whole tree through an update of the load balancer and one of a member.
  await setAll(lb.id, { created_at: LONG_AGO, updated_at: LONG_AGO });
  const member = created.find((r) => r.table === 'member')!;
  const pool = await db.selectFrom('member').select('pool_id').where('id', '=', member.id).executeTakeFirstOrThrow();
  assert.equal((await h.request('PUT', `/v2/lbaas/pools/${pool.pool_id}/members/${member.id}`, { as: memberA, body: { member: { weight: 7 } } })).statusCode, 200);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  const after = new Map((await rows(lb.id)).map((r) => [r.id, r]));
  for (const r of after.values()) assert.equal(r.created_at, LONG_AGO, `${r.table} ${r.id}`);
  for (const id of [lb.id, member.id, pool.pool_id]) assert.ok(after.get(id)!.updated_at! > LONG_AGO, `${after.get(id)!.table} was settled`);

  // A failure stamps every pending object it puts in ERROR.
  await setAll(lb.id, { provisioning_status: 'PENDING_UPDATE', updated_at: LONG_AGO });
  await settleFailure(db, lb.id, 'test: made to fail');
  for (const r of await rows(lb.id)) {
    assert.equal(r.provisioning_status, 'ERROR', `${r.table} ${r.id}`);
    assert.ok(r.updated_at! > LONG_AGO, `${r.table} ${r.id}`);
    assert.equal(r.created_at, LONG_AGO);
  }
});

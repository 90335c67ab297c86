import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, admin, memberA, memberB, readerA, PROJECT_A, type Harness } from '../../../test/support/harness.js';
import { MEMBER_SUBNET_ID, VIP_SUBNET_ID } from '../../config.js';
import { settleSuccess } from '../../db/lb-tree.js';

/** No worker: pending states stay visible until a test settles the tree as a finished job would. */
let h: Harness;
before(async () => {
  h = await startHarness();
  await h.runtime.worker?.close();
});
after(() => h.close());

const settle = (lbId: string) => settleSuccess(h.runtime.db.kysely, lbId);

async function create(lbId: string | null, path: string, body: Record<string, unknown>) {
  const r = await h.request('POST', `/v2/lbaas/${path}`, { body, as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  const obj = Object.values(r.json())[0] as Record<string, any>;
  await settle(lbId ?? obj.id);
  return obj;
}

/** An ACTIVE load balancer with an HTTP listener whose default pool is returned. */
async function poolTree(withMonitor = false) {
  const lb = await create(null, 'loadbalancers', { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } });
  const listener = await create(lb.id, 'listeners', { listener: { loadbalancer_id: lb.id, protocol: 'HTTP', protocol_port: 80 } });
  const pool = await create(lb.id, 'pools', {
    pool: { listener_id: listener.id, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', ...(withMonitor ? { healthmonitor: { type: 'HTTP', delay: 5, timeout: 2, max_retries: 3 } } : {}) },
  });
  return { lbId: lb.id as string, listenerId: listener.id as string, poolId: pool.id as string };
}

const status = async (table: 'load_balancer' | 'listener' | 'pool' | 'member', id: string) =>
  (await h.runtime.db.kysely.selectFrom(table).select('provisioning_status').where('id', '=', id).executeTakeFirstOrThrow()).provisioning_status;

const membersOf = async (poolId: string) =>
  (await h.request('GET', `/v2/lbaas/pools/${poolId}/members?sort=address`, { as: memberA })).json().members as Array<Record<string, any>>;

test('create: defaults, no pool_id, NO_MONITOR, and §5.2 side effects', async () => {
  const t = await poolTree();
  const r = await h.request('POST', `/v2/lbaas/pools/${t.poolId}/members`, { body: { member: { address: '127.32.0.10', protocol_port: 8080, subnet_id: MEMBER_SUBNET_ID } }, as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  const m = r.json().member;
  assert.equal(m.provisioning_status, 'PENDING_CREATE');
  assert.equal(m.operating_status, 'NO_MONITOR');
  assert.equal(m.name, '');
  assert.equal(m.weight, 1);
  assert.equal(m.backup, false);
  assert.equal(m.admin_state_up, true);
  assert.equal(m.monitor_address, null);
  assert.equal(m.monitor_port, null);
  assert.equal(m.subnet_id, MEMBER_SUBNET_ID);
  assert.equal(m.vnic_type, 'normal');
  assert.equal(m.tenant_id, m.project_id);
  assert.deepEqual(m.tags, []);
  assert.ok(!('pool_id' in m));
  assert.ok(!('description' in m));
  assert.equal(await status('pool', t.poolId), 'PENDING_UPDATE');
  assert.equal(await status('listener', t.listenerId), 'PENDING_UPDATE');
  assert.equal(await status('load_balancer', t.lbId), 'PENDING_UPDATE');
  await settle(t.lbId);
  assert.equal(await status('member', m.id), 'ACTIVE');
  const monitored = await poolTree(true);
  const o = await create(monitored.lbId, `pools/${monitored.poolId}/members`, { member: { address: '127.32.0.11', protocol_port: 80 } });
  assert.equal(o.operating_status, 'OFFLINE');
});

test('the pool must be ACTIVE; paths under an unknown or another pool are 404s', async () => {
  const t = await poolTree();
  const m = await create(t.lbId, `pools/${t.poolId}/members`, { member: { address: '127.32.0.20', protocol_port: 80 } });
  await h.runtime.db.kysely.updateTable('pool').set({ provisioning_status: 'ERROR' }).where('id', '=', t.poolId).execute();
  const locked = await h.request('POST', `/v2/lbaas/pools/${t.poolId}/members`, { body: { member: { address: '127.32.0.21', protocol_port: 80 } }, as: memberA });
  assert.equal(locked.statusCode, 409);
  assert.equal(locked.json().faultstring, `Pool ${t.poolId} is immutable and cannot be updated.`);
  assert.equal(await status('load_balancer', t.lbId), 'ACTIVE');
  await h.runtime.db.kysely.updateTable('pool').set({ provisioning_status: 'ACTIVE' }).where('id', '=', t.poolId).execute();

  const missing = '11111111-2222-3333-4444-555555555555';
  const noPool = await h.request('GET', `/v2/lbaas/pools/${missing}/members`, { as: memberA });
  assert.equal(noPool.statusCode, 404);
  assert.deepEqual(noPool.json(), { code: 404, title: 'Not Found', description: `Pool ${missing} not found.` });

  const other = await poolTree();
  for (const [method, body] of [['GET', undefined], ['PUT', { member: { weight: 2 } }], ['DELETE', undefined]] as const) {
    const r = await h.request(method, `/v2/lbaas/pools/${other.poolId}/members/${m.id}`, { body, as: memberA });
    assert.equal(r.statusCode, 404, method);
    assert.equal(r.json().faultstring, `Member ${m.id} not found.`);
  }
});

test('invalid members are refused and write nothing', async () => {
  const t = await poolTree();
  await create(t.lbId, `pools/${t.poolId}/members`, { member: { address: '127.32.0.30', protocol_port: 80 } });
  const missing = '11111111-2222-3333-4444-555555555555';
  const cases: Array<[Record<string, unknown>, number, string]> = [
    [{ address: '127.32.0.30', protocol_port: 80 }, 409, 'Another member on this pool is already using ip 127.32.0.30 on protocol_port 80'],
    [{ address: '169.254.169.254', protocol_port: 80 }, 400, '169.254.169.254 is not a valid option for member address'],
    [{ address: '127.32.0.31', protocol_port: 80, subnet_id: missing }, 400, `Subnet ${missing} not found.`],
    [{ address: '127.32.0.31', protocol_port: 80, request_sriov: true }, 400, 'The load balancer flavor does not allow SR-IOV member ports.'],
    [{ address: '127.32.0.31', protocol_port: 80, weight: 257 }, 400, "Invalid input for field/attribute weight. Value: '257'. Value should be lower or equal to 256"],
    [{ address: 'nope', protocol_port: 80 }, 400, "Invalid input for field/attribute address. Value: 'nope'. Value should be IPv4 or IPv6 format"],
    [{ address: '127.32.0.31' }, 400, "Invalid input for field/attribute protocol_port. Value: 'None'. Mandatory field missing."],
    [{ address: '127.32.0.31', protocol_port: 80, description: 'x' }, 400, 'Unknown attribute for argument member_.member: description'],
  ];
  for (const [member, code, message] of cases) {
    const r = await h.request('POST', `/v2/lbaas/pools/${t.poolId}/members`, { body: { member }, as: memberA });
    assert.equal(r.statusCode, code, JSON.stringify(member));
    assert.deepEqual(r.json(), { faultcode: 'Client', faultstring: message, debuginfo: null });
  }
  assert.equal((await membersOf(t.poolId)).length, 1);
  assert.equal(await status('load_balancer', t.lbId), 'ACTIVE');
  assert.equal(await status('pool', t.poolId), 'ACTIVE');
});

test('members cannot target the control plane: create, update, batch and pool create refuse address and monitor_address, and write nothing', async () => {
  const t = await poolTree();
  const m = await create(t.lbId, `pools/${t.poolId}/members`, { member: { address: '127.32.0.50', protocol_port: 80, monitor_address: '127.32.0.51', monitor_port: 81 } });
  const refused = (field: string, ip: string, why: RegExp) => (r: { statusCode: number; json(): any }) => {
    assert.equal(r.statusCode, 400, `${field} ${ip}`);
    const body = r.json();
    assert.equal(body.faultcode, 'Client');
    assert.equal(body.debuginfo, null);
    assert.match(body.faultstring, new RegExp(`^Member ${field} ${ip.replace(/\./g, '\\.')} is not allowed: `));
    assert.match(body.faultstring, why);
  };
  const cases: Array<[string, RegExp]> = [
    ['127.80.0.10', /management network/],
    ['127.0.0.1', /listens on it/],
    ['127.0.0.53', /loopback address/],
    ['::1', /loopback address/],
    ['0.0.0.0', /unspecified address/],
  ];
  for (const [ip, why] of cases) {
    refused('address', ip, why)(await h.request('POST', `/v2/lbaas/pools/${t.poolId}/members`, { body: { member: { address: ip, protocol_port: 80 } }, as: memberA }));
    refused('monitor_address', ip, why)(await h.request('POST', `/v2/lbaas/pools/${t.poolId}/members`, { body: { member: { address: '127.32.0.52', protocol_port: 80, monitor_address: ip } }, as: memberA }));
    refused('monitor_address', ip, why)(await h.request('PUT', `/v2/lbaas/pools/${t.poolId}/members/${m.id}`, { body: { member: { monitor_address: ip } }, as: memberA }));
    const keep = { address: '127.32.0.50', protocol_port: 80, monitor_address: '127.32.0.51', monitor_port: 81 };
    refused('address', ip, why)(await h.request('PUT', `/v2/lbaas/pools/${t.poolId}/members`, { body: { members: [keep, { address: ip, protocol_port: 80 }] }, as: memberA }));
    refused('monitor_address', ip, why)(await h.request('PUT', `/v2/lbaas/pools/${t.poolId}/members`, { body: { members: [{ ...keep, monitor_address: ip }] }, as: memberA }));
  }
  refused('address', '127.80.0.10', /management network/)(
    await h.request('POST', '/v2/lbaas/pools', { body: { pool: { loadbalancer_id: t.lbId, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members: [{ address: '127.80.0.10', protocol_port: 80 }] } }, as: memberA }),
  );
  assert.deepEqual((await membersOf(t.poolId)).map((x) => [x.address, x.monitor_address]), [['127.32.0.50', '127.32.0.51']]);
  assert.equal(await status('member', m.id), 'ACTIVE');
  assert.equal(await status('load_balancer', t.lbId), 'ACTIVE');
  assert.equal((await h.request('GET', `/v2/lbaas/pools?loadbalancer_id=${t.lbId}`, { as: memberA })).json().pools.length, 1, 'the refused pool create wrote no pool');
  // An unchanged monitor_address is not judged again, and a member subnet address stays usable.
  const ok = await h.request('PUT', `/v2/lbaas/pools/${t.poolId}/members/${m.id}`, { body: { member: { weight: 4, monitor_address: '127.32.0.52' } }, as: memberA });
  assert.equal(ok.statusCode, 200, ok.body);
  await settle(t.lbId);
});

test('network.allowControlPlaneMembers lets a lab use control-plane addresses as members; reserved ones stay refused', async () => {
  const lab = await startHarness({ network: { allowControlPlaneMembers: true } });
  try {
    await lab.runtime.worker?.close();
    const post = async (path: string, body: unknown) => {
      const r = await lab.request('POST', `/v2/lbaas/${path}`, { body, as: memberA });
      assert.equal(r.statusCode, 201, r.body);
      const obj = Object.values(r.json())[0] as Record<string, any>;
      return obj;
    };
    const lb = await post('loadbalancers', { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } });
    await settleSuccess(lab.runtime.db.kysely, lb.id);
    const pool = await post('pools', { pool: { loadbalancer_id: lb.id, protocol: 'TCP', lb_algorithm: 'ROUND_ROBIN' } });
    await settleSuccess(lab.runtime.db.kysely, lb.id);
    const m = await post(`pools/${pool.id}/members`, { member: { address: '127.0.0.1', protocol_port: 80, monitor_address: '127.80.0.10' } });
    assert.equal(m.address, '127.0.0.1');
    await settleSuccess(lab.runtime.db.kysely, lb.id);
    const r = await lab.request('POST', `/v2/lbaas/pools/${pool.id}/members`, { body: { member: { address: '169.254.169.254', protocol_port: 80 } }, as: memberA });
    assert.equal(r.statusCode, 400);
    assert.equal(r.json().faultstring, '169.254.169.254 is not a valid option for member address');
  } finally {
    await lab.close();
  }
});

test('update resets nulls to defaults; delete goes PENDING_DELETE then away', async () => {
  const t = await poolTree();
  const m = await create(t.lbId, `pools/${t.poolId}/members`, { member: { address: '127.32.0.40', protocol_port: 80, weight: 9, backup: true, name: 'n' } });
  const r = await h.request('PUT', `/v2/lbaas/pools/${t.poolId}/members/${m.id}`, { body: { member: { weight: null, backup: null, monitor_port: 9000, tags: ['x'] } }, as: memberA });
  assert.equal(r.statusCode, 200, r.body);
  const u = r.json().member;
  assert.equal(u.weight, 1);
  assert.equal(u.backup, false);
  assert.equal(u.name, 'n');
  assert.equal(u.monitor_port, 9000);
  assert.deepEqual(u.tags, ['x']);
  assert.equal(u.provisioning_status, 'PENDING_UPDATE');
  assert.equal(await status('pool', t.poolId), 'PENDING_UPDATE');
  await settle(t.lbId);
  const bad = await h.request('PUT', `/v2/lbaas/pools/${t.poolId}/members/${m.id}`, { body: { member: { address: '127.32.0.41' } }, as: memberA });
  assert.equal(bad.statusCode, 400);
  assert.equal(bad.json().faultstring, 'Unknown attribute for argument member_.member: address');
  const d = await h.request('DELETE', `/v2/lbaas/pools/${t.poolId}/members/${m.id}`, { as: memberA });
  assert.equal(d.statusCode, 204);
  assert.equal(await status('member', m.id), 'PENDING_DELETE');
  await settle(t.lbId);
  assert.equal((await h.request('GET', `/v2/lbaas/pools/${t.poolId}/members/${m.id}`, { as: memberA })).statusCode, 404);
});

test('batch update: matched by (address, protocol_port), additive_only, duplicates, 202 empty', async () => {
  const t = await poolTree();
  const a = await create(t.lbId, `pools/${t.poolId}/members`, { member: { address: '127.32.0.1', protocol_port: 80, weight: 3, name: 'a' } });
  const b = await create(t.lbId, `pools/${t.poolId}/members`, { member: { address: '127.32.0.2', protocol_port: 80 } });
  const batch = (body: unknown, query = '') => h.request('PUT', `/v2/lbaas/pools/${t.poolId}/members${query}`, { body, as: memberA });

  const r = await batch({ members: [{ address: '127.32.0.1', protocol_port: 80, weight: 5 }, { address: '127.32.0.3', protocol_port: 80, name: 'c' }] });
  assert.equal(r.statusCode, 202);
  assert.equal(r.body, '');
  assert.equal(await status('member', a.id), 'PENDING_UPDATE');
  assert.equal(await status('member', b.id), 'PENDING_DELETE');
  assert.equal(await status('pool', t.poolId), 'PENDING_UPDATE');
  assert.equal(await status('load_balancer', t.lbId), 'PENDING_UPDATE');
  await settle(t.lbId);
  let members = await membersOf(t.poolId);
  assert.deepEqual(members.map((m) => [m.address, m.weight, m.name]), [['127.32.0.1', 5, ''], ['127.32.0.3', 1, 'c']]);
  assert.equal(members[0]!.id, a.id, 'an updated member keeps its id');

  assert.equal((await batch({ members: [{ address: '127.32.0.4', protocol_port: 80 }] }, '?additive_only=true')).statusCode, 202);
  await settle(t.lbId);
  assert.equal((await membersOf(t.poolId)).length, 3);

  const dup = await batch({ members: [{ address: '127.32.0.9', protocol_port: 80 }, { address: '127.32.0.9', protocol_port: 80 }] });
  assert.equal(dup.statusCode, 400);
  assert.equal(dup.json().faultstring, 'Validation failure: Member must be updated only once in the same request.');
  assert.equal(await status('load_balancer', t.lbId), 'ACTIVE');
  assert.equal((await batch({ members: [{ address: '169.254.169.254', protocol_port: 80 }] })).statusCode, 400);
  assert.equal((await membersOf(t.poolId)).length, 3, 'a refused batch changes nothing');

  assert.equal((await batch({ members: [] })).statusCode, 202);
  await settle(t.lbId);
  assert.deepEqual(await membersOf(t.poolId), []);
  assert.equal((await batch({ members: [] })).statusCode, 202, 'a no-op batch is still accepted');
  await settle(t.lbId);
});

test('batch quota counts the net increase', async () => {
  const t = await poolTree();
  await create(t.lbId, `pools/${t.poolId}/members`, { member: { address: '127.32.1.1', protocol_port: 80 } });
  const used = Number((await h.runtime.db.kysely.selectFrom('member').select((eb) => eb.fn.countAll().as('n')).where('project_id', '=', PROJECT_A).executeTakeFirstOrThrow()).n);
  assert.equal((await h.request('PUT', `/v2/lbaas/quotas/${PROJECT_A}`, { body: { quota: { member: used } }, as: admin })).statusCode, 202);
  try {
    const swap = await h.request('PUT', `/v2/lbaas/pools/${t.poolId}/members`, { body: { members: [{ address: '127.32.1.2', protocol_port: 80 }] }, as: memberA });
    assert.equal(swap.statusCode, 202, 'replacing one member by another adds nothing');
    await settle(t.lbId);
    const grow = await h.request('PUT', `/v2/lbaas/pools/${t.poolId}/members`, { body: { members: [{ address: '127.32.1.2', protocol_port: 80 }, { address: '127.32.1.3', protocol_port: 80 }] }, as: memberA });
    assert.equal(grow.statusCode, 403);
    assert.equal(grow.json().faultstring, 'Quota has been met for resources: Member');
    const single = await h.request('POST', `/v2/lbaas/pools/${t.poolId}/members`, { body: { member: { address: '127.32.1.4', protocol_port: 80 } }, as: memberA });
    assert.equal(single.statusCode, 403);
  } finally {
    await h.request('DELETE', `/v2/lbaas/quotas/${PROJECT_A}`, { as: admin });
  }
});

test('RBAC and listing', async () => {
  const t = await poolTree();
  const m = await create(t.lbId, `pools/${t.poolId}/members`, { member: { address: '127.32.2.1', protocol_port: 443, name: 'web', tags: ['blue'] } });
  await create(t.lbId, `pools/${t.poolId}/members`, { member: { address: '127.32.2.2', protocol_port: 443, backup: true } });
  assert.equal((await h.request('GET', `/v2/lbaas/pools/${t.poolId}/members`, { as: memberB })).statusCode, 403);
  assert.equal((await h.request('GET', `/v2/lbaas/pools/${t.poolId}/members/${m.id}`, { as: memberB })).statusCode, 403);
  assert.equal((await h.request('PUT', `/v2/lbaas/pools/${t.poolId}/members`, { body: { members: [] }, as: readerA })).statusCode, 403);
  const filtered = (await h.request('GET', `/v2/lbaas/pools/${t.poolId}/members?backup=false&tags=blue&fields=id&fields=address`, { as: readerA })).json();
  assert.deepEqual(filtered, { members: [{ id: m.id, address: '127.32.2.1' }], members_links: [] });
  const page = (await h.request('GET', `/v2.0/pools/${t.poolId}/members?limit=1`, { as: readerA })).json();
  assert.equal(page.members.length, 1);
  assert.equal(page.members_links[0].rel, 'next');
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hostPort, nbLoadBalancerRows, type OvnLoadBalancer, type OvnMember, type OvnPool } from './nb-rows.js';

const LB = '6ea2c3a1-0000-4000-8000-000000000001';
const LISTENER = '11111111-0000-4000-8000-000000000001';
const POOL = '22222222-0000-4000-8000-000000000001';
const MEMBER = '33333333-0000-4000-8000-000000000001';
const SUBNET = '44444444-0000-4000-8000-000000000001';
const PORT = '55555555-0000-4000-8000-000000000001';

const member = (id: string, address: string, overrides: Partial<OvnMember> = {}): OvnMember => ({ id, address, port: 63015, subnetId: SUBNET, enabled: true, ...overrides });
const pool = (overrides: Partial<OvnPool> = {}): OvnPool => ({ id: POOL, protocol: 'TCP', algorithm: 'SOURCE_IP_PORT', enabled: true, affinityTimeout: null, healthMonitorId: null, members: [member(MEMBER, '10.10.10.10')], ...overrides });
const lb = (overrides: Partial<OvnLoadBalancer> = {}): OvnLoadBalancer => ({
  id: LB,
  enabled: true,
  vip: '172.24.4.9',
  vipPortId: PORT,
  additionalVips: [],
  listeners: [{ id: LISTENER, protocol: 'TCP', port: 64015, enabled: true, defaultPoolId: POOL }],
  pools: [pool()],
  memberStatus: {},
  ...overrides,
});

test('the upstream example: load balancer → listener → pool → member', () => {
  assert.deepEqual(nbLoadBalancerRows(lb()), [
    {
      name: LB,
      protocol: 'tcp',
      vips: { '172.24.4.9:64015': '10.10.10.10:63015' },
      selectionFields: ['ip_dst', 'ip_src', 'tp_dst', 'tp_src'],
      options: {},
      externalIds: {
        'neutron:vip': '172.24.4.9',
        'neutron:vip_port_id': PORT,
        enabled: 'True',
        [`listener_${LISTENER}`]: `64015:pool_${POOL}`,
        [`pool_${POOL}`]: `member_${MEMBER}_10.10.10.10:63015_${SUBNET}`,
      },
    },
  ]);
});

test('a load balancer with nothing under it is one row without protocol, with the create-time selection fields', () => {
  const [row, ...rest] = nbLoadBalancerRows(lb({ listeners: [], pools: [] }));
  assert.deepEqual(rest, []);
  assert.deepEqual([row!.protocol, row!.vips, row!.selectionFields], [null, {}, ['ip_src', 'ip_dst', 'tp_src', 'tp_dst']]);
});

test('one row per protocol, each with its own listeners and pools; SOURCE_IP selection and affinity', () => {
  const udpPool = pool({ id: `${POOL.slice(0, -1)}2`, protocol: 'UDP', algorithm: 'SOURCE_IP', affinityTimeout: 360, members: [member(`${MEMBER.slice(0, -1)}2`, '10.10.10.11', { port: 53 })] });
  const rows = nbLoadBalancerRows(lb({ listeners: [...lb().listeners, { id: `${LISTENER.slice(0, -1)}2`, protocol: 'UDP', port: 53, enabled: true, defaultPoolId: udpPool.id }], pools: [pool(), udpPool] }));
  assert.deepEqual(rows.map((r) => [r.name, r.protocol, r.vips, r.selectionFields, r.options]), [
    [LB, 'tcp', { '172.24.4.9:64015': '10.10.10.10:63015' }, ['ip_dst', 'ip_src', 'tp_dst', 'tp_src'], {}],
    [LB, 'udp', { '172.24.4.9:53': '10.10.10.11:53' }, ['ip_src', 'ip_dst'], { affinity_timeout: '360' }],
  ]);
  assert.ok(!(`pool_${udpPool.id}` in rows[0]!.externalIds));
  assert.ok(`pool_${udpPool.id}` in rows[1]!.externalIds);
});

test('admin state at every level: a disabled load balancer has no vips; a disabled listener, pool or member leaves them, keys marked :D', () => {
  assert.deepEqual(nbLoadBalancerRows(lb({ enabled: false }))[0]!.vips, {});
  assert.equal(nbLoadBalancerRows(lb({ enabled: false }))[0]!.externalIds.enabled, 'False');
  const offListener = nbLoadBalancerRows(lb({ listeners: [{ ...lb().listeners[0]!, enabled: false }] }))[0]!;
  assert.deepEqual(offListener.vips, {});
  assert.equal(offListener.externalIds[`listener_${LISTENER}:D`], `64015:pool_${POOL}`);
  const offPool = nbLoadBalancerRows(lb({ pools: [pool({ enabled: false })] }))[0]!;
  assert.deepEqual(offPool.vips, {});
  assert.ok(`pool_${POOL}:D` in offPool.externalIds);
  const twoMembers = [member(MEMBER, '10.10.10.10'), member(`${MEMBER.slice(0, -1)}2`, '10.10.10.12', { enabled: false })];
  assert.deepEqual(nbLoadBalancerRows(lb({ pools: [pool({ members: twoMembers })] }))[0]!.vips, { '172.24.4.9:64015': '10.10.10.10:63015' });
});

test('IPv6 in brackets; additional VIPs each get the members of their family; statuses and monitors recorded', () => {
  assert.equal(hostPort('fd00::100', 80), '[fd00::100]:80');
  const v6 = member(`${MEMBER.slice(0, -1)}6`, 'fd00::11', { port: 8080 });
  const rows = nbLoadBalancerRows(
    lb({
      additionalVips: [{ address: 'fd00::100', portId: `${PORT.slice(0, -1)}6` }],
      pools: [pool({ members: [member(MEMBER, '10.10.10.10'), v6], healthMonitorId: 'hm-1' })],
      memberStatus: { [MEMBER]: 'ONLINE', [v6.id]: 'ERROR', unrelated: 'OFFLINE' },
    }),
  );
  assert.deepEqual(rows[0]!.vips, { '172.24.4.9:64015': '10.10.10.10:63015', '[fd00::100]:64015': '[fd00::11]:8080' });
  assert.equal(rows[0]!.externalIds['neutron:additional_vips'], 'fd00::100');
  assert.deepEqual(JSON.parse(rows[0]!.externalIds['neutron:member_status']!), { [MEMBER]: 'ONLINE', [v6.id]: 'ERROR' });
  assert.equal(rows[0]!.externalIds['octavia:healthmonitors'], '["hm-1"]');
});

test('a listener without a default pool is recorded with an empty pool part; protocols OVN lacks are refused', () => {
  const row = nbLoadBalancerRows(lb({ listeners: [{ ...lb().listeners[0]!, defaultPoolId: null }], pools: [] }))[0]!;
  assert.equal(row.externalIds[`listener_${LISTENER}`], '64015:');
  assert.deepEqual(row.vips, {});
  assert.throws(() => nbLoadBalancerRows(lb({ pools: [pool({ protocol: 'HTTP' })] })), /OVN load balancers have no HTTP protocol/);
  assert.throws(() => nbLoadBalancerRows(lb({ pools: [pool({ algorithm: 'ROUND_ROBIN' })] })), /cannot balance with ROUND_ROBIN/);
});

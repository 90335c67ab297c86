import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ObservedTree } from '../../operating-status/derivation.js';
import { L1, L2, LB, M1, M2, M3, M4, member, observedTree, P1, P2, row, sorted } from '../../../test/support/observed-tree.js';
import { healthFacts, ovnMemberStatuses, ovnStatusChanges, probedByOvn, type OvnHealthFacts, type ProbedMember, type ServiceMonitorStatus } from './statuses.js';

/** P1 is probed (M1, M2, and M4 disabled); P2 has no monitor OVN runs (M3). */
const tree = (patch: Partial<ObservedTree> = {}) =>
  observedTree({ members: [member(M1, P1), member(M2, P1), member(M3, P2, 'NO_MONITOR'), member(M4, P1, 'OFFLINE', { admin_state_up: false })], ...patch });

const facts = (monitors: Record<string, ServiceMonitorStatus> = {}, extra: Partial<OvnHealthFacts> = {}): OvnHealthFacts => ({
  monitoredPools: new Set([P1]),
  serviceMonitors: new Map(Object.entries(monitors)),
  ...extra,
});


test('every probed member online: a healthy tree stays as it is', () => {
  assert.deepEqual(ovnStatusChanges(tree(), facts({ [M1]: 'online', [M2]: 'online' })), []);
});

test('one member offline: it is ERROR, its pool and the load balancer DEGRADED, the listeners still ONLINE', () => {
  assert.deepEqual(sorted(ovnStatusChanges(tree(), facts({ [M1]: 'offline', [M2]: 'online' }))), sorted([
    { table: 'member', id: M1, operating_status: 'ERROR' },
    { table: 'pool', id: P1, operating_status: 'DEGRADED' },
    { table: 'load_balancer', id: LB, operating_status: 'DEGRADED' },
  ]));
});

test('every enabled member offline (or error): the pool and the load balancer are ERROR; a disabled member is OFFLINE', () => {
  const t = tree({ members: [member(M1, P1), member(M2, P1), member(M3, P2, 'NO_MONITOR'), member(M4, P1, 'ONLINE', { admin_state_up: false })] });
  assert.deepEqual(sorted(ovnStatusChanges(t, facts({ [M1]: 'offline', [M2]: 'error', [M4]: 'online' }))), sorted([
    { table: 'member', id: M1, operating_status: 'ERROR' },
    { table: 'member', id: M2, operating_status: 'ERROR' },
    { table: 'member', id: M4, operating_status: 'OFFLINE' },
    { table: 'pool', id: P1, operating_status: 'ERROR' },
    { table: 'load_balancer', id: LB, operating_status: 'ERROR' },
  ]));
});

test('back online: ONLINE everywhere', () => {
  const t = tree({
    lb: { ...row(LB, 'ERROR'), config_version: 3 },
    pools: [row(P1, 'ERROR'), row(P2)],
    members: [member(M1, P1, 'ERROR'), member(M2, P1, 'ERROR'), member(M3, P2, 'NO_MONITOR')],
  });
  assert.deepEqual(sorted(ovnStatusChanges(t, facts({ [M1]: 'online', [M2]: 'online' }))), sorted([
    { table: 'member', id: M1, operating_status: 'ONLINE' },
    { table: 'member', id: M2, operating_status: 'ONLINE' },
    { table: 'pool', id: P1, operating_status: 'ONLINE' },
    { table: 'load_balancer', id: LB, operating_status: 'ONLINE' },
  ]));
});

test('no verdict yet (empty status, or no row): an ERROR member stays ERROR, any other becomes ONLINE', () => {
  const t = tree({ members: [member(M1, P1, 'ERROR'), member(M2, P1, 'NO_MONITOR'), member(M3, P2, 'NO_MONITOR')], pools: [row(P1, 'DEGRADED'), row(P2)] });
  const unknown: Array<Record<string, ServiceMonitorStatus>> = [{ [M1]: '', [M2]: '' }, {}];
  for (const monitors of unknown) {
    assert.deepEqual(sorted(ovnStatusChanges(t, facts(monitors))), sorted([
      { table: 'member', id: M2, operating_status: 'ONLINE' },
      { table: 'load_balancer', id: LB, operating_status: 'DEGRADED' },
    ]), JSON.stringify(monitors));
  }
  assert.deepEqual(sorted(ovnStatusChanges(t, { monitoredPools: new Set([P1]) })).map((c) => c.id), [LB, M2]);
});

test('members of a pool OVN does not probe are NO_MONITOR whatever a Service_Monitor says', () => {
  const t = tree({ members: [member(M1, P1), member(M2, P1), member(M3, P2, 'ONLINE')] });
  assert.deepEqual(ovnStatusChanges(t, facts({ [M1]: 'online', [M2]: 'online', [M3]: 'offline' })), [{ table: 'member', id: M3, operating_status: 'NO_MONITOR' }]);
});

test('a probed member with no logical switch port is ERROR, even beside an online row', () => {
  assert.deepEqual(sorted(ovnStatusChanges(tree(), facts({ [M1]: 'online', [M2]: 'online' }, { unreachable: new Set([M2]) }))), sorted([
    { table: 'member', id: M2, operating_status: 'ERROR' },
    { table: 'pool', id: P1, operating_status: 'DEGRADED' },
    { table: 'load_balancer', id: LB, operating_status: 'DEGRADED' },
  ]));
});

test('OVN serves every enabled listener; disabled objects and a disabled load balancer are OFFLINE', () => {
  const t = tree({ listeners: [row(L1, 'ERROR'), row(L2, 'ONLINE', { admin_state_up: false })], pools: [row(P1), row(P2, 'ONLINE', { admin_state_up: false })] });
  assert.deepEqual(sorted(ovnStatusChanges(t, facts({ [M1]: 'online', [M2]: 'online' }))), sorted([
    { table: 'listener', id: L1, operating_status: 'ONLINE' },
    { table: 'listener', id: L2, operating_status: 'OFFLINE' },
    { table: 'pool', id: P2, operating_status: 'OFFLINE' },
  ]));
  const disabled = tree({ lb: { ...row(LB, 'ONLINE', { admin_state_up: false }), config_version: 3 } });
  assert.deepEqual(ovnStatusChanges(disabled, facts({ [M1]: 'online', [M2]: 'online' })), [{ table: 'load_balancer', id: LB, operating_status: 'OFFLINE' }]);
});

test('objects in PENDING_* keep their status, left to the operation in flight (their health still counts above them)', () => {
  const t = tree({ members: [member(M1, P1, 'ONLINE', { provisioning_status: 'PENDING_UPDATE' }), member(M2, P1), member(M3, P2, 'NO_MONITOR')] });
  assert.deepEqual(sorted(ovnStatusChanges(t, facts({ [M1]: 'offline', [M2]: 'online' }))), sorted([
    { table: 'pool', id: P1, operating_status: 'DEGRADED' },
    { table: 'load_balancer', id: LB, operating_status: 'DEGRADED' },
  ]));
  const pendingLb = tree({ lb: { ...row(LB, 'ONLINE', { provisioning_status: 'PENDING_UPDATE' }), config_version: 3 } });
  assert.deepEqual(sorted(ovnStatusChanges(pendingLb, facts({ [M1]: 'offline', [M2]: 'online' }))), sorted([
    { table: 'member', id: M1, operating_status: 'ERROR' },
    { table: 'pool', id: P1, operating_status: 'DEGRADED' },
  ]));
});

test('OVN probes TCP and UDP pools with an enabled TCP or UDP-CONNECT monitor, never SCTP pools', () => {
  const on = (type: string) => ({ type, admin_state_up: true });
  const cases: Array<[string, { type: string; admin_state_up: boolean } | undefined, boolean]> = [
    ['TCP', on('TCP'), true], ['UDP', on('UDP-CONNECT'), true], ['TCP', on('UDP-CONNECT'), true],
    ['SCTP', on('TCP'), false], ['TCP', on('HTTP'), false], ['TCP', { type: 'TCP', admin_state_up: false }, false], ['TCP', undefined, false],
  ];
  for (const [protocol, monitor, expected] of cases) assert.equal(probedByOvn(protocol, monitor), expected, `${protocol} ${JSON.stringify(monitor)}`);
});

test('facts from probed members: their pools are monitored, unknown verdicts left out', () => {
  const probed = (id: string, poolId: string): ProbedMember => ({ id, poolId, loadBalancerId: LB, address: '10.0.0.1', port: 80, protocol: 'tcp' });
  const f = healthFacts([probed(M1, P1), probed(M2, P1)], (m) => (m.id === M1 ? 'offline' : undefined));
  assert.deepEqual(f, { monitoredPools: new Set([P1]), serviceMonitors: new Map([[M1, 'offline']]) });
});

test('member statuses by OVN alone, for every member, pending ones too', () => {
  const t = tree({ members: [member(M1, P1, 'ONLINE', { provisioning_status: 'PENDING_UPDATE' }), member(M2, P1, 'ERROR'), member(M3, P2, 'ONLINE'), member(M4, P1, 'ONLINE', { admin_state_up: false })] });
  assert.deepEqual(ovnMemberStatuses(t, facts({ [M1]: 'offline' })), { [M1]: 'ERROR', [M2]: 'ERROR', [M3]: 'NO_MONITOR', [M4]: 'OFFLINE' });
});

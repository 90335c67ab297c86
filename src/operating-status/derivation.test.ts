import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Heartbeat } from '../domain/amphora-config.js';
import { deriveStatuses, heartbeatObservation, memberStatus, type ObservedTree } from './derivation.js';
import { L1, L2, LB, M1, M2, M3, observedTree, P1, P2, row, sorted } from '../../test/support/observed-tree.js';

const tree = observedTree;

const stats = { bytesIn: 0, bytesOut: 0, activeConnections: 0, totalConnections: 0, requestErrors: 0 };

function heartbeat(patch: Partial<Heartbeat> = {}): Heartbeat {
  return {
    amphoraId: '00000000-0000-4000-8000-0000000000aa',
    epoch: 0,
    seq: 1,
    sentAt: Date.now(),
    configVersion: 3,
    listeners: { [L1]: { status: 'OPEN', stats }, [L2]: { status: 'OPEN', stats } },
    pools: { [P1]: { status: 'UP', members: { [M1]: 'UP', [M2]: 'UP' } }, [P2]: { status: 'UP', members: { [M3]: 'no check' } } },
    ...patch,
  };
}

/** The amphora path: a heartbeat observed against the tree's config version, then the shared derivation. */
const derive = (t: ObservedTree, hb: Heartbeat) => deriveStatuses(t, heartbeatObservation(hb, t.lb.config_version));


test('a healthy report of a healthy tree changes nothing', () => {
  assert.deepEqual(derive(tree(), heartbeat()), { changes: [], listenersComplete: true });
});

test('HAProxy server states map to member statuses', () => {
  const cases: Array<[string, string | undefined]> = [
    ['UP', 'ONLINE'], ['UP 1/3', 'ONLINE'], ['DOWN', 'ERROR'], ['DOWN 1/2', 'ERROR'], ['DRAIN', 'DRAINING'], ['NOLB', 'DRAINING'],
    ['MAINT', 'OFFLINE'], ['MAINT(via)', 'OFFLINE'], ['no check', 'NO_MONITOR'], ['RESTARTING', undefined],
  ];
  for (const [reported, expected] of cases) assert.equal(memberStatus(reported), expected, reported);
});

test('FULL listener degrades it and the LB; a member DOWN degrades its pool and the LB', () => {
  const hb = heartbeat({
    listeners: { [L1]: { status: 'FULL', stats }, [L2]: { status: 'OPEN', stats } },
    pools: { [P1]: { status: 'UP', members: { [M1]: 'DOWN', [M2]: 'DRAIN' } }, [P2]: { status: 'UP', members: { [M3]: 'MAINT' } } },
  });
  assert.deepEqual(sorted(derive(tree(), hb).changes), sorted([
    { table: 'listener', id: L1, operating_status: 'DEGRADED' },
    { table: 'member', id: M1, operating_status: 'ERROR' },
    { table: 'member', id: M2, operating_status: 'DRAINING' },
    { table: 'member', id: M3, operating_status: 'OFFLINE' },
    { table: 'pool', id: P1, operating_status: 'DEGRADED' },
    { table: 'load_balancer', id: LB, operating_status: 'DEGRADED' },
  ]));
});

test('a pool DOWN is ERROR and makes the LB ERROR, worse than DEGRADED', () => {
  const hb = heartbeat({
    listeners: { [L1]: { status: 'FULL', stats }, [L2]: { status: 'OPEN', stats } },
    pools: { [`${P1}:${L1}`]: { status: 'DOWN', members: { [M1]: 'DOWN', [M2]: 'DOWN' } }, [P2]: { status: 'UP', members: { [M3]: 'no check' } } },
  });
  const changes = derive(tree(), hb).changes;
  assert.deepEqual(changes.find((c) => c.id === P1), { table: 'pool', id: P1, operating_status: 'ERROR' });
  assert.deepEqual(changes.find((c) => c.id === LB), { table: 'load_balancer', id: LB, operating_status: 'ERROR' });
});

test('pools reported once per listener (Octavia keys pool:listener) take the worst report', () => {
  const hb = heartbeat({
    pools: {
      [`${P1}:${L1}`]: { status: 'UP', members: { [M1]: 'UP', [M2]: 'UP' } },
      [`${P1}:${L2}`]: { status: 'UP', members: { [M1]: 'DOWN', [M2]: 'UP' } },
      [P2]: { status: 'UP', members: { [M3]: 'no check' } },
    },
  });
  const changes = derive(tree(), hb).changes;
  assert.deepEqual(changes.find((c) => c.id === M1), { table: 'member', id: M1, operating_status: 'ERROR' });
  assert.deepEqual(changes.find((c) => c.id === P1), { table: 'pool', id: P1, operating_status: 'DEGRADED' });
});

test('an enabled listener missing from a current report is ERROR, and the report is incomplete', () => {
  const hb = heartbeat({ listeners: { [L1]: { status: 'OPEN', stats } } });
  assert.deepEqual(derive(tree(), hb), { changes: [{ table: 'listener', id: L2, operating_status: 'ERROR' }], listenersComplete: false });
});

test('absence means nothing while the amphora runs an older config, or the LB is pending or disabled', () => {
  const hb = heartbeat({ listeners: { [L1]: { status: 'OPEN', stats } }, pools: {} });
  assert.deepEqual(derive(tree(), { ...hb, configVersion: 2 }), { changes: [], listenersComplete: true });
  const pendingLb = tree({ lb: { ...row(LB), provisioning_status: 'PENDING_UPDATE', config_version: 3 } });
  assert.deepEqual(derive(pendingLb, hb), { changes: [], listenersComplete: true });
});

test('a pool absent from a current report is OFFLINE, its members too unless never monitored', () => {
  const hb = heartbeat({ pools: { [P1]: { status: 'UP', members: { [M1]: 'UP', [M2]: 'UP' } } } });
  assert.deepEqual(derive(tree(), hb).changes, [{ table: 'pool', id: P2, operating_status: 'OFFLINE' }]);
  const absentMember = heartbeat({ pools: { [P1]: { status: 'UP', members: { [M1]: 'UP' } }, [P2]: { status: 'UP', members: {} } } });
  assert.deepEqual(derive(tree(), absentMember).changes, [{ table: 'member', id: M2, operating_status: 'OFFLINE' }]);
});

test('disabled objects are OFFLINE whatever is reported; a disabled LB is OFFLINE', () => {
  const t = tree({
    lb: { ...row(LB), admin_state_up: false, config_version: 3 },
    listeners: [row(L1, 'ONLINE', { admin_state_up: false }), row(L2)],
    members: [{ ...row(M1, 'ONLINE', { admin_state_up: false }), pool_id: P1 }, { ...row(M2), pool_id: P1 }, { ...row(M3, 'NO_MONITOR'), pool_id: P2 }],
  });
  assert.deepEqual(sorted(derive(t, heartbeat()).changes), sorted([
    { table: 'listener', id: L1, operating_status: 'OFFLINE' },
    { table: 'member', id: M1, operating_status: 'OFFLINE' },
    { table: 'load_balancer', id: LB, operating_status: 'OFFLINE' },
  ]));
});

test('objects in PENDING_* are left to the operation in flight; unknown ids in the report are ignored', () => {
  const t = tree({
    listeners: [row(L1, 'OFFLINE', { provisioning_status: 'PENDING_CREATE' }), row(L2)],
    members: [{ ...row(M1, 'OFFLINE', { provisioning_status: 'PENDING_UPDATE' }), pool_id: P1 }, { ...row(M2), pool_id: P1 }, { ...row(M3, 'NO_MONITOR'), pool_id: P2 }],
  });
  const hb = heartbeat({ listeners: { [L2]: { status: 'OPEN', stats }, 'not-a-listener': { status: 'FULL', stats } } });
  assert.deepEqual(derive(t, hb), { changes: [], listenersComplete: true });
});

test('recovery: statuses return to ONLINE once reported healthy', () => {
  const t = tree({ lb: { ...row(LB, 'DEGRADED'), config_version: 3 }, listeners: [row(L1, 'ERROR'), row(L2)], pools: [row(P1, 'DEGRADED'), row(P2)], members: [{ ...row(M1, 'ERROR'), pool_id: P1 }, { ...row(M2), pool_id: P1 }, { ...row(M3, 'NO_MONITOR'), pool_id: P2 }] });
  assert.deepEqual(sorted(derive(t, heartbeat()).changes), sorted([
    { table: 'listener', id: L1, operating_status: 'ONLINE' },
    { table: 'member', id: M1, operating_status: 'ONLINE' },
    { table: 'pool', id: P1, operating_status: 'ONLINE' },
    { table: 'load_balancer', id: LB, operating_status: 'ONLINE' },
  ]));
});

test('a heartbeat as an observation: listener states, one view per pool, currency from the config version', () => {
  const hb = heartbeat({
    configVersion: 4,
    listeners: { [L1]: { status: 'OPEN', stats }, [L2]: { status: 'STOP', stats } },
    pools: {
      [`${P1}:${L1}`]: { status: 'UP', members: { [M1]: 'UP', [M2]: 'no check' } },
      [`${P1}:${L2}`]: { status: 'DOWN', members: { [M1]: 'DOWN', [M2]: 'RESTARTING' } },
    },
  });
  const observed = heartbeatObservation(hb, 4);
  assert.deepEqual(observed.listeners, new Map([[L1, 'OPEN'], [L2, 'OTHER']]));
  assert.deepEqual(observed.pools, new Map([[P1, { up: false, members: new Map([[M1, 'ERROR'], [M2, 'NO_MONITOR']]) }]]));
  assert.equal(observed.current, true);
  assert.equal(heartbeatObservation(hb, 5).current, false);
});

test('a listener in a state Octavia does not judge (STOP) keeps its stored status', () => {
  const hb = heartbeat({ listeners: { [L1]: { status: 'STOP', stats }, [L2]: { status: 'OPEN', stats } } });
  assert.deepEqual(derive(tree({ listeners: [row(L1, 'DEGRADED'), row(L2)] }), hb), { changes: [], listenersComplete: true });
});

test('the derivation takes any observation: a pool down with no member report is ERROR, its unreported members OFFLINE', () => {
  const observed = { listeners: new Map([[L1, 'OPEN' as const], [L2, 'OPEN' as const]]), pools: new Map([[P1, { up: false, members: new Map() }], [P2, { up: true, members: new Map([[M3, 'NO_MONITOR']]) }]]), current: true };
  assert.deepEqual(sorted(deriveStatuses(tree(), observed).changes), sorted([
    { table: 'member', id: M1, operating_status: 'OFFLINE' },
    { table: 'member', id: M2, operating_status: 'OFFLINE' },
    { table: 'pool', id: P1, operating_status: 'ERROR' },
    { table: 'load_balancer', id: LB, operating_status: 'ERROR' },
  ]));
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultConfig, deepMerge, type Config } from '../../config.js';
import { planCapacity, type Resource } from './capacity.js';
import type { PlanClass } from './classes.js';
import { footprintOf } from './inventory.js';
import { antiAffinityOf } from './plan.js';

const quota: Resource = { key: 'quota', label: 'load_balancer quota of project demo', unit: 'load balancers', capacity: 20, inUse: 5, failover: 0 };
const vip: Resource = { key: 'vip', label: 'VIP addresses of public-subnet', unit: 'addresses', capacity: 100, inUse: 10, failover: 2 };
const memory: Resource = { key: 'memory', label: 'memory of this machine', unit: 'MiB', capacity: 1000, inUse: 400, failover: 70 };
const single = { name: 'single', count: 10, perLb: { quota: 1, vip: 2, memory: 35 } };

test('the quota runs out first: the plan exceeds it, and the verdict names it and the count it holds', () => {
  const roomy = { ...memory, capacity: 1100 };
  const plan = planCapacity([quota, vip, roomy], [single], 'planned');
  // quota: 20 - 5 = 15; vip: (100 - 10 - 2) / 2 = 44; memory: (1100 - 400 - 70) / 35 = 18.
  assert.deepEqual(plan.resources.map((r) => r.holds), [15, 44, 18]);
  assert.equal(plan.verdict.kind, 'fits');
  const more = planCapacity([quota, vip, roomy], [{ ...single, count: 16 }], 'planned');
  assert.equal(more.verdict.kind, 'exceeds');
  assert.equal(more.verdict.firstLimit, quota.label);
  assert.equal(more.verdict.atCount, 15);
  assert.match(more.verdict.sentence, /^The plan's 16 load balancer\(s\) do not fit: load_balancer quota of project demo runs out first, at 15/);
});

test("the subnet's addresses run out first for a mix heavy in VIP ports", () => {
  const plan = planCapacity([quota, vip, memory], [{ name: 'bridged pair', count: 31, perLb: { vip: 3, memory: 1 } }], 'planned');
  assert.equal(plan.verdict.firstLimit, vip.label);
  assert.equal(plan.verdict.atCount, 29);
  assert.equal(plan.verdict.kind, 'exceeds');
  assert.equal(plan.resources[1]!.free, 100 - 10 - 93 - 2);
});

test("this machine's memory runs out first", () => {
  const plan = planCapacity([vip, memory], [{ name: 'heavy', count: 5, perLb: { vip: 1, memory: 200 } }], 'planned');
  assert.equal(plan.verdict.firstLimit, memory.label);
  assert.equal(plan.verdict.atCount, 2);
  assert.equal(plan.classes[0]!.maxCount, 2);
  assert.equal(plan.classes[0]!.limitedBy, memory.label);
});

test('N+1: a plan that fits only if no room is held for the replacements a failover builds', () => {
  const plan = planCapacity([memory], [{ name: 'single', count: 17, perLb: { memory: 35 } }], 'planned');
  // 600 MiB free holds 17 of 35 MiB, but not with 70 MiB held for two replacements (15).
  assert.equal(plan.verdict.kind, 'fits-without-failover-headroom');
  assert.equal(plan.verdict.atCount, 15);
  assert.match(plan.verdict.sentence, /fit only without failover headroom: memory of this machine .*\(N\+1\)/);
});

test('live: the classes are already in use, and the verdict says how far they grow', () => {
  const plan = planCapacity([quota], [{ name: 'a', count: 3, perLb: { quota: 1 } }, { name: 'b', count: 2, perLb: { quota: 1 } }], 'live');
  assert.equal(plan.resources[0]!.other, 0);
  assert.equal(plan.verdict.kind, 'fits');
  assert.equal(plan.verdict.atCount, 20);
  assert.match(plan.verdict.sentence, /^Today's 5 load balancer\(s\) fit\. .* holds 20 .* \(15 more than today\)/);
  assert.deepEqual(plan.classes.map((c) => c.maxCount), [18, 17]);
});

test('a mix that takes nothing with a capacity has no limit', () => {
  const plan = planCapacity([quota], [{ name: 'ovn', count: 4, perLb: {} }], 'planned');
  assert.equal(plan.verdict.kind, 'no-limit');
  assert.equal(plan.classes[0]!.maxCount, null);
});

const config = (over: unknown = {}): Config => deepMerge(defaultConfig('/tmp/plan-unit'), over);
const planClass = (over: Partial<PlanClass>): PlanClass => ({
  name: 'c',
  provider: 'amphora',
  topology: 'SINGLE',
  flavor: null,
  computeFlavor: 'default',
  count: 1,
  listeners: 1,
  vipSubnetId: null,
  vipSubnetName: 'x',
  projectId: null,
  ...over,
});

test('footprints: one amphora per SINGLE, two per ACTIVE_STANDBY, none for OVN; base ports only on bridge networks', () => {
  assert.deepEqual(footprintOf(planClass({}), config()), { amphorae: 1, vipAddresses: 1, managementAddresses: 1, vcpus: 1, ramMiB: 1024, diskGiB: 2 });
  assert.deepEqual(footprintOf(planClass({ topology: 'ACTIVE_STANDBY' }), config({ network: { driver: 'bridge' } })), { amphorae: 2, vipAddresses: 3, managementAddresses: 2, vcpus: 2, ramMiB: 2048, diskGiB: 4 });
  assert.deepEqual(footprintOf(planClass({ provider: 'ovn', topology: null, computeFlavor: null }), config()), { amphorae: 0, vipAddresses: 1, managementAddresses: 0, vcpus: 0, ramMiB: 0, diskGiB: 0 });
});

test('anti-affinity cannot hold for ACTIVE_STANDBY pairs on one host, and is not needed without them', () => {
  const impossible = antiAffinityOf(config({ compute: { driver: 'netns' } }), [planClass({ name: 'pair', topology: 'ACTIVE_STANDBY' })]);
  assert.equal(impossible.verdict, 'impossible');
  assert.match(impossible.sentence, /compute.driver netns has one host, so both amphorae of each ACTIVE_STANDBY pair \(pair\)/);
  assert.equal(antiAffinityOf(config(), [planClass({})]).verdict, 'not-needed');
});

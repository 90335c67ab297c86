/**
 * The capacity plan (`ostia plan`, and the API's `GET /v2/ostia/plan` for the live load balancers):
 * per class and in all, amphorae, addresses on each VIP subnet and the management network, what the
 * flavors reserve; against the projects' quotas, the subnets' free addresses and this machine, with
 * room held for failover; the create and failover times this service measured; and the verdict.
 */
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import { planCapacity, type PlanMode } from './capacity.js';
import { liveClasses, type PlanClass } from './classes.js';
import { footprintOf, takeInventory } from './inventory.js';
import { measuredTimes } from './measured.js';
import type { AntiAffinity, ClassFootprint, MeasuredOperation, PlanClassResult, PlanResult } from './result.js';




const add = (a: ClassFootprint, b: ClassFootprint): ClassFootprint => ({
  amphorae: a.amphorae + b.amphorae,
  vipAddresses: a.vipAddresses + b.vipAddresses,
  managementAddresses: a.managementAddresses + b.managementAddresses,
  vcpus: a.vcpus + b.vcpus,
  ramMiB: a.ramMiB + b.ramMiB,
  diskGiB: a.diskGiB + b.diskGiB,
});
const times = (f: ClassFootprint, n: number): ClassFootprint => ({
  amphorae: f.amphorae * n,
  vipAddresses: f.vipAddresses * n,
  managementAddresses: f.managementAddresses * n,
  vcpus: f.vcpus * n,
  ramMiB: f.ramMiB * n,
  diskGiB: f.diskGiB * n,
});
const NONE: ClassFootprint = { amphorae: 0, vipAddresses: 0, managementAddresses: 0, vcpus: 0, ramMiB: 0, diskGiB: 0 };

/** Share of a resource's capacity, to one decimal: the table's FREE % and the picture's bars. */
export const percent = (value: number, capacity: number) => (capacity > 0 ? Math.round((Math.max(0, value) / capacity) * 1000) / 10 : 0);

/** The plan of `classes` against this service as it stands: its database, its configuration and this machine. */
export async function planFor(db: Db, config: Config, mode: PlanMode, file: string | null, classes: readonly PlanClass[]): Promise<PlanResult> {
  const inventory = await takeInventory(db, config, classes);
  const measured = await measuredTimes(db);
  const capacity = planCapacity(inventory.resources, inventory.demands, mode);
  const timeOf = (c: PlanClass, operation: MeasuredOperation) => measured.find((m) => m.provider === c.provider && m.topology === c.topology && m.operation === operation) ?? null;
  const results = classes.map((c, i): PlanClassResult => {
    const each = footprintOf(c, config);
    return {
      name: c.name,
      provider: c.provider,
      topology: c.topology,
      flavor: c.flavor,
      compute_flavor: c.computeFlavor,
      count: c.count,
      listeners: c.listeners,
      vip_subnet: c.vipSubnetName,
      project_id: c.projectId,
      per_load_balancer: each,
      total: times(each, c.count),
      max_count: capacity.classes[i]!.maxCount,
      limited_by: capacity.classes[i]!.limitedBy,
      measured: { create: timeOf(c, 'create'), failover: timeOf(c, 'failover') },
    };
  });
  const antiAffinity = antiAffinityOf(config, classes);
  const verdict = { ...capacity.verdict, sentence: `${capacity.verdict.sentence}${antiAffinity.verdict === 'impossible' ? ` ${antiAffinity.sentence}` : ''}` };
  return {
    source: mode === 'live' ? 'live' : 'file',
    file,
    drivers: { compute: config.compute.driver, network: config.network.driver },
    classes: results,
    totals: { ...results.reduce((sum, r) => add(sum, r.total), NONE), load_balancers: results.reduce((n, r) => n + r.count, 0), listeners: results.reduce((n, r) => n + r.count * r.listeners, 0) },
    resources: capacity.resources.map((r) => ({ ...r, free_percent: percent(r.free, r.capacity) })),
    amphora: inventory.amphora,
    measured_times: [...measured],
    hosts:
      config.compute.driver === 'noop'
        ? 'No host: compute.driver noop boots nothing. Ostia drives no Nova, so no hypervisor is consulted.'
        : `One host, this machine: compute.driver ${config.compute.driver} runs every amphora here. Ostia drives no Nova, so no hypervisor is consulted.`,
    anti_affinity: antiAffinity,
    notes: inventory.notes,
    verdict,
  };
}

/** The plan of the live load balancers (how far today's mix can grow); null when none runs, so there is no class to plan. */
export async function livePlan(db: Db, config: Config): Promise<PlanResult | null> {
  const classes = await liveClasses(db, config);
  return classes.length ? planFor(db, config, 'live', null, classes) : null;
}

/** An ACTIVE_STANDBY pair survives its host only on two hosts, and every compute driver here has one. */
export function antiAffinityOf(config: Pick<Config, 'compute'>, classes: readonly PlanClass[]): AntiAffinity {
  const pairs = classes.filter((c) => c.topology === 'ACTIVE_STANDBY').map((c) => c.name);
  if (!pairs.length) return { verdict: 'not-needed', sentence: 'No class is ACTIVE_STANDBY: no pair needs two hosts.' };
  return {
    verdict: 'impossible',
    sentence:
      `Anti-affinity cannot hold: compute.driver ${config.compute.driver} has one host, so both amphorae of each ACTIVE_STANDBY pair (${pairs.join(', ')}) ` +
      'run on it, and losing it loses both; the pair guards against an amphora failing, not its host.',
  };
}

/**
 * `ostia plan`: will these load balancers fit, and what runs out first? From a YAML file of classes (or the
 * live load balancers, --from-live): per class and in all, amphorae, addresses on each VIP subnet and the
 * management network, what the flavors reserve; against the projects' quotas, the subnets' free addresses
 * and this machine (for the process compute drivers), with room held for failover; the create and failover
 * times this service measured; and a verdict naming the first limit and the count it holds.
 */
import { CliError, formatTable, printJson, usageError, type Command } from './command.js';
import { drawPicture, pictureOption, type Chart } from './picture.js';
import { configFromFlags, databaseOption, dataDirOption, openExisting } from './settings.js';
import type { Config } from '../config.js';
import { format, planCapacity, type CapacityPlan, type PlanMode } from './plan/capacity.js';
import { ClassError, liveClasses, readClassesFile, resolveClasses, type PlanClass } from './plan/classes.js';
import { footprintOf, takeInventory, type ClassFootprint, type Inventory } from './plan/inventory.js';
import { measuredTimes, type MeasuredOperation, type MeasuredTime } from './plan/measured.js';

/** The exit code when the plan does not fit (or fits only without failover headroom), apart from 1 (failed) and 2 (usage). */
export const DOES_NOT_FIT_EXIT = 3;

export interface PlanClassResult {
  name: string;
  provider: string;
  topology: string | null;
  flavor: string | null;
  compute_flavor: string | null;
  count: number;
  listeners: number;
  vip_subnet: string;
  project_id: string | null;
  per_load_balancer: ClassFootprint;
  total: ClassFootprint;
  max_count: number | null;
  limited_by: string | null;
  measured: Record<MeasuredOperation, MeasuredTime | null>;
}

export interface AntiAffinity {
  verdict: 'impossible' | 'not-needed';
  sentence: string;
}

export interface PlanResult {
  source: 'file' | 'live';
  file: string | null;
  drivers: { compute: string; network: string };
  classes: PlanClassResult[];
  totals: ClassFootprint & { load_balancers: number; listeners: number };
  resources: Array<CapacityPlan['resources'][number] & { free_percent: number }>;
  amphora: Inventory['amphora'];
  measured_times: MeasuredTime[];
  hosts: string;
  anti_affinity: AntiAffinity;
  notes: string[];
  verdict: CapacityPlan['verdict'];
}

export const plan: Command = {
  name: 'plan',
  summary: 'Plan capacity: what classes of load balancers take, against quotas, free addresses and this machine, and the first limit hit.',
  options: {
    ...dataDirOption,
    ...databaseOption,
    classes: { type: 'string', value: 'FILE', help: 'a YAML file of classes (name, provider, topology or flavor, count, listeners; see the README)' },
    'from-live': { type: 'boolean', help: 'the classes of the live load balancers instead: how far today\'s mix can grow' },
    ...pictureOption,
  },
  details: [
    'Reads the database and configuration of the Ostia named by --data-dir (and --config) or --database-url; the service need not be running.',
    'A classes file counts its load balancers on top of what runs now; --from-live counts what runs now and how far it can grow.',
    `Exit status: 0 it fits, ${DOES_NOT_FIT_EXIT} it does not (or only without failover headroom), 1 the plan failed, 2 usage.`,
  ].join('\n'),
  async run(input) {
    const v = input.values as Record<string, string | boolean | undefined>;
    const file = typeof v.classes === 'string' ? v.classes : null;
    if ((file === null) === (v['from-live'] !== true)) throw usageError(plan, 'give --classes FILE or --from-live (one of them)');
    const config = configFromFlags(plan, input);
    const db = await openExisting(config);
    let result: PlanResult;
    try {
      const classes = file === null ? await liveClasses(db, config) : await resolveClasses(db, config, readClassesFile(file));
      if (!classes.length) throw new CliError('no load balancer runs here, so --from-live has no class to plan', 'Create load balancers first, or give a classes file with --classes.');
      result = await planFor(config, file === null ? 'live' : 'planned', file, classes, await takeInventory(db, config, classes), await measuredTimes(db));
    } catch (e) {
      if (e instanceof ClassError) throw new CliError(e.message, 'Fix the classes file (see the "Capacity plan" section of the README), then run the plan again.');
      throw e;
    } finally {
      await db.close();
    }
    if (typeof v.picture === 'string') await drawPicture(v.picture, planChart(result));
    if (input.json) printJson(result);
    else process.stdout.write(render(result));
    return result.verdict.kind === 'exceeds' || result.verdict.kind === 'fits-without-failover-headroom' ? DOES_NOT_FIT_EXIT : 0;
  },
};

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
const percent = (value: number, capacity: number) => (capacity > 0 ? Math.round((Math.max(0, value) / capacity) * 1000) / 10 : 0);

export function planFor(config: Config, mode: PlanMode, file: string | null, classes: readonly PlanClass[], inventory: Inventory, measured: readonly MeasuredTime[]): PlanResult {
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

const measuredText = (m: MeasuredTime | null) => (m ? `${format(m.medianSeconds)} s (${m.count})` : 'not measured yet');

function render(r: PlanResult): string {
  const lines = [`Capacity plan: ${r.classes.length} class(es) ${r.source === 'live' ? 'of the live load balancers' : `from ${r.file}`} (compute.driver ${r.drivers.compute}, network.driver ${r.drivers.network})`, ''];
  const fp = (f: ClassFootprint) => [f.amphorae, f.vipAddresses, f.managementAddresses, f.vcpus, f.ramMiB, f.diskGiB].map(String);
  lines.push(
    formatTable(
      [
        ['CLASS', 'PROVIDER', 'TOPOLOGY', 'COUNT', 'LISTENERS', 'AMPHORAE', 'VIP ADDR', 'MGMT ADDR', 'vCPU', 'RAM MiB', 'DISK GiB', 'MAX COUNT', 'LIMITED BY', 'CREATE (JOBS)', 'FAILOVER (JOBS)'],
        ...r.classes.map((c) => [
          c.name,
          c.provider,
          c.topology ?? '-',
          String(c.count),
          String(c.listeners),
          ...fp(c.total),
          c.max_count === null ? 'no limit' : String(c.max_count),
          c.limited_by ?? '-',
          measuredText(c.measured.create),
          c.topology === null ? '-' : measuredText(c.measured.failover),
        ]),
        ['TOTAL', '', '', String(r.totals.load_balancers), String(r.totals.listeners), ...fp(r.totals), '', '', '', ''],
      ],
      [3, 4, 5, 6, 7, 8, 9, 10, 11],
    ).trimEnd(),
    '',
    formatTable(
      [
        ['RESOURCE', 'UNIT', 'CAPACITY', 'IN USE', r.source === 'live' ? 'CLASSES' : 'PLAN', 'FAILOVER', 'FREE AFTER', 'FREE %', 'HOLDS'],
        ...r.resources.map((x) => [
          x.label,
          x.unit,
          format(x.capacity),
          format(x.inUse),
          format(x.byClass.reduce((a, b) => a + b, 0)),
          format(x.failover),
          format(x.free),
          `${format(x.free_percent)}%`,
          x.holds === null ? '-' : String(x.holds),
        ]),
      ],
      [2, 3, 4, 5, 6, 7, 8],
    ).trimEnd(),
    '',
    `Hosts: ${r.hosts}`,
    `Anti-affinity: ${r.anti_affinity.sentence}`,
    ...r.notes.map((n) => `Note: ${n}`),
    '',
    `Verdict: ${r.verdict.sentence}`,
  );
  return lines.join('\n') + '\n';
}

/** Used against available per resource: what else holds it, each class, failover headroom, and what is left, as shares of it. */
export function planChart(r: PlanResult): Chart {
  const share = (pick: (x: PlanResult['resources'][number]) => number) => r.resources.map((x) => percent(pick(x), x.capacity));
  return {
    title: 'Capacity plan: used against available, per resource',
    subtitle: r.verdict.firstLimit ? `first limit: ${r.verdict.firstLimit}, at ${r.verdict.atCount} load balancer(s)` : 'no limit',
    categories: r.resources.map((x) => x.label),
    horizontal: true,
    unit: '% of capacity',
    axisEnd: 100,
    format: (v) => `${format(v)}%`,
    series: [
      { name: 'in use by others', values: share((x) => x.other), stack: 'use' },
      ...r.classes.map((c, i) => ({ name: c.name, values: share((x) => x.byClass[i]!), stack: 'use' })),
      { name: 'failover headroom', values: share((x) => x.failover), stack: 'use' },
      { name: 'free', values: r.resources.map((x) => x.free_percent), stack: 'use' },
    ],
  };
}

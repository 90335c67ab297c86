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
import { format } from '../tools/plan/capacity.js';
import { ClassError, readClassesFile, resolveClasses } from '../tools/plan/classes.js';
import { livePlan, percent, planFor } from '../tools/plan/plan.js';
import type { ClassFootprint, MeasuredTime, PlanResult } from '../tools/plan/result.js';

/** The exit code when the plan does not fit (or fits only without failover headroom), apart from 1 (failed) and 2 (usage). */
export const DOES_NOT_FIT_EXIT = 3;

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
    let result: PlanResult | null;
    try {
      result = file === null ? await livePlan(db, config) : await planFor(db, config, 'planned', file, await resolveClasses(db, config, readClassesFile(file)));
    } catch (e) {
      if (e instanceof ClassError) throw new CliError(e.message, 'Fix the classes file (see the "Capacity plan" section of the README), then run the plan again.');
      throw e;
    } finally {
      await db.close();
    }
    if (!result) throw new CliError('no load balancer runs here, so --from-live has no class to plan', 'Create load balancers first, or give a classes file with --classes.');
    if (typeof v.picture === 'string') await drawPicture(v.picture, planChart(result));
    if (input.json) printJson(result);
    else process.stdout.write(render(result));
    return result.verdict.kind === 'exceeds' || result.verdict.kind === 'fits-without-failover-headroom' ? DOES_NOT_FIT_EXIT : 0;
  },
};

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

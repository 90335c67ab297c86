/**
 * `ostia advise`: which provider a Kubernetes cluster's Service load balancers need. From Services as
 * kubectl prints them (and the cluster's magnum-cluster-api labels): per Service, whether the OVN
 * provider covers what cloud-provider-openstack asks for, and if not, the provider's own refusal; per
 * cluster, the verdict, the amphorae saved, the NodePorts OVN exposes and the labels to set. With
 * --from-live, the same for this service's own load balancers.
 */
import { readFileSync } from 'node:fs';
import { basename, extname } from 'node:path';
import { Topology } from '../domain/enums.js';
import { adviseCluster, type ClusterAdvice } from './advise/cluster.js';
import { adviseLive } from '../tools/advise/live.js';
import type { LiveSummary } from '../tools/advise/summary.js';
import { readServices } from './advise/services.js';
import { CliError, formatTable, printJson, usageError, type Command, type Input } from './command.js';
import { drawPicture, pictureOption, type Chart } from './picture.js';
import { configFromFlags, databaseOption, dataDirOption, openExisting } from './settings.js';
import { printable } from './terminal-text.js';

/** The exit code when a cluster or load balancer needs amphora, apart from 1 (the advice failed) and 2 (usage). */
export const NEEDS_AMPHORA_EXIT = 3;

export const advise: Command = {
  name: 'advise',
  summary: 'Advise which provider Kubernetes Services (or this service\'s load balancers) need: OVN, or amphora and why.',
  rest: 'MANIFEST',
  options: {
    labels: { type: 'string', value: 'K=V,...', help: "the cluster's magnum-cluster-api labels, as 'openstack coe cluster create --labels' takes them" },
    topology: { type: 'string', value: 'TOPOLOGY', help: `the amphora topology of the cluster's load balancers: ${Topology.join(' or ')} (default SINGLE)` },
    'manage-security-groups': { type: 'boolean', help: "the cluster's CPO runs with manage-security-groups=true" },
    'from-live': { type: 'boolean', help: "advise on this service's load balancers instead of manifests" },
    project: { type: 'string', value: 'ID', help: 'with --from-live: only the load balancers of this project (default all)' },
    ...dataDirOption,
    ...databaseOption,
    ...pictureOption,
  },
  details: [
    "Each MANIFEST is one cluster's Services, as 'kubectl get svc -A -o yaml' prints them (or YAML documents of Services;",
    "'-' reads standard input); the cluster is named after the file. Each Service of type LoadBalancer is translated into",
    'what cloud-provider-openstack asks Octavia for (a listener and pool per port, the lb-method, the health monitor,',
    'loadBalancerSourceRanges as allowed CIDRs, ...) under the labels an OVN cluster needs, and put to the OVN provider\'s',
    'capability table; a refusal is printed in the provider\'s own words. A cluster fits OVN when no Service is refused:',
    "CPO has one provider per cluster. Services sharing a load balancer (the load-balancer-id annotation) count once.",
    "With --from-live, reads the database of the Ostia named by --data-dir (SQLite) or --database-url (the service need not",
    "be running) and puts each amphora load balancer's objects to the OVN provider's checks.",
    `Exit status: 0 everything fits OVN, ${NEEDS_AMPHORA_EXIT} a cluster or load balancer needs amphora, 1 the advice failed, 2 usage.`,
  ].join('\n'),
  async run(input) {
    const v = input.values as Record<string, string | boolean | undefined>;
    const picture = v.picture as string | undefined;
    if (v['from-live']) {
      if (input.positionals.length) throw usageError(advise, 'give manifests or --from-live, not both');
      const summary = await live(input, v.project as string | undefined);
      if (input.json) printJson(summary);
      else process.stdout.write(renderLive(summary));
      if (picture !== undefined) await drawPicture(picture, liveChart(summary));
      return summary.movable < summary.amphoraLoadBalancers ? NEEDS_AMPHORA_EXIT : 0;
    }
    if (v.project !== undefined) throw usageError(advise, '--project goes with --from-live');
    if (!input.positionals.length) throw usageError(advise, 'give one or more manifest files (- for standard input), or --from-live');
    const labels = parseLabels(v.labels as string | undefined);
    const topology = (v.topology as string | undefined) ?? 'SINGLE';
    if (!(Topology as readonly string[]).includes(topology)) throw usageError(advise, `--topology must be ${Topology.join(' or ')}, got '${topology}'`);
    const clusters = input.positionals.map((file) =>
      adviseCluster({ cluster: clusterName(file), services: servicesOf(file), labels, topology: topology as Topology, manageSecurityGroups: v['manage-security-groups'] === true }),
    );
    if (input.json) printJson({ clusters });
    else process.stdout.write(clusters.map(renderCluster).join('\n'));
    if (picture !== undefined) await drawPicture(picture, clustersChart(clusters));
    return clusters.some((c) => c.verdict === 'needs-amphora') ? NEEDS_AMPHORA_EXIT : 0;
  },
};

/** `k=v,k=v`, as Magnum takes labels. */
function parseLabels(text: string | undefined): Record<string, string> {
  if (text === undefined) return {};
  const labels: Record<string, string> = {};
  for (const pair of text.split(',').filter((p) => p.trim() !== '')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw usageError(advise, `--labels takes KEY=VALUE pairs separated by commas, got '${pair}'`);
    labels[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return labels;
}

const clusterName = (file: string) => (file === '-' ? 'stdin' : basename(file, extname(file)));

function servicesOf(file: string) {
  let text: string;
  try {
    text = readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${(e as Error).message}`, "Give a file written by 'kubectl get svc -A -o yaml > FILE', or - to read standard input.");
  }
  try {
    return readServices(text, file);
  } catch (e) {
    throw new CliError((e as Error).message, "Give Services as 'kubectl get svc -A -o yaml' prints them.");
  }
}

async function live(input: Input, project: string | undefined): Promise<LiveSummary> {
  const db = await openExisting(configFromFlags(advise, input));
  try {
    return await adviseLive(db, project);
  } finally {
    await db.close();
  }
}

const VERDICT_TEXT: Record<string, string> = { 'fits-ovn': 'fits OVN', 'needs-amphora': 'NEEDS AMPHORA', 'on-ovn': 'on OVN', 'no-data-plane': 'no data plane' };

function renderCluster(c: ClusterAdvice): string {
  const lines = [printable(`Cluster ${c.cluster} (octavia_provider ${c.provider}): ${VERDICT_TEXT[c.verdict]}`), ''];
  if (c.services.length) {
    lines.push(
      formatTable([
        ['SERVICE', 'PORTS', 'LOAD BALANCER', 'VERDICT', 'OVN REFUSES'],
        ...c.services.map((s) => [s.service, s.ports.join(' '), s.loadBalancer, VERDICT_TEXT[s.verdict]!, s.refusals.map((r) => r.reason).filter((r, i, all) => all.indexOf(r) === i).join('; ')]),
      ]).trimEnd(),
    );
    for (const s of c.services) {
      lines.push(printable(`  ${s.service}: ${s.explanation}`));
      for (const r of s.refusals) lines.push(printable(`    ${r.feature} ${r.value}: ${r.because}. On OVN: ${r.onOvn}.`));
      for (const n of s.notes) lines.push(printable(`    note: ${n}`));
    }
  }
  for (const s of c.skipped) lines.push(printable(`  ${s.service}: skipped, ${s.reason}.`));
  lines.push(
    '',
    formatTable(
      [
        ['LOAD BALANCERS', 'FIT OVN', 'AMPHORAE TODAY', 'AMPHORAE AFTER', 'SAVED'],
        [String(c.loadBalancers), String(c.loadBalancersFitting), String(c.amphoraeToday), String(c.amphoraeAfter), String(c.amphoraeSaved)],
      ],
      [0, 1, 2, 3, 4],
    ).trimEnd(),
    printable(`Verdict: ${c.explanation}`),
    '',
    `NodePorts on OVN: ${c.nodePorts.explanation}`,
  );
  if (c.nodePorts.ports.length)
    lines.push(formatTable([['SERVICE', 'NODEPORT', 'PROTOCOL', 'OPEN TO'], ...c.nodePorts.ports.map((p) => [p.service, String(p.nodePort), p.protocol, p.sources.join(' ')])], [1]).trimEnd());
  lines.push('', 'Labels for OVN:', formatTable([['LABEL', 'SET TO', 'NOW', 'WHY'], ...c.labels.map((l) => [l.label, l.value, l.current ?? '(unset)', l.why])]).trimEnd());
  lines.push('', printable(`Warning: ${c.apiServer}`));
  return lines.join('\n') + '\n';
}

function renderLive(s: LiveSummary): string {
  const lines: string[] = [];
  if (s.loadBalancers.length)
    lines.push(
      formatTable([
        ['LOAD BALANCER', 'NAME', 'PROJECT', 'CLUSTER', 'PROVIDER', 'AMPHORAE', 'VERDICT', 'OVN REFUSES'],
        ...s.loadBalancers.map((lb) => [lb.id, lb.name, lb.project_id, lb.cluster ?? '', lb.provider, String(lb.amphorae), VERDICT_TEXT[lb.verdict]!, [...new Set(lb.refusals.map((r) => r.reason))].join('; ')]),
      ]).trimEnd(),
      ...s.loadBalancers.flatMap((lb) => [`  ${lb.id}: ${lb.explanation}`, ...lb.refusals.map((r) => `    ${r.object}: ${r.feature} ${r.value}: ${r.reason}`)].map(printable)),
      '',
    );
  lines.push(
    formatTable(
      [
        ['AMPHORA LBS', 'FIT OVN', 'AMPHORAE TODAY', 'AMPHORAE AFTER', 'SAVED'],
        [String(s.amphoraLoadBalancers), String(s.movable), String(s.amphoraeToday), String(s.amphoraeAfter), String(s.amphoraeSaved)],
      ],
      [0, 1, 2, 3, 4],
    ).trimEnd(),
    `Verdict: ${s.explanation}`,
  );
  return lines.join('\n') + '\n';
}

function clustersChart(clusters: readonly ClusterAdvice[]): Chart {
  return {
    title: 'OVN or amphora, per cluster',
    subtitle: 'Services of type LoadBalancer, and the amphorae their load balancers use',
    categories: clusters.map((c) => `${c.cluster} (${VERDICT_TEXT[c.verdict]})`),
    series: [
      { name: 'Services that fit OVN', values: clusters.map((c) => c.services.filter((s) => s.verdict === 'fits-ovn').length) },
      { name: 'Services that need amphora', values: clusters.map((c) => c.services.filter((s) => s.verdict === 'needs-amphora').length) },
      { name: 'amphorae today', values: clusters.map((c) => c.amphoraeToday) },
      { name: 'amphorae after', values: clusters.map((c) => c.amphoraeAfter) },
    ],
    horizontal: true,
  };
}

function liveChart(s: LiveSummary): Chart {
  const groups = [...new Set(s.loadBalancers.map((lb) => lb.cluster ?? lb.project_id))];
  const of = (g: string) => s.loadBalancers.filter((lb) => (lb.cluster ?? lb.project_id) === g);
  const count = (g: string, verdict: string) => of(g).filter((lb) => lb.verdict === verdict).length;
  const amphorae = (g: string, verdicts: readonly string[]) => of(g).filter((lb) => verdicts.includes(lb.verdict)).reduce((n, lb) => n + lb.amphorae, 0);
  return {
    title: 'Load balancers that could move to OVN',
    subtitle: 'per Kubernetes cluster (from CPO\'s description) or project',
    categories: groups,
    series: [
      { name: 'fit OVN', values: groups.map((g) => count(g, 'fits-ovn')) },
      { name: 'need amphora', values: groups.map((g) => count(g, 'needs-amphora')) },
      { name: 'on OVN', values: groups.map((g) => count(g, 'on-ovn')) },
      { name: 'amphorae today', values: groups.map((g) => amphorae(g, ['fits-ovn', 'needs-amphora'])) },
      { name: 'amphorae after', values: groups.map((g) => amphorae(g, ['needs-amphora'])) },
    ],
    horizontal: true,
  };
}

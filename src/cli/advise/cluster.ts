/**
 * One Kubernetes cluster's advice: each Service's requests put to the OVN provider's table, then the
 * cluster's verdict (CPO has one lb-provider per cluster, so one Service OVN refuses keeps them all on
 * amphora), the amphorae a switch saves, the NodePorts OVN exposes, the magnum-cluster-api labels to
 * set, and what a switch leaves behind (the API server's load balancer).
 */
import type { Topology } from '../../domain/enums.js';
import { sourceRanges, serviceRequests, ANNOTATIONS, type Ask, type CpoSettings } from './cpo.js';
import { askOvn } from '../../tools/advise/ovn-verdict.js';
import { serviceName, type KubeService } from './services.js';

/** Kubernetes' default `--service-node-port-range`. */
export const NODE_PORT_RANGE = '30000-32767';
/** The algorithm magnum-cluster-api accepts with ovn (it refuses any other `octavia_lb_algorithm`). */
const OVN_ALGORITHM = 'SOURCE_IP_PORT';
/** magnum-cluster-api's `octavia_provider` when the label is absent. */
const MCAPI_DEFAULT_PROVIDER = 'amphorav2';

export type Verdict = 'fits-ovn' | 'needs-amphora';

export interface Refusal extends Ask {
  /** The OVN provider's own words. */
  reason: string;
}

export interface ServiceAdvice {
  service: string;
  loadBalancer: string;
  ports: string[];
  verdict: Verdict;
  refusals: Refusal[];
  notes: string[];
  explanation: string;
}

export interface LabelAdvice {
  label: string;
  value: string;
  /** The value given to --labels, or null. */
  current: string | null;
  why: string;
}

export interface NodePortExposure {
  /** The whole range the workers' security group must open, or null when CPO opens each Service's ports itself. */
  openRange: string | null;
  ports: Array<{ service: string; nodePort: number; protocol: string; sources: string[] }>;
  explanation: string;
}

export interface ClusterAdvice {
  cluster: string;
  provider: string;
  services: ServiceAdvice[];
  skipped: Array<{ service: string; reason: string }>;
  loadBalancers: number;
  loadBalancersFitting: number;
  amphoraePerLoadBalancer: number;
  amphoraeToday: number;
  amphoraeAfter: number;
  amphoraeSaved: number;
  verdict: Verdict;
  explanation: string;
  nodePorts: NodePortExposure;
  labels: LabelAdvice[];
  apiServer: string;
}

export interface ClusterInput {
  cluster: string;
  services: readonly KubeService[];
  /** magnum-cluster-api labels of the cluster (or its template), as given to `--labels`. */
  labels: Readonly<Record<string, string>>;
  topology: Topology;
  manageSecurityGroups: boolean;
}

export const amphoraeOf = (topology: Topology): number => (topology === 'ACTIVE_STANDBY' ? 2 : 1);
const isOvn = (provider: string) => provider === 'ovn';

export function adviseService(svc: KubeService, settings: CpoSettings): ServiceAdvice {
  const { asks, notes } = serviceRequests(svc, settings);
  const refusals = asks.flatMap((ask) => {
    const refused = askOvn(ask.feature, ask.value);
    return refused ? [{ ...ask, reason: refused.reason }] : [];
  });
  const unique = refusals.filter((r, i) => refusals.findIndex((o) => o.feature === r.feature && o.value === r.value && o.because === r.because) === i);
  const verdict: Verdict = unique.length ? 'needs-amphora' : 'fits-ovn';
  const asked = [...new Set(asks.filter((x) => x.feature.endsWith('protocol') || x.feature.endsWith('type') || x.feature.endsWith('algorithm')).map((x) => x.value))].join(', ');
  const explanation =
    verdict === 'fits-ovn'
      ? `Fits OVN: everything CPO asks for (${asked}) is in the OVN provider's table.`
      : `Needs amphora: the OVN provider refuses ${unique.map((r) => `${r.feature} ${r.value} ("${r.reason}")`).join('; ')}.`;
  return {
    service: serviceName(svc),
    loadBalancer: svc.metadata.annotations?.[ANNOTATIONS.loadBalancerId] ?? `(new) ${serviceName(svc)}`,
    ports: (svc.spec.ports ?? []).map((p) => `${p.port}/${p.protocol ?? 'TCP'}`),
    verdict,
    refusals: unique,
    notes,
    explanation,
  };
}

/** Why CPO builds no load balancer for a Service, or null when it does. */
function notServed(svc: KubeService): string | null {
  if (svc.spec.type !== 'LoadBalancer') return `type ${svc.spec.type ?? 'ClusterIP'}: no load balancer`;
  if (svc.spec.loadBalancerClass) return `loadBalancerClass ${svc.spec.loadBalancerClass}: another controller's, not CPO's`;
  return null;
}

export function adviseCluster(input: ClusterInput): ClusterAdvice {
  const provider = input.labels.octavia_provider ?? MCAPI_DEFAULT_PROVIDER;
  const settings: CpoSettings = { lbMethod: OVN_ALGORITHM, createMonitor: true, manageSecurityGroups: input.manageSecurityGroups };
  const skipped: ClusterAdvice['skipped'] = [];
  const served: KubeService[] = [];
  for (const svc of input.services) {
    const reason = notServed(svc);
    if (reason) skipped.push({ service: serviceName(svc), reason });
    else served.push(svc);
  }
  const services = served.map((svc) => adviseService(svc, settings));
  const byLb = new Map<string, ServiceAdvice[]>();
  for (const s of services) byLb.set(s.loadBalancer, [...(byLb.get(s.loadBalancer) ?? []), s]);
  const loadBalancers = byLb.size;
  const loadBalancersFitting = [...byLb.values()].filter((group) => group.every((s) => s.verdict === 'fits-ovn')).length;
  const per = amphoraeOf(input.topology);
  const amphoraeToday = isOvn(provider) ? 0 : loadBalancers * per;
  const refused = services.filter((s) => s.verdict === 'needs-amphora');
  const verdict: Verdict = refused.length ? 'needs-amphora' : 'fits-ovn';
  const amphoraeAfter = verdict === 'fits-ovn' ? 0 : amphoraeToday;
  return {
    cluster: input.cluster,
    provider,
    services,
    skipped,
    loadBalancers,
    loadBalancersFitting,
    amphoraePerLoadBalancer: per,
    amphoraeToday,
    amphoraeAfter,
    amphoraeSaved: amphoraeToday - amphoraeAfter,
    verdict,
    explanation: clusterExplanation(provider, services.length, refused.length, loadBalancers, loadBalancersFitting * per, amphoraeToday),
    nodePorts: nodePortExposure(served, input.manageSecurityGroups),
    labels: labelsToSet(input.labels),
    apiServer: apiServerWarning(provider, per),
  };
}

function clusterExplanation(provider: string, services: number, refused: number, loadBalancers: number, fittingAmphorae: number, today: number): string {
  if (isOvn(provider))
    return refused
      ? `Needs amphora: the cluster is on OVN already (octavia_provider=ovn), and ${refused} of ${services} Service(s) ask for what OVN refuses (above): they need an amphora cluster.`
      : `Fits OVN: the cluster is on OVN already, and none of its ${services} Service(s) asks for what OVN refuses.`;
  if (!refused)
    return services
      ? `Fits OVN: none of the ${services} Service(s) asks for what the OVN provider refuses; switching frees ${today} amphora(e) of ${loadBalancers} load balancer(s).`
      : 'Fits OVN: no Service of type LoadBalancer, so nothing asks for what the OVN provider refuses.';
  return (
    `Needs amphora: ${refused} of ${services} Service(s) ask for what the OVN provider refuses (above). CPO has one lb-provider per cluster, ` +
    `so all ${loadBalancers} load balancer(s) stay on amphora; ${fittingAmphorae} amphora(e) would be saved once those Services no longer ask for it.`
  );
}

function nodePortExposure(served: readonly KubeService[], manageSecurityGroups: boolean): NodePortExposure {
  const open = (svc: KubeService) => (svc.spec.ipFamilies?.[0] === 'IPv6' ? '::/0' : '0.0.0.0/0');
  const ports = served.flatMap((svc) =>
    (svc.spec.ports ?? [])
      .filter((p) => p.nodePort !== undefined)
      .map((p) => ({ service: serviceName(svc), nodePort: p.nodePort!, protocol: p.protocol ?? 'TCP', sources: manageSecurityGroups && sourceRanges(svc).length ? sourceRanges(svc) : [open(svc)] })),
  );
  const explanation = manageSecurityGroups
    ? "OVN keeps the client's address: with manage-security-groups=true CPO opens each Service's NodePorts on the members' security group to its loadBalancerSourceRanges, else to every address (below)."
    : `OVN keeps the client's address, so the workers' security group must let 0.0.0.0/0 (and ::/0 for IPv6) reach the NodePort range ${NODE_PORT_RANGE}; ` +
      "set CPO's manage-security-groups=true to open only each Service's NodePorts, restricted to its loadBalancerSourceRanges.";
  return { openRange: manageSecurityGroups ? null : NODE_PORT_RANGE, ports, explanation };
}

function labelsToSet(labels: Readonly<Record<string, string>>): LabelAdvice[] {
  return [
    { label: 'octavia_provider', value: 'ovn', why: "CPO's lb-provider, and the provider of every Service load balancer the cluster builds from then on" },
    { label: 'octavia_lb_algorithm', value: OVN_ALGORITHM, why: 'the only algorithm magnum-cluster-api accepts with ovn: it refuses the cluster with any other' },
    { label: 'octavia_lb_healthcheck', value: 'true', why: "CPO's create-monitor: OVN monitors by TCP and UDP-CONNECT, and Services with externalTrafficPolicy: Local need a monitor" },
  ].map((l) => ({ ...l, current: labels[l.label] ?? null }));
}

function apiServerWarning(provider: string, per: number): string {
  const allowedCidrs = askOvn('listener.allowed_cidrs', 'present')?.reason;
  return (
    `The API server's load balancer keeps its provider on update: magnum-cluster-api keeps OpenStackCluster spec.apiServerLoadBalancer.provider as created ` +
    `(CAPO refuses to change it)${isOvn(provider) ? '' : `, so it stays on amphora (${per} amphora(e)) until the cluster is rebuilt`}; ` +
    `an API load balancer built on OVN cannot restrict who reaches the API${allowedCidrs ? ` ("${allowedCidrs}")` : ''}.`
  );
}

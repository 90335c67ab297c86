/**
 * What cloud-provider-openstack (CPO: openstack-cloud-controller-manager, pkg/openstack/loadbalancer.go)
 * asks Octavia for to serve one Service of type LoadBalancer, written as (feature, value) requests of a
 * provider's capability table, each with the Service field or annotation that makes CPO ask it, and
 * what CPO does instead when its `lb-provider` is ovn.
 */
import { ipVersion } from '../../domain/net.js';
import type { KubeService, ServicePort } from './services.js';

const CPO = 'loadbalancer.openstack.org/';
export const ANNOTATIONS = {
  lbMethod: `${CPO}lb-method`,
  enableHealthMonitor: `${CPO}enable-health-monitor`,
  xForwardedFor: `${CPO}x-forwarded-for`,
  proxyProtocol: `${CPO}proxy-protocol`,
  tlsContainerRef: `${CPO}default-tls-container-ref`,
  flavorId: `${CPO}flavor-id`,
  availabilityZone: `${CPO}availability-zone`,
  keepFloatingIp: `${CPO}keep-floatingip`,
  connectionLimit: `${CPO}connection-limit`,
  loadBalancerId: `${CPO}load-balancer-id`,
  internal: 'service.beta.kubernetes.io/openstack-internal-load-balancer',
  sourceRanges: 'service.beta.kubernetes.io/load-balancer-source-ranges',
} as const;
const TIMEOUT_ANNOTATIONS = ['timeout-client-data', 'timeout-member-connect', 'timeout-member-data', 'timeout-tcp-inspect'].map((t) => `${CPO}${t}`);

/** The cluster-wide CPO settings ([LoadBalancer] of its cloud config) a Service's requests depend on. */
export interface CpoSettings {
  /** `lb-method`: magnum-cluster-api writes its `octavia_lb_algorithm` label here. */
  lbMethod: string;
  /** `create-monitor`: the `octavia_lb_healthcheck` label. */
  createMonitor: boolean;
  /** `manage-security-groups`: CPO then enforces source ranges on the members' security group (OVN's way). */
  manageSecurityGroups: boolean;
}

/** One thing CPO asks Octavia for. */
export interface Ask {
  feature: string;
  value: string;
  /** The Service field or annotation that makes CPO ask it. */
  because: string;
  /** What CPO does about it when its lb-provider is ovn. */
  onOvn: string;
}

export interface ServiceRequests {
  asks: Ask[];
  /** What changes on OVN without a refusal: settings OVN takes but ignores, values CPO itself does not accept. */
  notes: string[];
}

const REFUSED_CREATE = 'CPO asks for it anyway and the create is refused (501): the Service gets no load balancer';

/** CPO reads a boolean annotation as exactly `true` or `false`; anything else falls back to the default. */
function boolAnnotation(svc: KubeService, key: string, fallback: boolean, notes: string[]): boolean {
  const value = svc.metadata.annotations?.[key];
  if (value === 'true' || value === 'false') return value === 'true';
  if (value !== undefined) notes.push(`${key}=${JSON.stringify(value)} is neither true nor false: CPO takes its default, ${fallback}.`);
  return fallback;
}

/** The Service's restricting source ranges (CPO reads the field, else the older annotation), or none. */
export function sourceRanges(svc: KubeService): string[] {
  if (svc.spec.loadBalancerSourceRanges?.length) return svc.spec.loadBalancerSourceRanges;
  const annotated = svc.metadata.annotations?.[ANNOTATIONS.sourceRanges]?.trim();
  return annotated ? annotated.split(',').map((r) => r.trim()) : [];
}

/** Where the field a source-range restriction comes from, as a person would look for it. */
const rangesField = (svc: KubeService) => (svc.spec.loadBalancerSourceRanges?.length ? 'spec.loadBalancerSourceRanges' : ANNOTATIONS.sourceRanges);

const familyName = (v: 4 | 6) => `IPv${v}`;

/**
 * The VIP's and the members' IP families: members are the nodes' addresses of the Service's first
 * family; so is the VIP, unless `spec.loadBalancerIP` is taken as the VIP address (an internal load
 * balancer, or an IPv6 one) and is of the other family.
 */
function families(svc: KubeService, internal: boolean): { vip: 4 | 6; members: 4 | 6 } {
  const members = svc.spec.ipFamilies?.[0] === 'IPv6' ? 6 : 4;
  const fixed = svc.spec.loadBalancerIP ? ipVersion(svc.spec.loadBalancerIP) : 0;
  const vip = fixed !== 0 && (internal || members === 6) ? fixed : members;
  return { vip, members };
}

export function serviceRequests(svc: KubeService, settings: CpoSettings): ServiceRequests {
  const notes: string[] = [];
  const a = svc.metadata.annotations ?? {};
  const asks: Ask[] = [];
  const ask = (feature: string, value: string, because: string, onOvn: string) => asks.push({ feature, value, because, onOvn });

  if (a[ANNOTATIONS.flavorId]) ask('flavor', 'validate', `${ANNOTATIONS.flavorId}=${a[ANNOTATIONS.flavorId]} asks for an Octavia flavor`, 'CPO leaves the flavor out: the load balancer is built without it');
  if (a[ANNOTATIONS.availabilityZone])
    ask('availability_zone', 'validate', `${ANNOTATIONS.availabilityZone}=${a[ANNOTATIONS.availabilityZone]} asks for an availability zone`, 'CPO leaves the zone out: the load balancer is built without it');

  const internal = boolAnnotation(svc, ANNOTATIONS.internal, false, notes);
  const family = families(svc, internal);
  ask(
    'member.ip_version',
    family.vip === family.members ? 'same' : 'mixed',
    family.vip === family.members
      ? `VIP and members (the nodes' ${familyName(family.members)} addresses) are of one family`
      : `spec.loadBalancerIP ${svc.spec.loadBalancerIP} (${familyName(family.vip)}) is the VIP, the members are the nodes' ${familyName(family.members)} addresses (spec.ipFamilies)`,
    REFUSED_CREATE,
  );
  if ((svc.spec.ipFamilies?.length ?? 0) > 1) notes.push(`spec.ipFamilies ${svc.spec.ipFamilies!.join(', ')}: CPO builds a load balancer of the first family only, on either provider.`);

  const ranges = sourceRanges(svc);
  if (ranges.length && !settings.manageSecurityGroups)
    ask(
      'listener.allowed_cidrs',
      'present',
      `${rangesField(svc)} ${ranges.join(', ')} becomes each listener's allowed_cidrs`,
      'CPO drops the source ranges (event LoadBalancerSourceRangesIgnored): the Service is open to every address; with manage-security-groups=true it enforces them on the nodes instead',
    );
  if (ranges.length && settings.manageSecurityGroups) notes.push(`${rangesField(svc)} ${ranges.join(', ')}: with manage-security-groups=true CPO enforces them on the members' security group, the OVN way.`);

  const xff = boolAnnotation(svc, ANNOTATIONS.xForwardedFor, false, notes);
  const tls = a[ANNOTATIONS.tlsContainerRef] ?? '';
  const proxy = { true: 'PROXY', v1: 'PROXY', v2: 'PROXYV2' }[a[ANNOTATIONS.proxyProtocol] ?? 'false'];
  if (proxy && xff) notes.push(`${ANNOTATIONS.proxyProtocol} and ${ANNOTATIONS.xForwardedFor} together: CPO refuses the Service on either provider.`);
  const monitor = boolAnnotation(svc, ANNOTATIONS.enableHealthMonitor, settings.createMonitor, notes);
  const monitorWhy = a[ANNOTATIONS.enableHealthMonitor] === 'true' ? `${ANNOTATIONS.enableHealthMonitor}=true` : `create-monitor=true (octavia_lb_healthcheck)`;
  const localHealthPort = monitor && svc.spec.externalTrafficPolicy === 'Local' && (svc.spec.healthCheckNodePort ?? 0) > 0 ? svc.spec.healthCheckNodePort! : 0;
  if (localHealthPort)
    ask(
      'member.monitor_address_or_port',
      'present',
      `externalTrafficPolicy: Local: each member's monitor port is the healthCheckNodePort ${localHealthPort}`,
      'CPO sets no monitor port: the monitor checks the NodePort itself',
    );

  for (const port of svc.spec.ports ?? []) {
    const where = portName(port);
    const protocol = port.protocol ?? 'TCP';
    const listener = tls ? 'TERMINATED_HTTPS' : xff ? 'HTTP' : protocol;
    const listenerWhy = tls
      ? `${ANNOTATIONS.tlsContainerRef} makes CPO terminate TLS at the load balancer`
      : xff
        ? `${ANNOTATIONS.xForwardedFor}=true makes CPO build an HTTP listener inserting X-Forwarded-For`
        : "the port's protocol";
    ask('listener.protocol', listener, `${listenerWhy} (${where})`, REFUSED_CREATE);
    const pool = proxy ?? (tls || xff ? 'HTTP' : listener);
    const poolWhy = proxy ? `${ANNOTATIONS.proxyProtocol}=${a[ANNOTATIONS.proxyProtocol]} makes the pool speak ${proxy}` : listenerWhy;
    ask('pool.protocol', pool, `${poolWhy} (${where})`, REFUSED_CREATE);
    const method = a[ANNOTATIONS.lbMethod];
    ask('pool.lb_algorithm', method ?? settings.lbMethod, method ? `${ANNOTATIONS.lbMethod}=${method}` : `the cluster's lb-method (octavia_lb_algorithm) ${settings.lbMethod}`, REFUSED_CREATE);
    if (svc.spec.sessionAffinity === 'ClientIP') ask('pool.session_persistence', 'SOURCE_IP', 'spec.sessionAffinity: ClientIP', REFUSED_CREATE);
    if (monitor) {
      const type = localHealthPort ? 'HTTP' : protocol === 'UDP' ? 'UDP-CONNECT' : protocol;
      const why = localHealthPort ? `${monitorWhy} and externalTrafficPolicy: Local: CPO checks GET /healthz on the healthCheckNodePort ${localHealthPort}` : `${monitorWhy}: CPO monitors ${where} by its protocol`;
      ask('healthmonitor.type', type, `${why} (${where})`, localHealthPort ? 'CPO builds a TCP monitor of the NodePort instead: a node without a ready endpoint is not told apart' : REFUSED_CREATE);
    }
  }

  if (boolAnnotation(svc, ANNOTATIONS.keepFloatingIp, false, notes)) notes.push(`${ANNOTATIONS.keepFloatingIp}=true: the floating IP is Neutron's and is kept the same way on OVN.`);
  if (a[ANNOTATIONS.connectionLimit] !== undefined) notes.push(`${ANNOTATIONS.connectionLimit}=${a[ANNOTATIONS.connectionLimit]}: OVN takes the listener's connection_limit but does not enforce it.`);
  const timeouts = TIMEOUT_ANNOTATIONS.filter((t) => a[t] !== undefined);
  if (timeouts.length) notes.push(`${timeouts.join(', ')}: CPO sends no listener timeouts to OVN, which has none.`);
  return { asks, notes };
}

const portName = (p: ServicePort) => `${p.port}/${p.protocol ?? 'TCP'}${p.name ? ` (${p.name})` : ''}`;

/**
 * What the OVN provider builds, as one table (providers/capability-table.ts), and the refusals it
 * makes of the rest with the upstream ovn-octavia-provider's words (../shared/reference/ovn.md
 * §A.2–A.3). The table drives the synchronous checks below, and lists what a conformance suite
 * must skip for this provider, with the reason: one place says what OVN can do.
 */
import { HealthMonitorType, LbAlgorithm, ListenerProtocol, PoolProtocol, SessionPersistenceType } from '../../domain/enums.js';
import type { ProviderChecks } from '../../provider-contract/provider.js';
import type { LoadBalancerRecord } from '../../db/records/load-balancer.js';
import type { MemberRecord } from '../../db/records/member.js';
import type { Operation } from '../../provider-contract/operations.js';
import { ipVersion } from '../../domain/net.js';
import { action, capabilityTable, option } from '../capability-table.js';

export const PROVIDER = 'ovn';

const ABSENT = ['absent'];
const PRESENT = 'present';

const protocol = (value: string) => option(`OVN provider does not support ${value} protocol`);
/** OVN load balancers are L4: `Load_Balancer.protocol` is tcp, udp or sctp. */
const OVN_PROTOCOLS = ['TCP', 'UDP', 'SCTP'];
const VERBS = { create: 'creating', update: 'updating', delete: 'deleting' } as const;
const crudActions = ['create', 'update', 'delete'] as const;

export const ovnCapabilities = capabilityTable(PROVIDER, [
  { feature: 'listener.protocol', supported: OVN_PROTOCOLS, values: ListenerProtocol, refusal: protocol },
  { feature: 'pool.protocol', supported: OVN_PROTOCOLS, values: PoolProtocol, refusal: protocol },
  // SOURCE_IP as upstream master (2026-08) has it: selection_fields [ip_src, ip_dst].
  { feature: 'pool.lb_algorithm', supported: ['SOURCE_IP_PORT', 'SOURCE_IP'], values: LbAlgorithm, refusal: (v) => option(`OVN provider does not support ${v} algorithm`) },
  {
    feature: 'pool.session_persistence',
    supported: ['SOURCE_IP'],
    values: SessionPersistenceType,
    refusal: (v) => option(`OVN provider does not support ${v} session persistence. Only SOURCE_IP type is supported.`),
  },
  {
    feature: 'healthmonitor.type',
    supported: ['TCP', 'UDP-CONNECT'],
    values: HealthMonitorType,
    refusal: (v) => option(`OVN provider does not support ${v} health monitor type. Supported types: UDP-CONNECT, TCP`),
  },
  { feature: 'listener.allowed_cidrs', supported: ABSENT, values: [...ABSENT, PRESENT], refusal: () => option('OVN provider does not support allowed_cidrs option') },
  {
    feature: 'member.monitor_address_or_port',
    supported: ABSENT,
    values: [...ABSENT, PRESENT],
    refusal: () => option('OVN Load Balancer does not support different member monitor address or port.'),
  },
  {
    feature: 'member.ip_version',
    supported: ['same'],
    values: ['same', 'mixed'],
    refusal: () => option('OVN provider does not support mixing IPv4/IPv6 configuration within the same Load Balancer.'),
  },
  { feature: 'member.batch_monitor_options', supported: ABSENT, values: [...ABSENT, PRESENT], refusal: () => option('OVN provider does not support monitor options') },
  { feature: 'loadbalancer.failover', supported: [], values: ['failover'], refusal: () => option('OVN provider does not support loadbalancer failover') },
  { feature: 'l7policy', supported: [], values: crudActions, refusal: (v) => action(`This provider does not support ${VERBS[v as keyof typeof VERBS]} l7policies.`) },
  { feature: 'l7rule', supported: [], values: crudActions, refusal: (v) => action(`This provider does not support ${VERBS[v as keyof typeof VERBS]} l7rules.`) },
  { feature: 'flavor', supported: [], values: ['capabilities', 'validate'], refusal: (v) => action(v === 'validate' ? 'This provider does not support validating flavors.' : 'This provider does not support getting the supported flavor metadata.') },
  {
    feature: 'availability_zone',
    supported: [],
    values: ['capabilities', 'validate'],
    refusal: (v) => action(v === 'validate' ? 'This provider does not support validating availability zones.' : 'This provider does not support getting the supported availability zone metadata.'),
  },
]);

const { requireSupported } = ovnCapabilities;

/** How the table names a list or value field: given or not (an empty list is not given). */
export const presence = (value: unknown) => (value === null || value === undefined || (Array.isArray(value) && value.length === 0) ? 'absent' : PRESENT);

/**
 * A member of another IP family than the VIP, unless the VIPs themselves are of both families
 * (a dual-stack load balancer, where each VIP gets the members of its family).
 */
function mixesFamilies(member: MemberRecord, lb: LoadBalancerRecord): boolean {
  const vips = [lb.vip_address, ...lb.additional_vips.map((v) => v.ip_address)].filter((a): a is string => a !== null);
  const families = new Set(vips.map(ipVersion));
  return families.size === 1 && !families.has(ipVersion(member.address));
}

const L7_OPERATIONS: Readonly<Partial<Record<Operation, [string, string]>>> = {
  'l7policy.create': ['l7policy', 'create'],
  'l7policy.update': ['l7policy', 'update'],
  'l7policy.delete': ['l7policy', 'delete'],
  'l7rule.create': ['l7rule', 'create'],
  'l7rule.update': ['l7rule', 'update'],
  'l7rule.delete': ['l7rule', 'delete'],
};

export const ovnChecks: ProviderChecks = {
  listener(listener) {
    requireSupported('listener.protocol', listener.protocol);
    requireSupported('listener.allowed_cidrs', presence(listener.allowed_cidrs));
  },
  pool(pool) {
    requireSupported('pool.protocol', pool.protocol);
    requireSupported('pool.lb_algorithm', pool.lb_algorithm);
    if (pool.session_persistence?.type) requireSupported('pool.session_persistence', pool.session_persistence.type);
  },
  member(member, lb) {
    requireSupported('member.monitor_address_or_port', member.monitor_address || member.monitor_port ? PRESENT : 'absent');
    requireSupported('member.ip_version', mixesFamilies(member, lb) ? 'mixed' : 'same');
  },
  memberBatch(members) {
    requireSupported('member.batch_monitor_options', members.some((m) => m.monitor_address || m.monitor_port) ? PRESENT : 'absent');
  },
  healthMonitor(hm) {
    requireSupported('healthmonitor.type', hm.type);
  },
  l7policy() {
    requireSupported('l7policy', 'create');
  },
  l7rule() {
    requireSupported('l7rule', 'create');
  },
  operation(op: Operation) {
    if (op === 'loadbalancer.failover') requireSupported('loadbalancer.failover', 'failover');
    const l7 = L7_OPERATIONS[op];
    if (l7) requireSupported(l7[0], l7[1]);
  },
};

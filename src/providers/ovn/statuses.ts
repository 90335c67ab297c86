/**
 * Operating status of an `ovn` load balancer. OVN probes members itself (../shared/reference/
 * ovn.md §A.6): northd turns each health check into Southbound `Service_Monitor` rows and
 * ovn-controller fills their `status`. Those facts become an Observation, and the derivation the
 * amphora path uses (operating-status/derivation.ts) turns it into pool, listener and load balancer statuses.
 *
 * Members, as the upstream provider reports them:
 *  - disabled: OFFLINE;
 *  - in a pool OVN does not probe (no enabled TCP or UDP-CONNECT monitor, or an SCTP pool, for
 *    which northd refuses health checks): NO_MONITOR;
 *  - probed but unreachable (no logical switch port holds its address): ERROR;
 *  - `online`: ONLINE; `offline` (or `error`): ERROR;
 *  - no status yet (new row, or no row at all): unknown, so it keeps ERROR if it was ERROR and is
 *    otherwise ONLINE, as upstream marks monitored members ONLINE at once (an unknown status
 *    never turns an ERROR member healthy: §B.6 item 11).
 * OVN serves every enabled listener, so listeners are never missing; a pool is DOWN (ERROR)
 * when every enabled member is ERROR, DEGRADED when some are.
 */
import { healthMonitorCodec } from '../../db/records/health-monitor.js';
import type { OperatingStatus } from '../../domain/enums.js';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { bigIntToIp, ipToBigInt, ipVersion } from '../../domain/net.js';
import type { Row } from '../../ovn/ovsdb/index.js';
import { deriveStatuses, type ListenerState, type Observation, type ObservedTree, type PoolObservation, type StatusChange } from '../../operating-status/derivation.js';

type Q = Kysely<Database> | Transaction<Database>;

/** A `Service_Monitor` row's `status`; empty until ovn-controller has probed it. */
export type ServiceMonitorStatus = 'online' | 'offline' | 'error' | '';

/** What is known of OVN's probes for one load balancer. */
export interface OvnHealthFacts {
  /** Pools OVN probes (see probedByOvn; pools with members suffice); members of other pools are NO_MONITOR. */
  monitoredPools: ReadonlySet<string>;
  /** Member id → its `Service_Monitor` status; a member absent here has no row (yet): unknown. */
  serviceMonitors?: ReadonlyMap<string, ServiceMonitorStatus>;
  /**
   * Members of monitored pools OVN cannot probe (no logical switch port holds their address, so
   * they have no `ip_port_mappings` entry): ERROR, as upstream.
   */
  unreachable?: ReadonlySet<string>;
}

/** Health monitor types OVN probes (the others are refused by the provider's capabilities). */
const PROBED_MONITOR_TYPES: readonly string[] = ['TCP', 'UDP-CONNECT'];
/** Pool protocols northd creates health checks for: not SCTP. */
const PROBED_POOL_PROTOCOLS: readonly string[] = ['TCP', 'UDP'];

/** Whether OVN probes the members of a pool of this protocol with this monitor (none: undefined). */
export function probedByOvn(poolProtocol: string, monitor: { type: string; admin_state_up: boolean } | undefined): boolean {
  return (
    monitor !== undefined &&
    monitor.admin_state_up &&
    PROBED_MONITOR_TYPES.includes(monitor.type) &&
    PROBED_POOL_PROTOCOLS.includes(poolProtocol)
  );
}

function memberStatus(m: ObservedTree['members'][number], facts: OvnHealthFacts): OperatingStatus {
  if (!m.admin_state_up) return 'OFFLINE';
  if (!facts.monitoredPools.has(m.pool_id)) return 'NO_MONITOR';
  if (facts.unreachable?.has(m.id)) return 'ERROR';
  switch (facts.serviceMonitors?.get(m.id)) {
    case 'online':
      return 'ONLINE';
    case 'offline':
    case 'error':
      return 'ERROR';
    default:
      return m.operating_status === 'ERROR' ? 'ERROR' : 'ONLINE';
  }
}

/**
 * Every member's operating status by OVN's facts alone (what upstream records in the Northbound
 * `neutron:member_status`), member id → status; PENDING_* members included.
 */
export function ovnMemberStatuses(tree: ObservedTree, facts: OvnHealthFacts): Record<string, string> {
  return Object.fromEntries(tree.members.map((m) => [m.id, memberStatus(m, facts)]));
}

/** OVN's probes as the observation the shared derivation takes. */
function ovnObservation(tree: ObservedTree, facts: OvnHealthFacts): Observation {
  const listeners = new Map<string, ListenerState>(tree.listeners.filter((l) => l.admin_state_up).map((l) => [l.id, 'OPEN']));
  const pools = new Map<string, PoolObservation>();
  for (const p of tree.pools) {
    const poolMembers = tree.members.filter((m) => m.pool_id === p.id);
    const members = new Map(poolMembers.map((m) => [m.id, memberStatus(m, facts)]));
    const enabled = poolMembers.filter((m) => m.admin_state_up);
    pools.set(p.id, { up: !(enabled.length > 0 && enabled.every((m) => members.get(m.id) === 'ERROR')), members });
  }
  return { listeners, pools, current: true };
}

/**
 * The operating statuses of an ovn load balancer's tree (from loadTrees) that differ from what
 * is stored, given OVN's facts; objects in PENDING_* are left to their operation. Write them with
 * writeStatusChanges. Without `serviceMonitors` (e.g. right after a Northbound sync, before
 * northd made rows), probed members keep ERROR or become ONLINE.
 */
export function ovnStatusChanges(tree: ObservedTree, facts: OvnHealthFacts): StatusChange[] {
  return deriveStatuses(tree, ovnObservation(tree, facts)).changes;
}

/** The Southbound table OVN's probes write to, and the columns Ostia reads. */
export const SERVICE_MONITOR = { table: 'Service_Monitor', columns: ['ip', 'port', 'protocol', 'logical_port', 'src_ip', 'status'] };

/** What probes are told apart by: protocol, address as normalised, port. */
function backendKey(protocol: string, address: string, port: number): string | undefined {
  const bare = address.replace(/^\[(.*)\]$/, '$1');
  const version = ipVersion(bare);
  return version ? `${protocol}/${bigIntToIp(ipToBigInt(bare), version)}/${port}` : undefined;
}

/** A `Service_Monitor` row's backend; an empty `protocol` is tcp, northd's default for a load balancer. */
export const rowKey = (row: Row): string | undefined => backendKey((row.protocol as string[])[0] ?? 'tcp', row.ip as string, row.port as number);
export const memberKey = (m: ProbedMember): string | undefined => backendKey(m.protocol, m.address, m.port);

/** When several rows probe one backend (different logical ports), the worst known verdict stands. */
const verdictRank: Record<ServiceMonitorStatus, number> = { '': 0, online: 1, offline: 2, error: 2 };

/** Backend key → the verdict of these `Service_Monitor` rows. */
export function verdictsOf(rows: Iterable<Row>): Map<string, ServiceMonitorStatus> {
  const out = new Map<string, ServiceMonitorStatus>();
  for (const row of rows) {
    const key = rowKey(row);
    if (!key) continue;
    const status = ((row.status as string[])[0] ?? '') as ServiceMonitorStatus;
    const seen = out.get(key);
    if (seen === undefined || verdictRank[status] > verdictRank[seen]) out.set(key, status);
  }
  return out;
}

/** The `Service_Monitor.protocol` of a probed pool's members (OVN probes TCP and UDP pools only). */
export const serviceMonitorProtocol = (poolProtocol: string): 'tcp' | 'udp' => (poolProtocol === 'UDP' ? 'udp' : 'tcp');

export interface ProbedMember {
  id: string;
  poolId: string;
  loadBalancerId: string;
  address: string;
  port: number;
  /** The `Service_Monitor.protocol` of its probes. */
  protocol: 'tcp' | 'udp';
}

/** Members with their pool's protocol and monitor, of ovn load balancers. */
function membersQuery(db: Q) {
  return db
    .selectFrom('member')
    .innerJoin('pool', 'pool.id', 'member.pool_id')
    .innerJoin('load_balancer', 'load_balancer.id', 'pool.load_balancer_id')
    .innerJoin('health_monitor', 'health_monitor.pool_id', 'pool.id')
    .select(['member.id', 'member.pool_id', 'member.address', 'member.protocol_port', 'pool.protocol', 'pool.load_balancer_id', 'health_monitor.type', 'health_monitor.admin_state_up'])
    .where('load_balancer.provider', '=', 'ovn');
}

async function probed(q: ReturnType<typeof membersQuery>): Promise<ProbedMember[]> {
  return (await q.execute())
    .filter((r) => probedByOvn(r.protocol, healthMonitorCodec.decode(r)))
    .map((r) => ({ id: r.id, poolId: r.pool_id, loadBalancerId: r.load_balancer_id, address: r.address, port: r.protocol_port, protocol: serviceMonitorProtocol(r.protocol) }));
}

/** The members OVN probes in these ovn load balancers, in one query. */
export function loadProbedMembers(db: Q, lbIds: readonly string[]): Promise<ProbedMember[]> {
  return lbIds.length ? probed(membersQuery(db).where('pool.load_balancer_id', 'in', [...lbIds])) : Promise.resolve([]);
}

/** The members OVN probes across every ovn load balancer, or only those on these ports, in one query. */
export function findProbedMembers(db: Q, ports?: readonly number[]): Promise<ProbedMember[]> {
  if (!ports) return probed(membersQuery(db));
  return ports.length ? probed(membersQuery(db).where('member.protocol_port', 'in', [...ports])) : Promise.resolve([]);
}

/**
 * Facts for ovnStatusChanges from a load balancer's probed members (loadProbedMembers) and what
 * is known of their `Service_Monitor` rows (undefined: no row, or not known).
 */
export function healthFacts(members: readonly ProbedMember[], statusOf: (m: ProbedMember) => ServiceMonitorStatus | undefined): OvnHealthFacts {
  const serviceMonitors = new Map<string, ServiceMonitorStatus>();
  for (const m of members) {
    const status = statusOf(m);
    if (status !== undefined) serviceMonitors.set(m.id, status);
  }
  return { monitoredPools: new Set(members.map((m) => m.poolId)), serviceMonitors };
}

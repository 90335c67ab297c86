/**
 * What an OVN load balancer is made of, read from Ostia's database into the shapes the
 * Northbound rows are built from: the tree (nb-rows), its health monitors, and where each
 * member lives (its subnet; a member without one is on the VIP subnet, as upstream assumes).
 */
import type { Kysely, Transaction } from 'kysely';
import { servedTree, servedTrees, type ServedTree } from '../../db/lb-tree.js';
import type { Database } from '../../db/schema.js';
import type { OvnLoadBalancer, OvnPool } from './nb-rows.js';
import type { ObservedTree } from '../../operating-status/derivation.js';
import { probedByOvn, serviceMonitorProtocol, type ProbedMember } from './statuses.js';

type Q = Kysely<Database> | Transaction<Database>;


export interface OvnHealthMonitor {
  id: string;
  poolId: string;
  /** Load_Balancer_Health_Check options. */
  interval: number;
  timeout: number;
  successCount: number;
  failureCount: number;
}

export interface OvnTree {
  /** Its member statuses (`memberStatus`) are left empty: they are derived, see state.ts. */
  lb: OvnLoadBalancer;
  vipSubnetId: string;
  /** The monitors OVN runs: enabled, of a probed type, on a pool of a probed protocol. */
  monitors: OvnHealthMonitor[];
  /** The same rows with their statuses, as the status derivation reads them. */
  observed: ObservedTree;
}

/** The members OVN probes, as the Southbound's `Service_Monitor` rows name their backends. */
export function probedMembers(tree: OvnTree): ProbedMember[] {
  const monitored = new Set(tree.monitors.map((m) => m.poolId));
  return tree.lb.pools
    .filter((p) => monitored.has(p.id))
    .flatMap((p) => p.members.map((m) => ({ id: m.id, poolId: p.id, loadBalancerId: tree.lb.id, address: m.address, port: m.port, protocol: serviceMonitorProtocol(p.protocol) })));
}

const statusRow = (r: ObservedTree['listeners'][number]) => ({
  id: r.id,
  admin_state_up: r.admin_state_up,
  provisioning_status: r.provisioning_status,
  operating_status: r.operating_status,
});

/** SOURCE_IP persistence without a timeout: Octavia's default of 360 s. */
const DEFAULT_PERSISTENCE_TIMEOUT = 360;

export async function loadOvnTree(db: Q, lbId: string): Promise<OvnTree> {
  return ovnTree(await servedTree(db, lbId));
}

/** The trees of those of `lbIds` that have a VIP address, in the queries of one. */
export async function loadOvnTrees(db: Q, lbIds: readonly string[]): Promise<Map<string, OvnTree>> {
  return new Map([...(await servedTrees(db, lbIds))].map(([id, served]) => [id, ovnTree(served)]));
}

function ovnTree({ lb, listeners, pools, members, monitors }: ServedTree): OvnTree {
  const vipSubnetId = lb.vip_subnet_id ?? '';
  const hmByPool = new Map(monitors.map((hm) => [hm.pool_id, hm]));
  const ovnPools: OvnPool[] = pools.map((p) => {
    const persistence = p.session_persistence;
    const hm = hmByPool.get(p.id);
    return {
      id: p.id,
      protocol: p.protocol,
      algorithm: p.lb_algorithm,
      enabled: p.admin_state_up,
      affinityTimeout: persistence?.type === 'SOURCE_IP' ? (persistence.persistence_timeout ?? DEFAULT_PERSISTENCE_TIMEOUT) : null,
      healthMonitorId: hm ? hm.id : null,
      members: members
        .filter((m) => m.pool_id === p.id)
        .map((m) => ({ id: m.id, address: m.address, port: m.protocol_port, subnetId: m.subnet_id ?? vipSubnetId, enabled: m.admin_state_up })),
    };
  });
  const probed = monitors.filter((hm) => {
    const pool = pools.find((p) => p.id === hm.pool_id)!;
    return probedByOvn(pool.protocol, hm);
  });
  return {
    vipSubnetId,
    lb: {
      id: lb.id,
      enabled: lb.admin_state_up,
      vip: lb.vip_address,
      vipPortId: lb.vip_port_id ?? '',
      additionalVips: lb.additional_vips.map((v) => ({ address: v.ip_address, portId: v.port_id })),
      listeners: [...listeners]
        .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id))
        .map((l) => ({ id: l.id, protocol: l.protocol, port: l.protocol_port, enabled: l.admin_state_up, defaultPoolId: l.default_pool_id })),
      pools: ovnPools,
      memberStatus: {},
    },
    observed: {
      lb: { ...statusRow(lb), config_version: lb.config_version },
      listeners: listeners.map(statusRow),
      pools: pools.map(statusRow),
      members: members.map((m) => ({ ...statusRow(m), pool_id: m.pool_id })),
    },
    monitors: probed.map((hm) => ({ id: hm.id, poolId: hm.pool_id, interval: hm.delay, timeout: hm.timeout, successCount: hm.max_retries, failureCount: hm.max_retries_down })),
  };
}

/**
 * Everything the Northbound database should hold for one load balancer, given the topology:
 * its `Load_Balancer` rows (nb-rows) completed with the network keys (`ls_refs`, `lr_ref`), the
 * health checks and `ip_port_mappings`; the switches and routers it is attached to; and the
 * switch ports Neutron would have made (the VIP ports, the health-check source ports).
 */
import { hostPort, nbLoadBalancerRows } from './nb-rows.js';
import type { OvnTree } from './tree.js';
import type { Named, Topology } from './topology.js';
import { ipVersion } from '../../domain/net.js';

/** Marks what Ostia wrote, so reconciliation removes only its own rows from a shared database. */
export const OWNER_KEY = 'ostia:owner';
export const OWNER = 'ostia';
/** Neutron's device owners of the ports the provider makes: a VIP's, a subnet's health-check source. */
export const VIP_PORT_OWNER = 'ovn-lb-vip';
export const HEALTH_PORT_OWNER = 'ovn-lb-hm:distributed';

export interface SubnetView {
  id: string;
  cidr: string;
  networkId: string;
}

/** Ostia's networks as OVN sees them: the subnet of an id, and the switch that is its network. */
export interface NetworkView {
  subnet(id: string): SubnetView | undefined;
  switchName(networkId: string): string | undefined;
}

/** The health-check source address Ostia reserved on a member subnet. */
export interface HealthPortAddress {
  subnetId: string;
  ip: string;
}

export interface DesiredCheck {
  vip: string;
  poolId: string;
  /** The VIP address the check belongs to (`octavia:vip`). */
  vipAddress: string;
  options: Record<string, string>;
  externalIds: Record<string, string>;
}

export interface DesiredRow {
  protocol: string | null;
  vips: Record<string, string>;
  selectionFields: string[];
  options: Record<string, string>;
  externalIds: Record<string, string>;
  ipPortMappings: Record<string, string>;
  checks: DesiredCheck[];
}

export interface DesiredPort {
  name: string;
  switch: Named;
  type: string;
  addresses: string[];
  externalIds: Record<string, string>;
}

export interface Desired {
  rows: DesiredRow[];
  switches: Named[];
  routers: Named[];
  ports: DesiredPort[];
  /** Monitored members OVN cannot probe: no switch port holds their address (upstream: ERROR). */
  unreachableMembers: string[];
}

/** `ovn-lb-hm-<subnet>`: the upstream name of a subnet's health-check source port. */
export const healthPortName = (subnetId: string) => `ovn-lb-hm-${subnetId}`;

/** A stable locally administered MAC for a port, so a rewrite produces the same row. */
function portMac(name: string): string {
  let h = 2166136261;
  for (const c of name) h = Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0;
  const bytes = [0x0a, 0x58, (h >>> 24) & 0xff, (h >>> 16) & 0xff, (h >>> 8) & 0xff, h & 0xff];
  return bytes.map((b) => b.toString(16).padStart(2, '0')).join(':');
}

const prefixOf = (cidr: string) => cidr.split('/')[1] ?? '';

function switchFor(topo: Topology, net: NetworkView, subnetId: string, what: string): { ls: Named; subnet: SubnetView } {
  const subnet = net.subnet(subnetId);
  if (!subnet) throw new Error(`${what}: subnet ${subnetId} is not one of Ostia's subnets (network.networks in the config)`);
  const name = net.switchName(subnet.networkId);
  if (!name) throw new Error(`${what}: network ${subnet.networkId} has no OVN logical switch; map it in ovn.networks of the config`);
  const ls = topo.switchNamed(name);
  if (!ls) throw new Error(`${what}: logical switch ${name} (network ${subnet.networkId}) does not exist in the Northbound database; create it or fix ovn.networks`);
  return { ls, subnet };
}

/** Member operating statuses once the unreachable members are known (`neutron:member_status`). */
export type MemberStatuses = (unreachable: ReadonlySet<string>) => Record<string, string>;

export function desiredState(tree: Omit<OvnTree, 'observed'>, topo: Topology, net: NetworkView, healthPorts: ReadonlyMap<string, HealthPortAddress>, memberStatuses?: MemberStatuses): Desired {
  const { lb } = tree;
  const version = ipVersion(lb.vip);
  const vip = switchFor(topo, net, tree.vipSubnetId, `load balancer ${lb.id} VIP`);
  const switches = new Map<string, Named>([[vip.ls.uuid, vip.ls]]);
  const lsRefs: Record<string, number> = { [vip.ls.name]: 1 + lb.additionalVips.length };
  const routers = new Map<string, Named>();
  const addRouters = (ls: Named) => {
    for (const lr of topo.routersOf(ls, version)) {
      routers.set(lr.uuid, lr);
      for (const other of topo.switchesOf(lr)) switches.set(other.uuid, other);
    }
  };
  addRouters(vip.ls);

  const monitoredPools = new Set(tree.monitors.map((m) => m.poolId));
  const ports: DesiredPort[] = [
    { address: lb.vip, portId: lb.vipPortId, subnetId: tree.vipSubnetId },
    ...lb.additionalVips.map((v) => ({ address: v.address, portId: v.portId, subnetId: tree.vipSubnetId })),
  ].map((v) => ({
    name: v.portId,
    switch: vip.ls,
    type: '',
    addresses: [],
    externalIds: {
      'neutron:port_name': `ovn-lb-vip-${lb.id}`,
      'neutron:device_id': lb.id,
      'neutron:device_owner': VIP_PORT_OWNER,
      'neutron:cidrs': `${v.address}/${prefixOf(vip.subnet.cidr)}`,
      [OWNER_KEY]: OWNER,
    },
  }));
  const mappingsByPool = new Map<string, Record<string, string>>();
  const unreachableMembers: string[] = [];
  const hmPortsNeeded = new Map<string, DesiredPort>();
  for (const pool of lb.pools) {
    const mappings: Record<string, string> = {};
    for (const m of pool.members) {
      const where = switchFor(topo, net, m.subnetId ?? tree.vipSubnetId, `member ${m.id}`);
      switches.set(where.ls.uuid, where.ls);
      lsRefs[where.ls.name] = (lsRefs[where.ls.name] ?? 0) + 1;
      addRouters(where.ls);
      if (!monitoredPools.has(pool.id) || !m.enabled) continue;
      const port = topo.memberPort(where.ls, m.address);
      const source = healthPorts.get(where.subnet.id);
      if (!port || !source) {
        unreachableMembers.push(m.id);
        continue;
      }
      const bracket = (ip: string) => (ipVersion(ip) === 6 ? `[${ip}]` : ip);
      mappings[bracket(m.address)] = `${port.name}:${bracket(source.ip)}`;
      const name = healthPortName(where.subnet.id);
      hmPortsNeeded.set(name, {
        name,
        switch: where.ls,
        type: 'localport',
        addresses: [`${portMac(name)} ${source.ip}`],
        externalIds: {
          'neutron:device_owner': HEALTH_PORT_OWNER,
          'neutron:device_id': name,
          'neutron:cidrs': `${source.ip}/${prefixOf(where.subnet.cidr)}`,
          [OWNER_KEY]: OWNER,
        },
      });
    }
    mappingsByPool.set(pool.id, mappings);
  }

  const routerNames = [...routers.values()].map((r) => r.name);
  const withStatus = memberStatuses ? { ...lb, memberStatus: memberStatuses(new Set(unreachableMembers)) } : lb;
  const rows = nbLoadBalancerRows(withStatus).map((r): DesiredRow => {
    const pools = lb.pools.filter((p) => r.protocol !== null && p.protocol.toLowerCase() === r.protocol);
    const checks: DesiredCheck[] = [];
    const ipPortMappings: Record<string, string> = {};
    for (const hm of tree.monitors) {
      const pool = pools.find((p) => p.id === hm.poolId);
      if (!pool) continue;
      Object.assign(ipPortMappings, mappingsByPool.get(pool.id));
      const listener = lb.listeners.find((l) => l.defaultPoolId === pool.id);
      for (const address of [lb.vip, ...lb.additionalVips.map((v) => v.address)]) {
        checks.push({
          vip: listener ? hostPort(address, listener.port) : '',
          poolId: pool.id,
          vipAddress: address,
          options: { interval: String(hm.interval), timeout: String(hm.timeout), success_count: String(hm.successCount), failure_count: String(hm.failureCount) },
          externalIds: { 'octavia:healthmonitor': hm.id, 'octavia:pool_id': pool.id, 'octavia:vip': address },
        });
      }
    }
    return {
      protocol: r.protocol,
      vips: r.vips,
      selectionFields: r.selectionFields,
      options: r.options,
      externalIds: {
        ...r.externalIds,
        ls_refs: JSON.stringify(lsRefs),
        ...(routerNames.length && { lr_ref: routerNames.join(',') }),
        [OWNER_KEY]: OWNER,
      },
      ipPortMappings,
      checks,
    };
  });
  return { rows, switches: [...switches.values()], routers: [...routers.values()], ports: [...ports, ...hmPortsNeeded.values()], unreachableMembers };
}

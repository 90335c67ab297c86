/**
 * A load balancer's tree → the Northbound `Load_Balancer` rows the upstream ovn-octavia-provider
 * would hold for it (../shared/reference/ovn.md §A.4–A.7): one row per L4 protocol, all named
 * by the load balancer's id; `vips` built from the enabled listeners, their pools and members;
 * `selection_fields` from the algorithm; `options:affinity_timeout` for SOURCE_IP persistence;
 * `external_ids` with the upstream keys and encodings (`listener_<id>`, `pool_<id>`, `:D` for a
 * disabled object, `member_<id>_<ip>:<port>_<subnet>`), so an operator's OVN tooling reads them.
 *
 * Pure: the provider diffs these against what the NB database holds. The network keys
 * (`ls_refs`, `lr_ref`) and health-check rows come from the network side and are merged there.
 */
import { ipVersion } from '../../domain/net.js';

export interface OvnMember {
  id: string;
  address: string;
  port: number;
  subnetId: string | null;
  enabled: boolean;
}

export interface OvnPool {
  id: string;
  protocol: string;
  algorithm: string;
  enabled: boolean;
  /** persistence_timeout of a SOURCE_IP session persistence, or null without persistence. */
  affinityTimeout: number | null;
  healthMonitorId: string | null;
  members: OvnMember[];
}

export interface OvnListener {
  id: string;
  protocol: string;
  port: number;
  enabled: boolean;
  defaultPoolId: string | null;
}

export interface OvnLoadBalancer {
  id: string;
  enabled: boolean;
  vip: string;
  vipPortId: string;
  additionalVips: Array<{ address: string; portId: string }>;
  /** In creation order. */
  listeners: OvnListener[];
  /** In creation order: a later pool's algorithm decides its row's selection fields, as upstream. */
  pools: OvnPool[];
  /** The provider's memory of member operating status (`neutron:member_status`). */
  memberStatus: Readonly<Record<string, string>>;
}

export interface NbLoadBalancerRow {
  name: string;
  /** Lower-case L4 protocol; null for the single row of a load balancer with no listener or pool yet. */
  protocol: 'tcp' | 'udp' | 'sctp' | null;
  vips: Record<string, string>;
  selectionFields: string[];
  options: Record<string, string>;
  externalIds: Record<string, string>;
}

/** Upstream's selection_fields per algorithm; a row without a pool gets the create-time default. */
const SELECTION_FIELDS: Readonly<Record<string, string[]>> = {
  SOURCE_IP_PORT: ['ip_dst', 'ip_src', 'tp_dst', 'tp_src'],
  SOURCE_IP: ['ip_src', 'ip_dst'],
};
const NO_POOL_SELECTION_FIELDS = ['ip_src', 'ip_dst', 'tp_src', 'tp_dst'];

/** Key suffix of a disabled listener or pool. */
const disabled = (enabled: boolean) => (enabled ? '' : ':D');
const pyBool = (value: boolean) => (value ? 'True' : 'False');

/** `ip:port`, IPv6 in brackets, as `vips` and the health checks write it. */
export function hostPort(address: string, port: number): string {
  return ipVersion(address) === 6 ? `[${address}]:${port}` : `${address}:${port}`;
}

function memberKey(m: OvnMember): string {
  return `member_${m.id}_${m.address}:${m.port}_${m.subnetId ?? ''}`;
}

function lowerProtocol(protocol: string): 'tcp' | 'udp' | 'sctp' {
  const p = protocol.toLowerCase();
  if (p !== 'tcp' && p !== 'udp' && p !== 'sctp') throw new Error(`OVN load balancers have no ${protocol} protocol`);
  return p;
}

/** `vips` of one protocol row: each enabled listener with members, at every VIP of the members' family. */
function vipsOf(lb: OvnLoadBalancer, listeners: readonly OvnListener[], pools: ReadonlyMap<string, OvnPool>): Record<string, string> {
  if (!lb.enabled) return {};
  const vips: Record<string, string> = {};
  const addresses = [lb.vip, ...lb.additionalVips.map((v) => v.address)];
  for (const listener of listeners) {
    const pool = listener.defaultPoolId ? pools.get(listener.defaultPoolId) : undefined;
    if (!listener.enabled || !pool?.enabled) continue;
    const members = pool.members.filter((m) => m.enabled);
    for (const vip of addresses) {
      const family = members.filter((m) => ipVersion(m.address) === ipVersion(vip));
      if (family.length) vips[hostPort(vip, listener.port)] = family.map((m) => hostPort(m.address, m.port)).join(',');
    }
  }
  return vips;
}

function externalIdsOf(lb: OvnLoadBalancer, listeners: readonly OvnListener[], pools: readonly OvnPool[]): Record<string, string> {
  const ids: Record<string, string> = { 'neutron:vip': lb.vip, 'neutron:vip_port_id': lb.vipPortId, enabled: pyBool(lb.enabled) };
  if (lb.additionalVips.length) {
    ids['neutron:additional_vips'] = lb.additionalVips.map((v) => v.address).join(',');
    ids['neutron:additional_vip_port_ids'] = lb.additionalVips.map((v) => v.portId).join(',');
  }
  for (const l of listeners) ids[`listener_${l.id}${disabled(l.enabled)}`] = `${l.port}:${l.defaultPoolId ? `pool_${l.defaultPoolId}` : ''}`;
  for (const p of pools) ids[`pool_${p.id}${disabled(p.enabled)}`] = p.members.map(memberKey).join(',');
  const statuses = Object.fromEntries(pools.flatMap((p) => p.members).filter((m) => m.id in lb.memberStatus).map((m) => [m.id, lb.memberStatus[m.id]!]));
  if (Object.keys(statuses).length) ids['neutron:member_status'] = JSON.stringify(statuses);
  const monitors = pools.map((p) => p.healthMonitorId).filter((id): id is string => id !== null);
  if (monitors.length) ids['octavia:healthmonitors'] = JSON.stringify(monitors);
  return ids;
}

/** The rows of `lb`, one per protocol its listeners and pools use (one row, protocol null, when they use none). */
export function nbLoadBalancerRows(lb: OvnLoadBalancer): NbLoadBalancerRow[] {
  const protocols = [...new Set([...lb.listeners.map((l) => lowerProtocol(l.protocol)), ...lb.pools.map((p) => lowerProtocol(p.protocol))])];
  if (!protocols.length) return [{ name: lb.id, protocol: null, vips: {}, selectionFields: NO_POOL_SELECTION_FIELDS, options: {}, externalIds: externalIdsOf(lb, [], []) }];
  const poolsById = new Map(lb.pools.map((p) => [p.id, p]));
  return protocols.map((protocol): NbLoadBalancerRow => {
    const listeners = lb.listeners.filter((l) => lowerProtocol(l.protocol) === protocol);
    const pools = lb.pools.filter((p) => lowerProtocol(p.protocol) === protocol);
    const last = pools[pools.length - 1];
    const selectionFields = last ? SELECTION_FIELDS[last.algorithm] : NO_POOL_SELECTION_FIELDS;
    if (!selectionFields) throw new Error(`OVN load balancers cannot balance with ${last!.algorithm}`);
    const affinity = pools.find((p) => p.affinityTimeout !== null)?.affinityTimeout ?? null;
    return {
      name: lb.id,
      protocol,
      vips: vipsOf(lb, listeners, poolsById),
      selectionFields,
      options: affinity === null ? {} : { affinity_timeout: String(affinity) },
      externalIds: externalIdsOf(lb, listeners, pools),
    };
  });
}

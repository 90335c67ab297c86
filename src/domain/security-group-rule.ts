/**
 * A rule of a security group, in Neutron's fields. Ostia's network service holds its security groups in
 * configuration (network.securityGroups); a load balancer's `vip_sg_ids` puts them on its VIP port, where
 * the network driver enforces their ingress rules (see network/bridge-network/security-groups.ts).
 */
import { parseCidr } from './net.js';

export const SECURITY_GROUP_DIRECTIONS = ['ingress', 'egress'] as const;
export const SECURITY_GROUP_ETHERTYPES = ['IPv4', 'IPv6'] as const;
/** Neutron's protocol names Ostia enforces; null: every protocol. */
export const SECURITY_GROUP_PROTOCOLS = ['tcp', 'udp', 'sctp', 'icmp', 'ipv6-icmp'] as const;
const PORTED = ['tcp', 'udp', 'sctp'];

export interface SecurityGroupRule {
  direction: (typeof SECURITY_GROUP_DIRECTIONS)[number];
  ethertype: (typeof SECURITY_GROUP_ETHERTYPES)[number];
  protocol: (typeof SECURITY_GROUP_PROTOCOLS)[number] | null;
  port_range_min: number | null;
  port_range_max: number | null;
  /** Where traffic comes from (ingress) or goes to (egress); null: anywhere of the ethertype. */
  remote_ip_prefix: string | null;
}

/** What is wrong with the rule, as Neutron would refuse it, or null. */
export function securityGroupRuleProblem(rule: SecurityGroupRule): string | null {
  const ported = rule.protocol !== null && PORTED.includes(rule.protocol);
  const { port_range_min: min, port_range_max: max } = rule;
  if ((min === null) !== (max === null)) return 'port_range_min and port_range_max go together: set both (the same number for one port) or neither';
  if (min !== null && !ported) return `port ranges apply to tcp, udp and sctp only (ICMP types and codes are not matched), not to ${rule.protocol ?? 'every protocol'}`;
  if (min !== null && max !== null && min > max) return `port_range_min ${min} is above port_range_max ${max}`;
  if (rule.protocol === 'ipv6-icmp' && rule.ethertype !== 'IPv6') return 'ipv6-icmp needs ethertype IPv6';
  if (rule.remote_ip_prefix !== null) {
    const cidr = parseCidr(rule.remote_ip_prefix);
    if (!cidr) return `remote_ip_prefix '${rule.remote_ip_prefix}' is not a CIDR`;
    if (`IPv${cidr.version}` !== rule.ethertype) return `remote_ip_prefix '${rule.remote_ip_prefix}' is not of ethertype ${rule.ethertype}`;
  }
  return null;
}

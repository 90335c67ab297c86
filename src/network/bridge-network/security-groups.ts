/**
 * Security groups and port security of the bridge network driver's amphorae, as nftables rules.
 *
 * This kernel's bridge family has no connection tracking (no nf_conntrack_bridge, no br_netfilter),
 * so the two halves of what Neutron does outside an instance live in two places:
 *
 * - the security group, stateful, is table `inet ostia_sg` in the amphora's own network namespace,
 *   written by the controller. Input is dropped unless it is a reply, the controller reaching the
 *   agent on the management port, a client reaching a listener from its allowed CIDRs, or VRRP from
 *   a peer; on the management port the amphora may only send heartbeats and replies, and it may not
 *   open connections to the controller's addresses on tenant networks. HAProxy, which handles tenant
 *   traffic, holds no capability and cannot change it; the agent and keepalived hold CAP_NET_ADMIN of
 *   the namespace and could, so against them only port security holds;
 * - port security, stateless, is table `bridge ostia_port_security` in the fabric namespace, out of
 *   every amphora's reach (../../linux-net/port-security.ts).
 *
 * Every value written into a script is parsed first (../../linux-net/nft-values.ts).
 */
import { bigIntToIp, parseCidr, type Cidr } from '../../domain/net.js';
import { nftApply } from '../../linux-net/nft.js';
import { address, anonymousSet, cidr, ifaceName, port, quote, refusal } from '../../linux-net/nft-values.js';
import { SECURITY_GROUP_PROTOCOLS, type SecurityGroupRule } from '../../domain/security-group-rule.js';

export interface AmphoraFirewall {
  management: { iface: string; controller: string; agentPort: number; heartbeatTargets: { address: string; port: number }[] };
  /** `groupRules`: the ingress rules of the load balancer's own security groups (vip_sg_ids), beside the listeners'. */
  vip: { iface: string; listeners: VipListener[]; groupRules?: SecurityGroupRule[]; vrrpPeers: string[] } | null;
  /** Ports on member networks: the amphora opens connections there and accepts only replies. */
  members: { iface: string }[];
  /** The controller's own addresses on tenant networks: the amphora may answer them, never open a connection to them. */
  controlPlane: string[];
}

export interface VipListener {
  protocol: 'tcp' | 'udp' | 'sctp';
  port: number;
  /** Client sources, IPv4 and IPv6; empty: any. */
  allowedCidrs: string[];
}

export const FIREWALL_TABLE = 'ostia_sg';
/** VRRP's IP protocol number, for IPv4 and IPv6 alike. */
const VRRP = 112;
/** What IPv6 needs of ICMPv6 before any connection: neighbour and router discovery, multicast listener discovery. */
const ND_IN = 'nd-neighbor-solicit, nd-neighbor-advert, nd-router-advert, mld-listener-query';
const ND_OUT = 'nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit, mld-listener-report, mld2-listener-report';
const ANY = { 4: '0.0.0.0/0', 6: '::/0' } as const;

/**
 * The amphora's security group as one nft script: it creates the table if missing, deletes it and
 * writes it anew, in one transaction, so no packet ever meets a half-written table, and connections
 * the new rules still allow keep flowing (their conntrack entries outlive the table).
 */
export function renderAmphoraFirewall(fw: AmphoraFirewall): string {
  const management = fw.management;
  const mgmt = ifaceName(management.iface, 'management.iface');
  const controller = address(management.controller, 'management.controller');
  const agentPort = port(management.agentPort, 'management.agentPort');
  const heartbeats = management.heartbeatTargets.map((target, i) => ({
    address: address(target.address, `management.heartbeatTargets[${i}].address`),
    port: port(target.port, `management.heartbeatTargets[${i}].port`),
  }));
  const vipIface = fw.vip && ifaceName(fw.vip.iface, 'vip.iface');
  const listeners = (fw.vip?.listeners ?? []).map((listener, i) => ({
    protocol: protocol(listener.protocol, `vip.listeners[${i}].protocol`),
    port: port(listener.port, `vip.listeners[${i}].port`),
    cidrs: listener.allowedCidrs.length === 0 ? [parseCidr(ANY[4])!, parseCidr(ANY[6])!] : listener.allowedCidrs.map((c, j) => cidr(c, `vip.listeners[${i}].allowedCidrs[${j}]`)),
  }));
  const vrrpPeers = (fw.vip?.vrrpPeers ?? []).map((peer, i) => address(peer, `vip.vrrpPeers[${i}]`));
  const groupRules = (fw.vip?.groupRules ?? []).map((rule, i) => groupRuleMatch(rule, `vip.groupRules[${i}]`));
  const members = fw.members.map((member, i) => ifaceName(member.iface, `members[${i}].iface`));
  const controlPlane = fw.controlPlane.map((a, i) => address(a, `controlPlane[${i}]`));

  const sets: string[] = [];
  const input = ['iif lo accept', `iifname ${anonymousSet([mgmt, ...(vipIface ? [vipIface] : []), ...members].map(quote))} icmpv6 type { ${ND_IN} } accept`];
  input.push('ct state established,related accept', 'ct state invalid drop');
  input.push(`iifname ${quote(mgmt)} ${ipMatch(controller.version)} saddr ${controller.text} tcp dport ${agentPort} accept`);
  const output = ['oif lo accept', 'ct state established,related accept', `oifname ${quote(mgmt)} icmpv6 type { ${ND_OUT} } accept`];
  for (const version of [4, 6] as const) {
    const family = ipMatch(version);
    const targets = heartbeats.filter((h) => h.address.version === version).map((h) => `${h.address.text} . ${h.port}`);
    if (targets.length > 0) {
      sets.push(namedSet(`heartbeats_v${version}`, `${addrType(version)} . inet_service`, targets));
      output.push(`oifname ${quote(mgmt)} ${family} daddr . udp dport @heartbeats_v${version} accept`);
    }
    if (!vipIface) continue;
    const allowed = listeners.flatMap((l) => outermost(l.cidrs.filter((c) => c.version === version)).map((c) => `${l.protocol} . ${l.port} . ${cidrText(c)}`));
    if (allowed.length > 0) {
      sets.push(namedSet(`listeners_v${version}`, `inet_proto . inet_service . ${addrType(version)}`, allowed, 'interval'));
      input.push(`iifname ${quote(vipIface)} meta l4proto . th dport . ${family} saddr @listeners_v${version} accept`);
    }
    const peers = vrrpPeers.filter((p) => p.version === version).map((p) => p.text);
    if (peers.length > 0) input.push(`iifname ${quote(vipIface)} ${family} saddr ${anonymousSet(peers)} meta l4proto ${VRRP} accept`);
  }
  // One rule each, not a set: a user's rules may overlap, which an interval set refuses.
  if (vipIface) for (const match of groupRules) if (match !== null) input.push(`iifname ${quote(vipIface)} ${match} accept`);
  output.push(`oifname ${quote(mgmt)} drop`);
  for (const version of [4, 6] as const) {
    const targets = controlPlane.filter((a) => a.version === version).map((a) => a.text);
    if (targets.length > 0) output.push(`${ipMatch(version)} daddr ${anonymousSet(targets)} drop`);
  }
  return [
    `table inet ${FIREWALL_TABLE} {}`,
    `delete table inet ${FIREWALL_TABLE}`,
    `table inet ${FIREWALL_TABLE} {`,
    ...sets,
    chain('input', 'type filter hook input priority filter; policy drop;', input),
    chain('output', 'type filter hook output priority filter; policy accept;', output),
    '}',
    '',
  ].join('\n');
}

/** Writes the amphora's security group into its network namespace (as root), replacing the previous one atomically. */
export function applyAmphoraFirewall(netns: string, fw: AmphoraFirewall): Promise<void> {
  return nftApply(netns, renderAmphoraFirewall(fw));
}

/**
 * The match of a security group rule, as Neutron enforces it on a port; null for an egress rule (the
 * amphora's own group lets every connection out, as Octavia's lb-<id> group does beside the user's).
 */
function groupRuleMatch(rule: SecurityGroupRule, field: string): string | null {
  if (rule.direction !== 'ingress' && rule.direction !== 'egress') throw refusal(`${field}.direction`, rule.direction, 'ingress or egress');
  if (rule.ethertype !== 'IPv4' && rule.ethertype !== 'IPv6') throw refusal(`${field}.ethertype`, rule.ethertype, 'IPv4 or IPv6');
  if (rule.protocol !== null && !SECURITY_GROUP_PROTOCOLS.includes(rule.protocol)) throw refusal(`${field}.protocol`, rule.protocol, SECURITY_GROUP_PROTOCOLS.join(', '));
  if (rule.direction === 'egress') return null;
  const version = rule.ethertype === 'IPv4' ? 4 : 6;
  const parts: string[] = [];
  if (rule.remote_ip_prefix === null) parts.push(`meta nfproto ipv${version}`);
  else {
    const source = cidr(rule.remote_ip_prefix, `${field}.remote_ip_prefix`);
    if (source.version !== version) throw refusal(`${field}.remote_ip_prefix`, rule.remote_ip_prefix, `an IPv${version} CIDR, as the ethertype says`);
    parts.push(`${ipMatch(version)} saddr ${cidrText(source)}`);
  }
  // Neutron's icmp on an IPv6 rule is ICMPv6.
  if (rule.protocol === 'icmp' || rule.protocol === 'ipv6-icmp') parts.push(`meta l4proto ${version === 4 ? 'icmp' : 'ipv6-icmp'}`);
  else if (rule.protocol !== null) {
    parts.push(`meta l4proto ${rule.protocol}`);
    if (rule.port_range_min !== null || rule.port_range_max !== null) {
      const min = port(rule.port_range_min, `${field}.port_range_min`);
      const max = port(rule.port_range_max, `${field}.port_range_max`);
      if (min > max) throw refusal(`${field}.port_range_max`, max, `at least port_range_min ${min}`);
      parts.push(`th dport ${min === max ? min : `${min}-${max}`}`);
    }
  }
  return parts.join(' ');
}

function protocol(value: unknown, field: string): VipListener['protocol'] {
  if (value !== 'tcp' && value !== 'udp' && value !== 'sctp') throw refusal(field, value, 'tcp, udp or sctp');
  return value;
}

/** Network and prefix only: the text nft reads, host bits cleared. */
const cidrText = (c: Cidr) => `${bigIntToIp(c.network, c.version)}/${c.prefix}`;

/** The CIDRs none of the others contains, once each: nft refuses overlapping elements of an interval set. */
function outermost(cidrs: Cidr[]): Cidr[] {
  const contains = (outer: Cidr, inner: Cidr) => outer.prefix <= inner.prefix && inner.network >> BigInt(bits(outer) - outer.prefix) === outer.network >> BigInt(bits(outer) - outer.prefix);
  const unique = [...new Map(cidrs.map((c) => [cidrText(c), c])).values()];
  return unique.filter((c) => !unique.some((other) => other !== c && contains(other, c)));
}

const bits = (c: Cidr) => (c.version === 4 ? 32 : 128);
const ipMatch = (version: 4 | 6) => (version === 4 ? 'ip' : 'ip6');
const addrType = (version: 4 | 6) => (version === 4 ? 'ipv4_addr' : 'ipv6_addr');
function namedSet(name: string, type: string, elements: string[], flags?: string): string {
  const lines = [`\tset ${name} {`, `\t\ttype ${type}`, ...(flags ? [`\t\tflags ${flags}`] : []), `\t\telements = { ${[...new Set(elements)].join(', ')} }`, '\t}'];
  return lines.join('\n');
}

function chain(name: string, hook: string, rules: string[]): string {
  return [`\tchain ${name} {`, `\t\t${hook}`, ...rules.map((rule) => `\t\t${rule}`), '\t}'].join('\n');
}

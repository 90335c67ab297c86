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
 *   every amphora's reach: frames from an amphora's bridge port must carry its MAC and, for ARP, IPv4
 *   and IPv6 (other than link-local and duplicate address detection), one of its allowed addresses.
 *
 * Every value written into a script is parsed first and written back in canonical form, so a name or
 * an address a tenant chose cannot add a rule; anything else is refused with the field it came in.
 */
import { bigIntToIp, ipToBigInt, ipVersion, parseCidr, type Cidr } from '../../domain/net.js';
import { nftApply } from '../../linux-net/nft.js';

export interface AmphoraFirewall {
  management: { iface: string; controller: string; agentPort: number; heartbeatTargets: { address: string; port: number }[] };
  vip: { iface: string; listeners: VipListener[]; vrrpPeers: string[] } | null;
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

/** What may leave a bridge port: frames from its MAC, from one of its addresses (an allowed address pair, the VIP, included). */
export interface PortAllowance {
  mac: string;
  addresses: string[];
}

export const FIREWALL_TABLE = 'ostia_sg';
export const PORT_SECURITY_TABLE = 'ostia_port_security';
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
 * Port security of bridge port `port` as one nft script: the fabric's table, its base chain sending
 * each port's frames to that port's chain (a verdict map keyed by port name), and the port's chain
 * written anew. Other ports' chains are not touched; applying it again replaces the port's rules.
 */
export function renderPortSecurity(port: string, allowed: PortAllowance): string {
  const name = ifaceName(port, 'port');
  const mac = macAddress(allowed.mac, 'allowed.mac');
  const addresses = allowed.addresses.map((a, i) => address(a, `allowed.addresses[${i}]`));
  const v4 = addresses.filter((a) => a.version === 4).map((a) => a.text);
  const v6 = addresses.filter((a) => a.version === 6).map((a) => a.text);
  const rules = [`ether saddr != ${mac} drop`];
  if (v4.length > 0) rules.push(`arp saddr ether ${mac} arp saddr ip ${anonymousSet(v4)} accept`, `ip saddr ${anonymousSet(v4)} accept`);
  // Link-local sources carry neighbour discovery; the unspecified one, duplicate address detection and the listener reports sent meanwhile.
  rules.push('ip6 saddr fe80::/10 accept', 'ip6 saddr :: icmpv6 type { nd-neighbor-solicit, mld-listener-report, mld2-listener-report } accept');
  if (v6.length > 0) rules.push(`ip6 saddr ${anonymousSet(v6)} accept`);
  rules.push('drop');
  const chainName = portChain(name);
  return [
    ...portSecurityBase(),
    `add chain bridge ${PORT_SECURITY_TABLE} ${chainName}`,
    `flush chain bridge ${PORT_SECURITY_TABLE} ${chainName}`,
    ...rules.map((rule) => `add rule bridge ${PORT_SECURITY_TABLE} ${chainName} ${rule}`),
    `add element bridge ${PORT_SECURITY_TABLE} ports { ${quote(name)} : jump ${chainName} }`,
    '',
  ].join('\n');
}

/**
 * Removal of `port`'s port security as one nft script. nft 1.0.6 has no `destroy` (delete if present),
 * so the script first adds what it deletes: removing a port that has none succeeds too.
 */
export function renderPortSecurityRemoval(port: string): string {
  const name = ifaceName(port, 'port');
  const chainName = portChain(name);
  return [
    ...portSecurityBase(),
    `add chain bridge ${PORT_SECURITY_TABLE} ${chainName}`,
    `add element bridge ${PORT_SECURITY_TABLE} ports { ${quote(name)} : jump ${chainName} }`,
    `delete element bridge ${PORT_SECURITY_TABLE} ports { ${quote(name)} }`,
    `delete chain bridge ${PORT_SECURITY_TABLE} ${chainName}`,
    '',
  ].join('\n');
}

/** Port security for bridge port `port` of the fabric namespace `fabric`: frames from it must come from `allowed`. */
export function addPortSecurity(fabric: string, port: string, allowed: PortAllowance): Promise<void> {
  return nftApply(fabric, renderPortSecurity(port, allowed));
}

/** Lifts port security from `port` (gone or never added: nothing to do), leaving every other port's. */
export function removePortSecurity(fabric: string, port: string): Promise<void> {
  return nftApply(fabric, renderPortSecurityRemoval(port));
}

/** The table, map and base chain, created when missing; the base chain's one rule is rewritten so it never doubles. */
function portSecurityBase(): string[] {
  const table = `bridge ${PORT_SECURITY_TABLE}`;
  return [
    `add table ${table}`,
    `add map ${table} ports { type ifname : verdict; }`,
    `add chain ${table} prerouting { type filter hook prerouting priority filter; policy accept; }`,
    `flush chain ${table} prerouting`,
    `add rule ${table} prerouting iifname vmap @ports`,
  ];
}

/** The validated port name is a valid nft identifier once it starts with a letter. */
const portChain = (port: string) => `p_${port}`;

interface Address {
  version: 4 | 6;
  text: string;
}

const IFACE_RE = /^[A-Za-z0-9_.-]{1,15}$/;
const MAC_RE = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i;

function ifaceName(value: unknown, field: string): string {
  if (typeof value !== 'string' || !IFACE_RE.test(value)) throw refusal(field, value, 'an interface name of 1 to 15 letters, digits, _, . or -');
  return value;
}

function address(value: unknown, field: string): Address {
  const version = typeof value === 'string' ? ipVersion(value) : 0;
  if (version === 0) throw refusal(field, value, 'an IPv4 or IPv6 address');
  return { version, text: bigIntToIp(ipToBigInt(value as string), version) };
}

function cidr(value: unknown, field: string): Cidr {
  const parsed = typeof value === 'string' ? parseCidr(value) : null;
  if (!parsed) throw refusal(field, value, 'an IPv4 or IPv6 CIDR such as 192.0.2.0/24');
  return parsed;
}

function port(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535) throw refusal(field, value, 'a port number from 1 to 65535');
  return value;
}

function protocol(value: unknown, field: string): VipListener['protocol'] {
  if (value !== 'tcp' && value !== 'udp' && value !== 'sctp') throw refusal(field, value, 'tcp, udp or sctp');
  return value;
}

function macAddress(value: unknown, field: string): string {
  if (typeof value !== 'string' || !MAC_RE.test(value)) throw refusal(field, value, 'a MAC address such as 02:00:5e:10:00:01');
  return value.toLowerCase();
}

function refusal(field: string, value: unknown, expected: string): Error {
  return new Error(`nftables rules not written: ${field} must be ${expected}, got ${JSON.stringify(value)}`);
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
/** Interface names passed IFACE_RE, so quoting cannot be escaped from. */
const quote = (name: string) => `"${name}"`;
const anonymousSet = (elements: string[]) => `{ ${[...new Set(elements)].join(', ')} }`;

function namedSet(name: string, type: string, elements: string[], flags?: string): string {
  const lines = [`\tset ${name} {`, `\t\ttype ${type}`, ...(flags ? [`\t\tflags ${flags}`] : []), `\t\telements = { ${[...new Set(elements)].join(', ')} }`, '\t}'];
  return lines.join('\n');
}

function chain(name: string, hook: string, rules: string[]): string {
  return [`\tchain ${name} {`, `\t\t${hook}`, ...rules.map((rule) => `\t\t${rule}`), '\t}'].join('\n');
}

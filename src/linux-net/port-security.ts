/**
 * Port security on Linux bridge ports, as Neutron's outside an instance: table `bridge ostia_port_security`
 * of the namespace holding the bridge, out of reach of whatever is plugged into the port. Frames from a port
 * must carry its MAC and, for ARP, IPv4 and IPv6 (other than link-local and duplicate address detection),
 * one of its allowed addresses. Stateless: this kernel's bridge family has no connection tracking.
 */
import { nftApply } from './nft.js';
import { address, anonymousSet, ifaceName, macAddress, quote } from './nft-values.js';

export const PORT_SECURITY_TABLE = 'ostia_port_security';

/** What may leave a bridge port: frames from its MAC, from one of its addresses (an allowed address pair, the VIP, included). */
export interface PortAllowance {
  mac: string;
  addresses: string[];
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


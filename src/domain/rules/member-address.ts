/**
 * Which addresses a member (its `address` or `monitor_address`) may point a load balancer at.
 * A member is a destination the data plane connects to on the tenant's behalf, so an address
 * of the control plane would let a tenant reach services it must never reach: the amphora
 * agents on the management network, the API and health manager, anything bound to loopback.
 * Pure: the configured values come in as a MemberAddressPolicy.
 */
import { apiError } from '../errors.js';
import { bigIntToIp, cidrContains, ipToBigInt, ipVersion, parseCidr, parseHostPort, type Cidr } from '../net.js';

export interface MemberAddressPolicy {
  /** Never members, whatever else holds (`[networking] reserved_ips`, e.g. the metadata service). */
  readonly reserved: readonly string[];
  /** The configured subnets: loopback addresses inside them are the lab's member servers. */
  readonly memberSubnets: readonly Cidr[];
  readonly managementNetwork: Cidr | null;
  /** The specific addresses the API and the health manager listen on. */
  readonly controllerAddresses: readonly string[];
  /** Labs only: members may point at the control plane (only `reserved` is refused). */
  readonly allowControlPlane: boolean;
}

export type MemberAddressField = 'address' | 'monitor_address';

/** The parts of the configuration the policy reads (structural, so the domain needs no config import). */
type PolicyConfig = {
  network: {
    driver: string;
    networks: ReadonlyArray<{ subnets: ReadonlyArray<{ cidr: string; gateway_ip: string | null }> }>;
    reservedMemberAddresses: readonly string[];
    allowControlPlaneMembers: boolean;
  };
  amphora: { managementNetwork: { cidr: string }; healthListen: string };
  api: { host: string };
};

export function memberAddressPolicy(config: PolicyConfig): MemberAddressPolicy {
  // Under network.driver bridge the subnets' gateways are this machine's own legs into the networks.
  const legs = config.network.driver === 'bridge' ? config.network.networks.flatMap((n) => n.subnets.flatMap((s) => (s.gateway_ip ? [s.gateway_ip] : []))) : [];
  const listenHosts = [config.api.host, parseHostPort(config.amphora.healthListen, 'amphora.healthListen').host, ...legs];
  return {
    reserved: config.network.reservedMemberAddresses.map(canonical),
    memberSubnets: config.network.networks.flatMap((n) => n.subnets.map((s) => parseCidr(s.cidr))).filter((c): c is Cidr => c !== null),
    managementNetwork: parseCidr(config.amphora.managementNetwork.cidr),
    // A wildcard host is every address of this machine; its loopback ones fall to the loopback rule.
    controllerAddresses: listenHosts.filter((h) => ipVersion(h) !== 0 && !isUnspecified(canonical(h))).map(canonical),
    allowControlPlane: config.network.allowControlPlaneMembers,
  };
}

/**
 * Refuses `address` as a member's `field` with a 400 that says what was refused and why; the
 * message names only the address the caller sent, never the control plane's ranges.
 */
export function assertMemberAddressAllowed(address: string, field: MemberAddressField, policy: MemberAddressPolicy): void {
  const ip = canonical(address);
  if (policy.reserved.includes(ip)) throw apiError('INVALID_OPTION', address, `member ${field}`);
  if (policy.allowControlPlane) return;
  const why = controlPlaneReason(ip, policy);
  if (why) throw apiError('BAD_REQUEST', `Member ${field} ${address} is not allowed: ${why}. Use the address of a server on a member subnet.`);
}

function controlPlaneReason(ip: string, policy: MemberAddressPolicy): string | null {
  if (policy.controllerAddresses.includes(ip)) return 'the load balancing service itself listens on it';
  if (policy.managementNetwork && cidrContains(policy.managementNetwork, ip)) return "it is on the load balancing service's management network";
  if (isUnspecified(ip)) return 'an unspecified address reaches the load balancing host itself';
  if (isLoopback(ip) && !policy.memberSubnets.some((s) => cidrContains(s, ip)))
    return 'it is a loopback address of the load balancing host outside every member subnet';
  return null;
}

const LOOPBACK_V4 = parseCidr('127.0.0.0/8')!;
const V4_MAPPED = parseCidr('::ffff:0:0/96')!;

/** One spelling per address: IPv4-mapped IPv6 (`::ffff:127.0.0.1`) connects to the IPv4 address. */
function canonical(address: string): string {
  const v = ipVersion(address);
  if (v === 0) return address;
  const n = ipToBigInt(address);
  if (v === 6 && cidrContains(V4_MAPPED, address)) return bigIntToIp(n & 0xffffffffn, 4);
  return bigIntToIp(n, v);
}

function isLoopback(ip: string): boolean {
  return cidrContains(LOOPBACK_V4, ip) || ip === '::1';
}

/** connect() to 0.0.0.0 or :: reaches this host. */
function isUnspecified(ip: string): boolean {
  return ip === '0.0.0.0' || ip === '::';
}

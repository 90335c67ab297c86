/** Address grammar shared by validation, the network catalog and the renderers. */
import { isIP } from 'node:net';

const UUID_RE = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

export function isUuid(s: string): boolean {
  return UUID_RE.test(s) && (s.length === 36 || s.length === 32);
}

/** Octavia accepts the 32-hex form and stores dashed lowercase. */
export function normaliseUuid(s: string): string {
  const h = s.replace(/-/g, '').toLowerCase();
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export function isIpAddress(s: string): boolean {
  return ipVersion(s) !== 0;
}

/**
 * 4, 6, or 0 for anything else, an IPv6 address with a scope id (`fe80::1%eth0`) included: Node's
 * isIP accepts one, but it names an interface of one host, and HAProxy refuses it.
 */
export function ipVersion(s: string): 4 | 6 | 0 {
  return s.includes('%') ? 0 : (isIP(s) as 4 | 6 | 0);
}

/** An address as a bigint, for range arithmetic over both families. */
export function ipToBigInt(ip: string): bigint {
  if (isIP(ip) === 4) return ip.split('.').reduce((acc, o) => (acc << 8n) + BigInt(Number(o)), 0n);
  const [head, tail] = ip.includes('::') ? ip.split('::') : [ip, undefined];
  const left = head ? head.split(':') : [];
  const right = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const expand = (parts: string[]) => parts.flatMap((p) => (p.includes('.') ? v4AsHextets(p) : [p]));
  const l = expand(left);
  const r = expand(right);
  const groups = tail === undefined ? l : [...l, ...Array(8 - l.length - r.length).fill('0'), ...r];
  return groups.reduce((acc, g) => (acc << 16n) + BigInt(parseInt(g || '0', 16)), 0n);
}

function v4AsHextets(v4: string): string[] {
  const n = ipToBigInt(v4);
  return [((n >> 16n) & 0xffffn).toString(16), (n & 0xffffn).toString(16)];
}

export function bigIntToIp(n: bigint, version: 4 | 6): string {
  if (version === 4) return [24n, 16n, 8n, 0n].map((s) => Number((n >> s) & 0xffn)).join('.');
  const groups: string[] = [];
  for (let i = 7; i >= 0; i--) groups.push(((n >> BigInt(i * 16)) & 0xffffn).toString(16));
  // Compress the longest run of zero groups, as RFC 5952 asks.
  let best = -1, bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== '0') { i++; continue; }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > bestLen && j - i > 1) { best = i; bestLen = j - i; }
    i = j;
  }
  if (best < 0) return groups.join(':');
  return `${groups.slice(0, best).join(':')}::${groups.slice(best + bestLen).join(':')}`;
}

export interface Cidr {
  readonly version: 4 | 6;
  readonly network: bigint;
  readonly prefix: number;
}

export function parseCidr(s: string): Cidr | null {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(s);
  if (!m) return null;
  const version = ipVersion(m[1]!);
  if (version === 0) return null;
  const prefix = Number(m[2]);
  const bits = version === 4 ? 32 : 128;
  if (prefix > bits) return null;
  const mask = ((1n << BigInt(bits)) - 1n) ^ ((1n << BigInt(bits - prefix)) - 1n);
  return { version, network: ipToBigInt(m[1]!) & mask, prefix };
}

/** `10.0.0.5/24` → `10.0.0.0/24`: Octavia stores CIDRs with host bits cleared. */
export function normaliseCidr(s: string): string {
  const c = parseCidr(s);
  if (!c) return s;
  return `${bigIntToIp(c.network, c.version)}/${c.prefix}`;
}

export function cidrContains(cidr: Cidr, ip: string): boolean {
  const v = ipVersion(ip);
  if (v !== cidr.version) return false;
  const bits = v === 4 ? 32 : 128;
  return ipToBigInt(ip) >> BigInt(bits - cidr.prefix) === cidr.network >> BigInt(bits - cidr.prefix);
}

/** `host:port` with IPv6 hosts in brackets; `what` names the setting in the error. */
export function parseHostPort(value: string, what: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new Error(`${what} must be host:port, got '${value}'`);
  return { host: m[1] ?? m[2]!, port };
}

/**
 * Addresses of `cidr` no port may hold, as Neutron's check_subnet_ip has it: an IPv4 subnet's
 * network and broadcast address (none in a /31 or /32, RFC 3021), an IPv6 subnet's
 * subnet-router anycast address (the all-zero host part, RFC 4291 2.6.1).
 */
export function reservedSubnetAddress(cidr: Cidr, ip: string): 'network' | 'broadcast' | 'subnet-router anycast' | null {
  if (!cidrContains(cidr, ip)) return null;
  const bits = cidr.version === 4 ? 32 : 128;
  const n = ipToBigInt(ip);
  if (cidr.version === 6) return n === cidr.network ? 'subnet-router anycast' : null;
  if (cidr.prefix >= 31) return null;
  if (n === cidr.network) return 'network';
  return n === cidr.network + (1n << BigInt(bits - cidr.prefix)) - 1n ? 'broadcast' : null;
}

/**
 * Values written into nft scripts, each parsed first and written back in canonical form, so that a name or
 * an address a tenant chose can never add a rule; anything else is refused with the field it came in.
 */
import { bigIntToIp, ipToBigInt, ipVersion, parseCidr, type Cidr } from '../domain/net.js';

export interface Address {
  version: 4 | 6;
  text: string;
}

const IFACE_RE = /^[A-Za-z0-9_.-]{1,15}$/;
const MAC_RE = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i;

export function ifaceName(value: unknown, field: string): string {
  if (typeof value !== 'string' || !IFACE_RE.test(value)) throw refusal(field, value, 'an interface name of 1 to 15 letters, digits, _, . or -');
  return value;
}

export function address(value: unknown, field: string): Address {
  const version = typeof value === 'string' ? ipVersion(value) : 0;
  if (version === 0) throw refusal(field, value, 'an IPv4 or IPv6 address');
  return { version, text: bigIntToIp(ipToBigInt(value as string), version) };
}

export function cidr(value: unknown, field: string): Cidr {
  const parsed = typeof value === 'string' ? parseCidr(value) : null;
  if (!parsed) throw refusal(field, value, 'an IPv4 or IPv6 CIDR such as 192.0.2.0/24');
  return parsed;
}

export function port(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535) throw refusal(field, value, 'a port number from 1 to 65535');
  return value;
}

export function macAddress(value: unknown, field: string): string {
  if (typeof value !== 'string' || !MAC_RE.test(value)) throw refusal(field, value, 'a MAC address such as 02:00:5e:10:00:01');
  return value.toLowerCase();
}

export function refusal(field: string, value: unknown, expected: string): Error {
  return new Error(`nftables rules not written: ${field} must be ${expected}, got ${JSON.stringify(value)}`);
}

/** Interface names passed IFACE_RE, so quoting cannot be escaped from. */
export const quote = (name: string) => `"${name}"`;
export const anonymousSet = (elements: string[]) => `{ ${[...new Set(elements)].join(', ')} }`;


/**
 * Datagrams the kernel dropped at our heartbeat socket because its receive buffer was full:
 * heartbeats lost before we could judge them, which no counter of ours sees otherwise. Linux
 * reports them per socket in the last column of /proc/net/udp{,6}; elsewhere they are unknown.
 */
import { readFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { endianness } from 'node:os';

/** The `local_address` column of a socket bound to `address:port`, as the kernel prints it. */
export function procLocalAddress(address: string, port: number): string {
  const bytes = isIPv6(address) ? ipv6Bytes(address) : Buffer.from(address.split('.').map(Number));
  // The kernel prints each 32-bit word of the address in host byte order.
  const words: string[] = [];
  for (let i = 0; i < bytes.length; i += 4) {
    const word = bytes.subarray(i, i + 4);
    words.push(Buffer.from(endianness() === 'LE' ? [...word].reverse() : word).toString('hex'));
  }
  return `${words.join('')}:${port.toString(16).padStart(4, '0')}`.toUpperCase();
}

/** Drops of the socket bound to `address:port` in a /proc/net/udp table, or null if it is not there. */
export function dropsInTable(table: string, address: string, port: number): number | null {
  const local = procLocalAddress(address, port);
  for (const line of table.split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields[1] === local) return Number(fields[fields.length - 1]);
  }
  return null;
}

/** Reads the kernel's drop count for our socket; null where /proc/net/udp is not there. */
export function readSocketDrops(address: string, port: number): number | null {
  try {
    return dropsInTable(readFileSync(isIPv6(address) ? '/proc/net/udp6' : '/proc/net/udp', 'utf8'), address, port);
  } catch {
    return null;
  }
}

function ipv6Bytes(address: string): Buffer {
  const [head = '', tail = ''] = address.split('::');
  const groups = (part: string) => (part ? part.split(':') : []);
  const [h, t] = [groups(head), groups(tail)];
  const all = address.includes('::') ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t] : h;
  return Buffer.from(all.map((g) => g.padStart(4, '0')).join(''), 'hex');
}

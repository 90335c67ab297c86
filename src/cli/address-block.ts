/**
 * The loopback addresses of one all-in-one Ostia, chosen per data directory, so that several
 * `ostia up` run side by side on one machine: block N of 16 is the Nth /20 of the VIP range
 * (127.16.0.0/16) and of the management range (127.80.0.0/16). Amphorae, their VIPs and the
 * heartbeat receiver (the block's management .1, which also marks the block as taken while Ostia
 * runs) all live inside it, so the ports can stay the defaults.
 *
 * The first `ostia up` on a data directory takes the lowest block nothing on the machine is bound
 * in, and writes it to DATA_DIR/address-block, which every later start (and `ostia config`)
 * reads: amphorae keep the addresses they were given. A setting the config changes from its
 * default is the config's, block or not.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { ConfigError, defaultConfig, VIP_SUBNET_ID, type Config } from '../config.js';
import { parseHostPort } from '../domain/net.js';

export const BLOCKS = 16;
const VIP_SECOND_OCTET = 16;
const MANAGEMENT_SECOND_OCTET = 80;
const BLOCK_THIRD_OCTETS = 256 / BLOCKS;

export const blockFile = (dataDir: string) => join(dataDir, 'address-block');

/** The addresses of block `n`: where its VIPs and management addresses are allocated, where heartbeats go. */
export function blockAddresses(n: number): { vipPool: { start: string; end: string }; managementNetwork: Config['amphora']['managementNetwork']; healthHost: string } {
  const first = n * BLOCK_THIRD_OCTETS;
  const last = first + BLOCK_THIRD_OCTETS - 1;
  const mgmt = `127.${MANAGEMENT_SECOND_OCTET}`;
  return {
    vipPool: { start: `127.${VIP_SECOND_OCTET}.${first}.10`, end: `127.${VIP_SECOND_OCTET}.${last}.250` },
    managementNetwork: { cidr: `${mgmt}.${first}.0/20`, start: `${mgmt}.${first}.10`, end: `${mgmt}.${last}.250` },
    healthHost: `${mgmt}.${first}.1`,
  };
}

/** Which block an IPv4 address falls in, or null outside both ranges. */
export function blockOf(address: string): number | null {
  const [a, b, c] = address.split('.').map(Number);
  if (a !== 127 || (b !== VIP_SECOND_OCTET && b !== MANAGEMENT_SECOND_OCTET) || c === undefined) return null;
  return Math.floor(c / BLOCK_THIRD_OCTETS);
}

/** The config with block `n` in every setting still at its default. */
export function withBlock(config: Config, n: number): Config {
  const defaults = defaultConfig(config.dataDir);
  const addresses = blockAddresses(n);
  const amphora = { ...config.amphora };
  if (isDeepStrictEqual(amphora.managementNetwork, defaults.amphora.managementNetwork)) amphora.managementNetwork = addresses.managementNetwork;
  if (amphora.healthListen === defaults.amphora.healthListen) amphora.healthListen = `${addresses.healthHost}:${parseHostPort(defaults.amphora.healthListen, 'amphora.healthListen').port}`;
  let networks = config.network.networks;
  if (isDeepStrictEqual(networks, defaults.network.networks))
    networks = networks.map((net) => ({ ...net, subnets: net.subnets.map((s) => (s.id === VIP_SUBNET_ID ? { ...s, allocation_pools: [addresses.vipPool] } : s)) }));
  return { ...config, amphora, network: { ...config.network, networks } };
}

/** The block this data directory took, or null before its first `ostia up`. */
export function readBlock(dataDir: string): number | null {
  const file = blockFile(dataDir);
  if (!existsSync(file)) return null;
  const text = readFileSync(file, 'utf8').trim();
  const n = Number(text);
  if (text === '' || !Number.isInteger(n) || n < 0 || n >= BLOCKS) throw new ConfigError(`${file} holds '${text}', not a block number from 0 to ${BLOCKS - 1}: delete it to choose again`);
  return n;
}

/**
 * This data directory's block: the one it took before, or the lowest in which no socket on the
 * machine is bound (`taken` reads those that are, only on a first start), written down for every later start.
 */
export function claimBlock(dataDir: string, taken: () => ReadonlySet<number> = boundBlocks): number {
  const kept = readBlock(dataDir);
  if (kept !== null) return kept;
  const bound = taken();
  for (let n = 0; n < BLOCKS; n++) {
    if (bound.has(n)) continue;
    writeFileSync(blockFile(dataDir), `${n}\n`, { mode: 0o600 });
    return n;
  }
  throw new Error(`all ${BLOCKS} address blocks of 127.${VIP_SECOND_OCTET}.0.0/16 and 127.${MANAGEMENT_SECOND_OCTET}.0.0/16 are in use by other Ostia instances on this machine`);
}

/** The blocks some IPv4 socket on this machine is bound in (Linux: /proc/net). */
export function boundBlocks(): Set<number> {
  const taken = new Set<number>();
  for (const table of ['tcp', 'udp']) {
    let text: string;
    try {
      text = readFileSync(`/proc/net/${table}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const local = line.trim().split(/\s+/)[1];
      if (!local) continue;
      // "0100007F:1F90": the address in host (little-endian) byte order, then the port.
      const hex = local.split(':')[0]!;
      const address = [6, 4, 2, 0].map((i) => parseInt(hex.slice(i, i + 2), 16)).join('.');
      const n = blockOf(address);
      if (n !== null) taken.add(n);
    }
  }
  return taken;
}

/**
 * Network driver `loopback`: amphorae run on this machine, where Linux routes all of
 * 127.0.0.0/8 to `lo`. Management addresses come from `amphora.managementNetwork` (a
 * range of 127/8), as `port` rows (../management-ports.ts).
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { cidrContains, ipToBigInt, ipVersion, parseCidr } from '../../domain/net.js';
import { checkManagementNetwork, ManagementPorts, type ManagementNetworkConfig } from '../management-ports.js';
import type { NetworkDriver, VipPlug } from '../network-driver.js';

const LOOPBACK_V4 = parseCidr('127.0.0.0/8')!;

export function isLoopbackAddress(address: string): boolean {
  const version = ipVersion(address);
  if (version === 4) return cidrContains(LOOPBACK_V4, address);
  return version === 6 && ipToBigInt(address) === 1n;
}

export class LoopbackNetwork implements NetworkDriver {
  private readonly ports: ManagementPorts;

  constructor(config: ManagementNetworkConfig) {
    checkManagementNetwork(config, (cidr) =>
      cidr.version !== 4 || cidr.prefix < 8 || !cidrContains(LOOPBACK_V4, config.cidr.split('/')[0]!)
        ? 'must lie inside 127.0.0.0/8: the loopback network driver runs amphorae on this machine'
        : null,
    );
    this.ports = new ManagementPorts(config);
  }

  allocateManagementAddress(trx: Transaction<Database>, amphoraId: string): Promise<string> {
    return this.ports.allocate(trx, amphoraId);
  }

  releaseManagementAddress(db: Kysely<Database>, amphoraId: string): Promise<void> {
    return this.ports.release(db, amphoraId);
  }

  /**
   * Every 127/8 address (and ::1) is already local, so HAProxy can bind the VIP without any
   * interface change and there is nothing to record; what can fail is a VIP outside
   * loopback, which no amphora on this machine could ever answer on.
   */
  async plugVip(_db: Kysely<Database>, plug: VipPlug): Promise<null> {
    const outside = plug.addresses.find((vip) => !isLoopbackAddress(vip));
    if (outside)
      throw new Error(
        `cannot plug VIP ${outside} into amphora ${plug.amphoraId}: the loopback network driver serves only 127.0.0.0/8 and ::1; give the VIP network a subnet inside 127.0.0.0/8`,
      );
    return null;
  }

  /** Loopback VIPs are every process's already: amphorae bind them side by side (SO_REUSEPORT). */
  async claimVip(_db: Kysely<Database>, _plug: Omit<VipPlug, 'floating'>): Promise<void> {}

  /** Nothing was changed by plugVip, so nothing is undone; no check either, so a delete is never blocked. */
  async unplugVip(_db: Kysely<Database>, _amphoraId: string): Promise<void> {}

  /** Every member is reached through this machine's own routes. */
  async plugMemberNetworks(): Promise<void> {}

  /** Amphorae share this machine's network stack: there is no port of theirs to filter (allowed CIDRs are HAProxy's). */
  async updateSecurityGroup(): Promise<void> {}
}

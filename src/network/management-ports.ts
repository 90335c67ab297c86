/**
 * Amphora management addresses as `port` rows of a fixed management network that no tenant
 * sees, the way Octavia's lb-mgmt-net ports belong to its service project: what every network
 * driver that runs amphorae (loopback, bridge) allocates from `amphora.managementNetwork`. The
 * rows are written in the caller's transaction, so a restarted controller finds each amphora's
 * address where it left it.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Config } from '../config.js';
import type { Database } from '../db/schema.js';
import { deletePorts } from '../db/free-addresses.js';
import { isApiError } from '../domain/errors.js';
import { cidrContains, ipToBigInt, parseCidr, type Cidr } from '../domain/net.js';
import { NetworkCatalog, type SubnetDef } from './catalog.js';

export const MANAGEMENT_NETWORK_ID = '8f0e1d2c-3b4a-4596-8877-6655aa44bb33';
export const MANAGEMENT_SUBNET_ID = '9a1f2e3d-4c5b-4a69-9788-7766bb55cc44';
/** Owner of management ports; tenants never own them. */
export const MANAGEMENT_PROJECT_ID = 'ostia-management';
export const MANAGEMENT_DEVICE_OWNER = 'ostia:amphora-mgmt';

export type ManagementNetworkConfig = Config['amphora']['managementNetwork'];

export class ManagementPorts {
  private readonly catalog: NetworkCatalog;
  private readonly subnet: SubnetDef;

  constructor(private readonly config: ManagementNetworkConfig) {
    this.catalog = new NetworkCatalog({
      networks: [
        {
          id: MANAGEMENT_NETWORK_ID,
          name: 'ostia-management',
          projects: [MANAGEMENT_PROJECT_ID],
          subnets: [{ id: MANAGEMENT_SUBNET_ID, name: 'ostia-management', cidr: config.cidr, gateway_ip: null, allocation_pools: [{ start: config.start, end: config.end }] }],
        },
      ],
      qosPolicies: [],
      securityGroups: [],
    });
    this.subnet = this.catalog.subnet(MANAGEMENT_SUBNET_ID)!;
  }

  /** The amphora's address; asking again for the same amphora returns the same one. */
  async allocate(trx: Transaction<Database>, amphoraId: string): Promise<string> {
    const held = await trx
      .selectFrom('port')
      .select('ip_address')
      .where('device_owner', '=', MANAGEMENT_DEVICE_OWNER)
      .where('device_id', '=', amphoraId)
      .executeTakeFirst();
    if (held) return held.ip_address;
    try {
      const port = await this.catalog.allocatePort(trx, {
        subnet: this.subnet,
        projectId: MANAGEMENT_PROJECT_ID,
        deviceId: amphoraId,
        owner: MANAGEMENT_DEVICE_OWNER,
        name: `amphora-mgmt-${amphoraId}`,
      });
      return port.ip_address;
    } catch (e) {
      // The catalog reports a full subnet as the API's 409 for VIPs; here it is an operator's problem.
      if (isApiError(e) && e.code === 'CONFLICT')
        throw new Error(
          `no free management address for amphora ${amphoraId}: every address of amphora.managementNetwork ${this.config.start}-${this.config.end} is held by an amphora. ` +
            "Delete amphorae that are no longer needed ('ostia housekeeping' removes those of deleted load balancers) or widen amphora.managementNetwork.start/end in the configuration.",
        );
      throw e;
    }
  }

  async release(db: Kysely<Database>, amphoraId: string): Promise<void> {
    await deletePorts(db, (q) => q.where('device_owner', '=', MANAGEMENT_DEVICE_OWNER).where('device_id', '=', amphoraId));
  }
}

/** A management network a driver can serve: a CIDR the driver accepts (`misplaced` says why not), holding the range. */
export function checkManagementNetwork(config: ManagementNetworkConfig, misplaced: (cidr: Cidr) => string | null): void {
  const where = 'amphora.managementNetwork';
  const cidr = parseCidr(config.cidr);
  if (!cidr) throw new Error(`${where}.cidr '${config.cidr}' is not a CIDR`);
  const why = misplaced(cidr);
  if (why) throw new Error(`${where}.cidr ${config.cidr} ${why}`);
  for (const key of ['start', 'end'] as const)
    if (!cidrContains(cidr, config[key])) throw new Error(`${where}.${key} ${config[key]} is not inside ${where}.cidr ${config.cidr}`);
  if (ipToBigInt(config.start) > ipToBigInt(config.end)) throw new Error(`${where}.start ${config.start} comes after ${where}.end ${config.end}`);
}

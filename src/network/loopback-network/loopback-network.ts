/**
 * Network driver `loopback`: amphorae run on this machine, where Linux routes all of
 * 127.0.0.0/8 to `lo`. Management addresses come from `amphora.managementNetwork` (a
 * range of 127/8) and are kept as `port` rows of a fixed management network that no tenant
 * sees, the way Octavia's lb-mgmt-net ports belong to its service project.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Config } from '../../config.js';
import type { Database } from '../../db/schema.js';
import { isApiError } from '../../domain/errors.js';
import { cidrContains, ipToBigInt, ipVersion, parseCidr } from '../../domain/net.js';
import { NetworkCatalog, type SubnetDef } from '../catalog.js';
import type { NetworkDriver } from '../network-driver.js';

export const MANAGEMENT_NETWORK_ID = '8f0e1d2c-3b4a-4596-8877-6655aa44bb33';
export const MANAGEMENT_SUBNET_ID = '9a1f2e3d-4c5b-4a69-9788-7766bb55cc44';
/** Owner of management ports; tenants never own them. */
export const MANAGEMENT_PROJECT_ID = 'ostia-management';
export const MANAGEMENT_DEVICE_OWNER = 'ostia:amphora-mgmt';

const LOOPBACK_V4 = parseCidr('127.0.0.0/8')!;

export function isLoopbackAddress(address: string): boolean {
  const version = ipVersion(address);
  if (version === 4) return cidrContains(LOOPBACK_V4, address);
  return version === 6 && ipToBigInt(address) === 1n;
}

type ManagementNetworkConfig = Config['amphora']['managementNetwork'];

export class LoopbackNetwork implements NetworkDriver {
  private readonly catalog: NetworkCatalog;
  private readonly subnet: SubnetDef;

  constructor(private readonly config: ManagementNetworkConfig) {
    checkManagementNetwork(config);
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

  async allocateManagementAddress(trx: Transaction<Database>, amphoraId: string): Promise<string> {
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

  async releaseManagementAddress(db: Kysely<Database>, amphoraId: string): Promise<void> {
    await db.deleteFrom('port').where('device_owner', '=', MANAGEMENT_DEVICE_OWNER).where('device_id', '=', amphoraId).execute();
  }

  /**
   * Every 127/8 address (and ::1) is already local, so HAProxy can bind the VIP without any
   * interface change and there is nothing to record; what can fail is a VIP outside
   * loopback, which no amphora on this machine could ever answer on.
   */
  async plugVip(amphoraId: string, vip: string): Promise<void> {
    if (!isLoopbackAddress(vip))
      throw new Error(
        `cannot plug VIP ${vip} into amphora ${amphoraId}: the loopback network driver serves only 127.0.0.0/8 and ::1; give the VIP network a subnet inside 127.0.0.0/8`,
      );
  }

  /** Nothing was changed by plugVip, so nothing is undone; no check either, so a delete is never blocked. */
  async unplugVip(): Promise<void> {}
}

function checkManagementNetwork(config: ManagementNetworkConfig): void {
  const where = 'amphora.managementNetwork';
  const cidr = parseCidr(config.cidr);
  if (!cidr) throw new Error(`${where}.cidr '${config.cidr}' is not a CIDR`);
  if (cidr.version !== 4 || cidr.prefix < 8 || !cidrContains(LOOPBACK_V4, config.cidr.split('/')[0]!))
    throw new Error(`${where}.cidr ${config.cidr} must lie inside 127.0.0.0/8: the loopback network driver runs amphorae on this machine`);
  for (const key of ['start', 'end'] as const)
    if (!cidrContains(cidr, config[key])) throw new Error(`${where}.${key} ${config[key]} is not inside ${where}.cidr ${config.cidr}`);
  if (ipToBigInt(config.start) > ipToBigInt(config.end)) throw new Error(`${where}.start ${config.start} comes after ${where}.end ${config.end}`);
}

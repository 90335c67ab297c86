/**
 * An amphora's ports on tenant networks as `port` rows, the way Octavia's network driver makes them in
 * Neutron: one base port on the VIP network (`octavia-lb-vrrp-<amphora id>`, the amphora API's
 * `vrrp_port_id`; the VIP port itself is the load balancer's), and one on each member network the
 * amphora must reach. They belong to the service, not to the tenant, and count against the subnet's
 * addresses as Neutron counts them. Idempotent: a resumed step finds the port it made.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { deletePorts } from '../../db/free-addresses.js';
import { apiError, isApiError } from '../../domain/errors.js';
import type { NetworkCatalog, SubnetDef } from '../catalog.js';
import { MANAGEMENT_PROJECT_ID } from '../management-ports.js';

export const VRRP_DEVICE_OWNER = 'ostia:amphora-vrrp';
export const MEMBER_DEVICE_OWNER = 'ostia:amphora-member';

export interface AmphoraPort {
  id: string;
  subnet: SubnetDef;
  address: string;
}

export class AmphoraPorts {
  constructor(private readonly catalog: NetworkCatalog) {}

  subnet(id: string): SubnetDef {
    const subnet = this.catalog.subnet(id);
    if (!subnet) throw new Error(`subnet ${id} is not in network.networks: the bridge network driver builds only the configured networks`);
    return subnet;
  }

  /** The amphora's base port on `subnetId`'s network (`owner` VRRP) or its port on a member subnet (`owner` member). */
  async ensure(db: Kysely<Database>, amphoraId: string, subnetId: string, owner: typeof VRRP_DEVICE_OWNER | typeof MEMBER_DEVICE_OWNER): Promise<AmphoraPort> {
    const subnet = this.subnet(subnetId);
    const held = await db.selectFrom('port').select(['id', 'ip_address']).where('device_owner', '=', owner).where('device_id', '=', amphoraId).where('subnet_id', '=', subnetId).executeTakeFirst();
    if (held) return { id: held.id, subnet, address: held.ip_address };
    const name = owner === VRRP_DEVICE_OWNER ? `octavia-lb-vrrp-${amphoraId}` : `octavia-lb-member-${amphoraId}`;
    try {
      const port = await db.transaction().execute((trx) => this.catalog.allocatePort(trx, { subnet, projectId: MANAGEMENT_PROJECT_ID, deviceId: amphoraId, owner, name }));
      return { id: port.id, subnet, address: port.ip_address };
    } catch (e) {
      if (isApiError(e) && e.code === 'CONFLICT')
        throw apiError('CONFLICT', `No free address on subnet ${subnet.id} (${subnet.cidr}) for amphora ${amphoraId}'s port: each amphora takes one besides the VIP. Free addresses or widen the subnet's allocation pool.`);
      throw e;
    }
  }

  /** Whether the amphora holds a port of this kind. */
  async isPlugged(db: Kysely<Database>, amphoraId: string, owner: typeof VRRP_DEVICE_OWNER | typeof MEMBER_DEVICE_OWNER): Promise<boolean> {
    return (await db.selectFrom('port').select('id').where('device_owner', '=', owner).where('device_id', '=', amphoraId).executeTakeFirst()) !== undefined;
  }

  /** The member-network ports the amphora holds, by subnet. */
  async memberPorts(db: Kysely<Database>, amphoraId: string): Promise<AmphoraPort[]> {
    const rows = await db.selectFrom('port').select(['id', 'subnet_id', 'ip_address']).where('device_owner', '=', MEMBER_DEVICE_OWNER).where('device_id', '=', amphoraId).execute();
    return rows.map((r) => ({ id: r.id, subnet: this.subnet(r.subnet_id), address: r.ip_address }));
  }

  async release(db: Kysely<Database>, amphoraId: string, owner: typeof VRRP_DEVICE_OWNER | typeof MEMBER_DEVICE_OWNER, subnetId?: string): Promise<void> {
    await deletePorts(db, (q) => {
      const ours = q.where('device_owner', '=', owner).where('device_id', '=', amphoraId);
      return subnetId ? ours.where('subnet_id', '=', subnetId) : ours;
    });
  }
}

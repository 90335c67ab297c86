/**
 * The embedded network service: networks, subnets, QoS policies and security groups come
 * from config; ports (VIPs) are rows, so allocation is transactional and survives restarts.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { Config } from '../config.js';
import type { Database } from '../db/schema.js';
import { apiError } from '../domain/errors.js';
import { cidrContains, parseCidr, reservedSubnetAddress, type Cidr } from '../domain/net.js';
import { timestamp } from '../domain/time.js';
import { takeAddress } from '../db/free-addresses.js';

/** The catalog is the configured networks whatever network.driver says. */
type Cfg = Pick<Config['network'], 'networks' | 'qosPolicies' | 'securityGroups'>;
export type NetworkDef = Cfg['networks'][number];
export type SubnetDef = NetworkDef['subnets'][number] & { network_id: string; cidrParsed: Cidr; ip_version: 4 | 6 };

export interface AllocatedPort {
  id: string;
  network_id: string;
  subnet_id: string;
  ip_address: string;
  qos_policy_id: string | null;
}

export interface PortRequest {
  subnet: SubnetDef;
  address?: string | null;
  projectId: string;
  deviceId: string;
  owner: string;
  name: string;
  qosPolicyId?: string | null;
  /** The id the port gets: a VIP port the request names that holds no address yet (network.driver noop). */
  portId?: string;
}

export class NetworkCatalog {
  readonly networks: readonly NetworkDef[];
  readonly subnets: readonly SubnetDef[];
  private readonly byNetwork = new Map<string, NetworkDef>();
  private readonly bySubnet = new Map<string, SubnetDef>();

  constructor(readonly config: Cfg) {
    this.networks = config.networks;
    this.subnets = config.networks.flatMap((n) =>
      n.subnets.map((s) => {
        const cidrParsed = parseCidr(s.cidr);
        if (!cidrParsed) throw new Error(`network config: subnet ${s.id} has an invalid cidr ${s.cidr}`);
        return { ...s, network_id: n.id, cidrParsed, ip_version: cidrParsed.version };
      }),
    );
    for (const n of this.networks) this.byNetwork.set(n.id, n);
    for (const s of this.subnets) this.bySubnet.set(s.id, s);
  }

  network(id: string): NetworkDef | undefined {
    return this.byNetwork.get(id);
  }
  subnet(id: string): SubnetDef | undefined {
    return this.bySubnet.get(id);
  }
  qosPolicy(id: string) {
    return this.config.qosPolicies.find((q) => q.id === id);
  }
  securityGroup(id: string) {
    return this.config.securityGroups.find((g) => g.id === id);
  }

  /** A subnet of `networkId` for a VIP: IPv4 first, as Octavia prefers. */
  pickSubnet(networkId: string): SubnetDef | undefined {
    const subnets = this.subnets.filter((s) => s.network_id === networkId);
    return subnets.find((s) => s.ip_version === 4) ?? subnets[0];
  }

  async port(db: Kysely<Database>, id: string) {
    return db.selectFrom('port').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /**
   * Reserves `address` (or the lowest free address of the subnet's pools) in the caller's
   * transaction, so a failed request leaves no port behind.
   */
  async allocatePort(trx: Transaction<Database>, req: PortRequest): Promise<AllocatedPort> {
    const { subnet, address } = req;
    if (address) {
      if (!cidrContains(subnet.cidrParsed, address))
        throw apiError('VALIDATION', `VIP address ${address} is not in subnet ${subnet.id} (${subnet.cidr}).`);
      const reserved = reservedSubnetAddress(subnet.cidrParsed, address);
      if (reserved)
        throw apiError('BAD_REQUEST', `IP address ${address} is not a valid IP for the specified subnet: it is the ${reserved} address of subnet ${subnet.id} (${subnet.cidr}).`);
    }
    const taken = await takeAddress(trx, subnet, address ?? null);
    if (!taken)
      throw apiError('CONFLICT', `No more IP addresses available on subnet ${subnet.id} (${subnet.cidr}); free addresses by deleting load balancers or configure a larger allocation pool.`);
    return insertPort(trx, req, taken);
  }
}

export async function insertPort(trx: Transaction<Database>, req: PortRequest, address: string): Promise<AllocatedPort> {
  const port: AllocatedPort = { id: req.portId ?? randomUUID(), network_id: req.subnet.network_id, subnet_id: req.subnet.id, ip_address: address, qos_policy_id: req.qosPolicyId ?? null };
  await trx
    .insertInto('port')
    .values({ ...port, project_id: req.projectId, name: req.name, device_id: req.deviceId, device_owner: req.owner, created_at: timestamp() })
    .execute();
  return port;
}

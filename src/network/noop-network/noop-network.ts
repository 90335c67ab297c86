/**
 * `network.driver: noop`, Octavia's network_noop_driver: every well-formed UUID names a network,
 * subnet, port, QoS policy or security group that exists, so tools written against Octavia's
 * no-op drivers can create with random ids. Configured networks keep their catalog behaviour.
 *
 * Nothing is invented at random: a subnet's network is the one its ports (rows) are on, else the
 * one the request names, else one derived from the subnet's id, so every look-up of an id answers
 * the same. A VIP given an address keeps it; one without gets the lowest free address of a
 * documentation range (RFC 5737 198.51.100.0/24, where Octavia's no-op driver always answers
 * 198.51.100.1; RFC 3849 2001:db8::/64 on a subnet whose ports are IPv6), unique per subnet
 * because ports are rows written in the create's transaction.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { apiError } from '../../domain/errors.js';
import { nameBasedUuid } from '../../domain/ids.js';
import { ipVersion, isUuid, parseCidr } from '../../domain/net.js';
import { insertPort, type AllocatedPort, type PortRequest, type SubnetDef } from '../catalog.js';
import { takeAddress } from '../../db/free-addresses.js';
import type { CatalogNetworkService, NamedResource, NetworkInfo, NetworkService, PortInfo } from '../service.js';

const SYNTHETIC_RANGES = {
  4: { cidr: '198.51.100.0/24', pool: { start: '198.51.100.1', end: '198.51.100.254' } },
  6: { cidr: '2001:db8::/64', pool: { start: '2001:db8::1', end: '2001:db8::ffff:ffff:ffff:ffff' } },
} as const;

/** A stable UUID (version 5 layout) for the `kind` of object that belongs to `of`. */
export function derivedId(kind: 'network' | 'subnet-v4' | 'subnet-v6' | 'port-subnet', of: string): string {
  return nameBasedUuid(`ostia-noop-${kind}:${of}`);
}

function syntheticSubnet(id: string, networkId: string, version: 4 | 6): SubnetDef {
  const range = SYNTHETIC_RANGES[version];
  return {
    id, name: '', network_id: networkId, cidr: range.cidr, cidrParsed: parseCidr(range.cidr)!, ip_version: version,
    gateway_ip: null, allocation_pools: [{ ...range.pool }],
  };
}

export class NoopNetworkService implements NetworkService {
  constructor(private readonly configured: CatalogNetworkService) {}

  private configuredSubnet(id: string) {
    return this.configured.catalog.subnet(id);
  }

  async network(db: Kysely<Database>, id: string): Promise<NetworkInfo> {
    const known = await this.configured.network(db, id);
    if (known) return known;
    const rows = await db.selectFrom('port').select('subnet_id').distinct().where('network_id', '=', id).orderBy('subnet_id').execute();
    return { id, name: '', projects: [], subnetIds: rows.map((r) => r.subnet_id) };
  }

  /** A network nothing configures is shared, as every network Octavia's no-op driver pretends is. */
  projectsOf(id: string): readonly string[] {
    return this.configured.projectsOf(id) ?? [];
  }

  async subnet(db: Kysely<Database>, id: string, networkId?: string): Promise<SubnetDef> {
    const known = this.configuredSubnet(id);
    if (known) return known;
    const first = await db.selectFrom('port').select(['network_id', 'ip_address']).where('subnet_id', '=', id).orderBy('created_at').executeTakeFirst();
    return syntheticSubnet(id, first?.network_id ?? networkId ?? derivedId('network', id), first && ipVersion(first.ip_address) === 6 ? 6 : 4);
  }

  async pickSubnet(db: Kysely<Database>, networkId: string, version?: 4 | 6): Promise<SubnetDef> {
    const known = await this.configured.pickSubnet(db, networkId, version);
    if (known) return known;
    const subnets = await Promise.all((await this.network(db, networkId)).subnetIds.map((id) => this.subnet(db, id)));
    const fits = version ? subnets.find((s) => s.ip_version === version) : (subnets.find((s) => s.ip_version === 4) ?? subnets[0]);
    return fits ?? syntheticSubnet(derivedId(version === 6 ? 'subnet-v6' : 'subnet-v4', networkId), networkId, version ?? 4);
  }

  qosPolicy(id: string): NamedResource {
    return this.configured.qosPolicy(id) ?? { id, name: '' };
  }

  securityGroup(id: string): NamedResource {
    return this.configured.securityGroup(id) ?? { id, name: '' };
  }

  async port(db: Kysely<Database>, id: string): Promise<PortInfo> {
    return (await this.configured.port(db, id)) ?? (await this.unstoredPort(db, id));
  }

  private async unstoredPort(db: Kysely<Database>, id: string): Promise<PortInfo> {
    const subnet = await this.subnet(db, derivedId('port-subnet', id));
    return { id, project_id: '', name: '', network_id: subnet.network_id, subnet_id: subnet.id, ip_address: null, device_id: '', device_owner: '', qos_policy_id: null };
  }

  async allocatePort(trx: Transaction<Database>, req: PortRequest): Promise<AllocatedPort> {
    if (this.configuredSubnet(req.subnet.id)) return this.configured.allocatePort(trx, req);
    // A given address is used as is, as Octavia's no-op driver does: no subnet range to check it against.
    const address = await takeAddress(trx, req.subnet, req.address ?? null);
    if (!address)
      throw apiError('CONFLICT', `No more IP addresses available on subnet ${req.subnet.id}: network.driver noop hands out ${req.subnet.cidr} per subnet; delete load balancers on it or give VIP addresses explicitly.`);
    return insertPort(trx, req, address);
  }

  async listNetworks(db: Kysely<Database>, ids: readonly string[]): Promise<NetworkInfo[]> {
    const known = await this.configured.listNetworks(db);
    return [...known, ...(await Promise.all(unknownIds(ids, known).map((id) => this.network(db, id))))];
  }

  async listSubnets(db: Kysely<Database>, ids: readonly string[]): Promise<SubnetDef[]> {
    const known = await this.configured.listSubnets();
    return [...known, ...(await Promise.all(unknownIds(ids, known).map((id) => this.subnet(db, id))))];
  }

  async unstoredPorts(db: Kysely<Database>, ids: readonly string[]): Promise<PortInfo[]> {
    const wellFormed = unknownIds(ids, []);
    const stored = wellFormed.length ? await db.selectFrom('port').select('id').where('id', 'in', wellFormed).execute() : [];
    return Promise.all(unknownIds(wellFormed, stored).map((id) => this.unstoredPort(db, id)));
  }

  listQosPolicies(ids: readonly string[]): NamedResource[] {
    return named(this.configured.listQosPolicies(), ids);
  }

  listSecurityGroups(ids: readonly string[]): NamedResource[] {
    return named(this.configured.listSecurityGroups(), ids);
  }
}

/** The well-formed UUIDs among `ids` that none of `known` has: those the look-up pretends exist. */
function unknownIds(ids: readonly string[], known: readonly { id: string }[]): string[] {
  return [...new Set(ids)].filter((id) => isUuid(id) && !known.some((k) => k.id === id));
}

function named(known: NamedResource[], ids: readonly string[]): NamedResource[] {
  return [...known, ...unknownIds(ids, known).map((id) => ({ id, name: '' }))];
}

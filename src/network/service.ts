/**
 * What the API asks of the network service, whichever `network.driver` answers: the VIP and
 * member look-ups of a create, the port allocation in the create's transaction, and the Neutron
 * look-ups clients make first. `catalog` knows the configured networks only; `noop`
 * (noop-network/noop-network.ts) pretends any UUID exists, as Octavia's network_noop_driver does.
 */
import type { SecurityGroupRule } from '../domain/security-group-rule.js';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import { NetworkCatalog, type AllocatedPort, type PortRequest, type SubnetDef } from './catalog.js';

export type { AllocatedPort, PortRequest, SubnetDef };

export interface NetworkInfo {
  id: string;
  name: string;
  /** Projects that may use it; empty = shared with every project. */
  projects: readonly string[];
  subnetIds: readonly string[];
}

export interface NamedResource {
  id: string;
  name: string;
}

/** A security group with the rules it enforces on the ports it is put on (none for the noop driver's). */
export interface SecurityGroupResource extends NamedResource {
  rules?: SecurityGroupRule[];
}

/** A port a VIP may take; `ip_address` null means it holds no address yet and is created on allocation. */
export interface PortInfo {
  id: string;
  project_id: string;
  name: string;
  network_id: string;
  subnet_id: string;
  ip_address: string | null;
  device_id: string;
  device_owner: string;
  qos_policy_id: string | null;
}

export interface NetworkService {
  network(db: Kysely<Database>, id: string): Promise<NetworkInfo | undefined>;
  /** The projects that may use network `id` (empty: every project), without a query; undefined for no such network. */
  projectsOf(id: string): readonly string[] | undefined;
  /** `networkId` is the network the request puts the subnet on, for a subnet whose network nothing else says. */
  subnet(db: Kysely<Database>, id: string, networkId?: string): Promise<SubnetDef | undefined>;
  /** The subnet of `networkId` a VIP goes on: one of `version` when the address is given, else IPv4 first, as Octavia prefers. */
  pickSubnet(db: Kysely<Database>, networkId: string, version?: 4 | 6): Promise<SubnetDef | undefined>;
  qosPolicy(id: string): NamedResource | undefined;
  securityGroup(id: string): SecurityGroupResource | undefined;
  port(db: Kysely<Database>, id: string): Promise<PortInfo | undefined>;
  /** Reserves the address in the caller's transaction, so a failed request leaves no port behind. */
  allocatePort(trx: Transaction<Database>, req: PortRequest): Promise<AllocatedPort>;
  /** What `GET /v2.0/<resource>` lists before its filters apply; `ids` are the ids the query asks for. */
  listNetworks(db: Kysely<Database>, ids: readonly string[]): Promise<NetworkInfo[]>;
  listSubnets(db: Kysely<Database>, ids: readonly string[]): Promise<SubnetDef[]>;
  /** Ports the look-up offers besides the stored ones (the ids no row holds yet). */
  unstoredPorts(db: Kysely<Database>, ids: readonly string[]): Promise<PortInfo[]>;
  listQosPolicies(ids: readonly string[]): NamedResource[];
  listSecurityGroups(ids: readonly string[]): SecurityGroupResource[];
}

/** The configured networks, as the API sees them. */
export class CatalogNetworkService implements NetworkService {
  constructor(readonly catalog: NetworkCatalog) {}

  async network(_db: Kysely<Database>, id: string) {
    const n = this.catalog.network(id);
    return n && { id: n.id, name: n.name, projects: n.projects, subnetIds: n.subnets.map((s) => s.id) };
  }
  projectsOf(id: string) {
    return this.catalog.network(id)?.projects;
  }
  async subnet(_db: Kysely<Database>, id: string) {
    return this.catalog.subnet(id);
  }
  async pickSubnet(_db: Kysely<Database>, networkId: string, version?: 4 | 6) {
    return version ? this.catalog.subnets.find((s) => s.network_id === networkId && s.ip_version === version) : this.catalog.pickSubnet(networkId);
  }
  qosPolicy(id: string) {
    return this.catalog.qosPolicy(id);
  }
  securityGroup(id: string) {
    return this.catalog.securityGroup(id);
  }
  port(db: Kysely<Database>, id: string) {
    return this.catalog.port(db, id);
  }
  allocatePort(trx: Transaction<Database>, req: PortRequest) {
    return this.catalog.allocatePort(trx, req);
  }
  async listNetworks(db: Kysely<Database>) {
    return Promise.all(this.catalog.networks.map(async (n) => (await this.network(db, n.id))!));
  }
  async listSubnets() {
    return [...this.catalog.subnets];
  }
  async unstoredPorts() {
    return [];
  }
  listQosPolicies() {
    return [...this.catalog.config.qosPolicies];
  }
  listSecurityGroups() {
    return [...this.catalog.config.securityGroups];
  }
}

/**
 * The classes of load balancers the capacity plan counts: from a YAML file (what an operator means to run), or
 * from the live load balancers, grouped by project, provider, topology, flavor, listener count and VIP subnet.
 * Either way each class ends resolved against this service: its flavor's profile, its subnet, its project.
 */
import { readFileSync } from 'node:fs';
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { parse as parseYaml } from 'yaml';
import { DEFAULT_COMPUTE_FLAVOR, type Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import { Topology } from '../../domain/enums.js';
import { NetworkCatalog } from '../../network/catalog.js';
import { amphoraProfile } from '../../providers/amphora/capabilities.js';

const ClassSchema = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    provider: Type.String({ minLength: 1 }),
    /** Amphora only; default the flavor's, else SINGLE (Octavia's default topology). */
    topology: Type.Optional(Type.Union(Topology.map((t) => Type.Literal(t)))),
    /** An Octavia flavor of this service, by name or id: its profile gives the topology and compute flavor. */
    flavor: Type.Optional(Type.String({ minLength: 1 })),
    /** An entry of compute.flavors; default the flavor profile's compute_flavor, else `default`. */
    compute_flavor: Type.Optional(Type.String({ minLength: 1 })),
    count: Type.Integer({ minimum: 0 }),
    listeners: Type.Optional(Type.Integer({ minimum: 0 })),
    /** A configured subnet, by name or id; default the VIP subnet of the first configured network. */
    vip_subnet: Type.Optional(Type.String({ minLength: 1 })),
    /** The project, by name or id, whose load-balancer and listener quotas the class counts against. */
    project: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);

const ClassesFileSchema = Type.Object({ classes: Type.Array(ClassSchema, { minItems: 1 }) }, { additionalProperties: false });

export type ClassEntry = Static<typeof ClassSchema>;

export interface PlanClass {
  name: string;
  provider: string;
  /** null: the provider builds no amphorae. */
  topology: Topology | null;
  flavor: string | null;
  /** The compute flavor of its amphorae (an entry of compute.flavors, or a live one that has none); null without amphorae. */
  computeFlavor: string | null;
  count: number;
  listeners: number;
  /** null: not one of the configured subnets (network.driver noop's synthetic ones). */
  vipSubnetId: string | null;
  vipSubnetName: string;
  /** null: no project named; no tenant quota is counted. */
  projectId: string | null;
}

/** A problem with the classes, said as what is wrong with which class. */
export class ClassError extends Error {}

export function readClassesFile(file: string): ClassEntry[] {
  let data: unknown;
  try {
    data = parseYaml(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new ClassError(`cannot read the classes file ${file}: ${(e as Error).message.split('\n')[0]}`);
  }
  const error = Value.Errors(ClassesFileSchema, data).First();
  if (error) throw new ClassError(`classes file ${file}: ${error.path || '/'} ${error.message}`);
  return (data as Static<typeof ClassesFileSchema>).classes;
}

const AMPHORA = 'amphora';

export async function resolveClasses(db: Db, config: Config, entries: readonly ClassEntry[]): Promise<PlanClass[]> {
  const catalog = new NetworkCatalog(config.network);
  const flavorNames = [...new Set(entries.flatMap((e) => (e.flavor ? [e.flavor] : [])))];
  const flavors = flavorNames.length
    ? await db.kysely
        .selectFrom('flavor')
        .innerJoin('flavor_profile as fp', 'fp.id', 'flavor.flavor_profile_id')
        .select(['flavor.id', 'flavor.name', 'fp.provider_name', 'fp.flavor_data'])
        .where((eb) => eb.or([eb('flavor.name', 'in', flavorNames), eb('flavor.id', 'in', flavorNames)]))
        .execute()
    : [];
  const seen = new Set<string>();
  return entries.map((e) => {
    const where = `class '${e.name}'`;
    if (seen.has(e.name)) throw new ClassError(`${where} is named twice: each class needs a name of its own`);
    seen.add(e.name);
    if (!config.api.enabledProviders.includes(e.provider))
      throw new ClassError(`${where}: provider '${e.provider}' is not enabled here (api.enabledProviders: ${config.api.enabledProviders.join(', ')})`);
    const flavor = e.flavor ? flavors.find((f) => f.name === e.flavor || f.id === e.flavor) : undefined;
    if (e.flavor && !flavor) throw new ClassError(`${where}: no flavor '${e.flavor}' in this service (openstack loadbalancer flavor list)`);
    if (flavor && flavor.provider_name !== e.provider) throw new ClassError(`${where}: flavor '${e.flavor}' is of provider ${flavor.provider_name}, not ${e.provider}`);
    const profile = e.provider === AMPHORA ? amphoraProfile(flavor?.flavor_data ?? null) : null;
    if (e.topology && !profile) throw new ClassError(`${where}: topology applies to the amphora provider only (${e.provider} builds no amphorae)`);
    if (e.topology && flavor && e.topology !== profile!.topology) throw new ClassError(`${where}: topology ${e.topology} contradicts flavor '${e.flavor}', whose profile says ${profile!.topology}`);
    const computeFlavor = profile ? (e.compute_flavor ?? profile.computeFlavor ?? DEFAULT_COMPUTE_FLAVOR) : null;
    if (computeFlavor !== null && !config.compute.flavors[computeFlavor])
      throw new ClassError(`${where}: compute flavor '${computeFlavor}' is not in compute.flavors (${Object.keys(config.compute.flavors).join(', ')}): add its vcpus, ramMiB and diskGiB to the configuration`);
    const subnet = e.vip_subnet ? catalog.subnets.find((s) => s.id === e.vip_subnet || s.name === e.vip_subnet) : catalog.networks[0] && catalog.pickSubnet(catalog.networks[0].id);
    if (!subnet) throw new ClassError(`${where}: ${e.vip_subnet ? `no configured subnet '${e.vip_subnet}'` : 'no network is configured'} (network.networks: ${catalog.subnets.map((s) => s.name).join(', ') || 'none'})`);
    const projectId = e.project ? (config.identity.projects.find((p) => p.name === e.project)?.id ?? e.project) : null;
    return {
      name: e.name,
      provider: e.provider,
      topology: profile ? (e.topology ?? profile.topology) : null,
      flavor: flavor?.name ?? null,
      computeFlavor,
      count: e.count,
      listeners: e.listeners ?? 1,
      vipSubnetId: subnet.id,
      vipSubnetName: subnet.name,
      projectId,
    };
  });
}

/** The live load balancers as classes: one per project, provider, topology, flavor, listener count and VIP subnet. */
export async function liveClasses(db: Db, config: Config): Promise<PlanClass[]> {
  const catalog = new NetworkCatalog(config.network);
  const rows = await db.kysely
    .selectFrom('load_balancer as lb')
    .leftJoin('flavor', 'flavor.id', 'lb.flavor_id')
    .leftJoin('flavor_profile as fp', 'fp.id', 'flavor.flavor_profile_id')
    .select(['lb.project_id', 'lb.provider', 'lb.vip_subnet_id', 'flavor.name as flavor_name', 'fp.flavor_data'])
    .select((eb) =>
      eb
        .selectFrom('listener')
        .select((l) => l.fn.countAll().as('n'))
        .whereRef('listener.load_balancer_id', '=', 'lb.id')
        .where('listener.provisioning_status', '!=', 'DELETED')
        .as('listeners'),
    )
    .where('lb.provisioning_status', '!=', 'DELETED')
    .execute();
  const classes = new Map<string, PlanClass>();
  for (const row of rows) {
    const profile = row.provider === AMPHORA ? amphoraProfile(row.flavor_data) : null;
    const listeners = Number(row.listeners ?? 0);
    const subnet = row.vip_subnet_id ? catalog.subnet(row.vip_subnet_id) : undefined;
    const project = config.identity.projects.find((p) => p.id === row.project_id)?.name ?? row.project_id;
    const name = [
      `${project}: ${row.provider}${profile ? ` ${profile.topology}` : ''}`,
      `${listeners} listener(s)`,
      ...(row.flavor_name ? [`flavor ${row.flavor_name}`] : []),
      subnet?.name ?? row.vip_subnet_id ?? 'no subnet',
    ].join(', ');
    const known = classes.get(name);
    if (known) known.count++;
    else
      classes.set(name, {
        name,
        provider: row.provider,
        topology: profile?.topology ?? null,
        flavor: row.flavor_name,
        computeFlavor: profile ? (profile.computeFlavor ?? DEFAULT_COMPUTE_FLAVOR) : null,
        count: 1,
        listeners,
        vipSubnetId: subnet?.id ?? null,
        vipSubnetName: subnet?.name ?? row.vip_subnet_id ?? 'no subnet',
        projectId: row.project_id,
      });
  }
  return [...classes.values()].sort((a, b) => a.name.localeCompare(b.name));
}

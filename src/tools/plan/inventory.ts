/**
 * What the capacity plan counts against, read from this service as it stands: each VIP subnet's and the management
 * network's free addresses (their pools less the ports held), the projects' load-balancer and listener quotas,
 * and for the process compute drivers this machine's memory and disk with what an amphora measurably takes;
 * and what one load balancer of each class takes of each.
 */
import { statfsSync } from 'node:fs';
import { freemem, totalmem } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import { effectiveQuota, quotaUsage } from '../../db/quota-usage.js';
import { ipToBigInt } from '../../domain/net.js';
import { QUOTA_UNLIMITED } from '../../domain/defaults.js';
import { NetworkCatalog } from '../../network/catalog.js';
import { MANAGEMENT_SUBNET_ID } from '../../network/management-ports.js';
import type { ClassDemand, Resource } from './capacity.js';
import type { PlanClass } from './classes.js';
import { measureAmphorae } from './measured.js';
import type { AmphoraMeasure, ClassFootprint } from './result.js';


export interface Inventory {
  resources: Resource[];
  demands: ClassDemand[];
  footprints: ClassFootprint[];
  /** What an amphora takes on this machine, and whence the figure; null: no amphora runs here (compute.driver noop). */
  amphora: AmphoraMeasure | null;
  /** Sentences on what is not counted, and why. */
  notes: string[];
}

const MIB = 2 ** 20;

export function footprintOf(c: PlanClass, config: Config): ClassFootprint {
  const amphorae = c.topology === null ? 0 : c.topology === 'ACTIVE_STANDBY' ? 2 : 1;
  const flavor = (c.computeFlavor !== null && config.compute.flavors[c.computeFlavor]) || { vcpus: 0, ramMiB: 0, diskGiB: 0 };
  return {
    amphorae,
    // The bridge driver gives each amphora a port on the VIP network (Octavia's VRRP port); on loopback it binds the VIP itself.
    vipAddresses: 1 + (config.network.driver === 'bridge' ? amphorae : 0),
    managementAddresses: amphorae,
    vcpus: amphorae * flavor.vcpus,
    ramMiB: amphorae * flavor.ramMiB,
    diskGiB: amphorae * flavor.diskGiB,
  };
}

interface Pool {
  start: string;
  end: string;
}

const poolSize = (pools: readonly Pool[]) => pools.reduce((n, p) => n + Number(ipToBigInt(p.end) - ipToBigInt(p.start) + 1n), 0);
const inPools = (pools: readonly Pool[], ip: string) => {
  const n = ipToBigInt(ip);
  return pools.some((p) => ip.includes(':') === p.start.includes(':') && n >= ipToBigInt(p.start) && n <= ipToBigInt(p.end));
};

export async function takeInventory(db: Db, config: Config, classes: readonly PlanClass[]): Promise<Inventory> {
  const notes: string[] = [];
  const footprints = classes.map((c) => footprintOf(c, config));
  const perLb: Array<Record<string, number>> = classes.map(() => ({}));
  const resources: Resource[] = [];
  const amphoraClasses = footprints.some((f) => f.amphorae > 0);
  const spares = amphoraClasses ? config.amphora.maxConcurrentFailovers : 0;
  if (amphoraClasses)
    notes.push(
      `Failover headroom: up to amphora.maxConcurrentFailovers = ${spares} replacement amphorae are built at once, each before the failed one goes (N+1), so room for ${spares} is held free.`,
    );

  // Addresses: the VIP subnets the classes use, and the management network when any class has amphorae.
  const catalog = new NetworkCatalog(config.network);
  const { managementNetwork } = config.amphora;
  const subnets = [
    ...new Map(classes.flatMap((c) => (c.vipSubnetId && catalog.subnet(c.vipSubnetId) ? [[c.vipSubnetId, catalog.subnet(c.vipSubnetId)!] as const] : []))).values(),
  ].map((s) => ({ key: `vip:${s.id}`, id: s.id, label: `VIP addresses of ${s.name} (${s.cidr})`, pools: s.allocation_pools }));
  if (amphoraClasses)
    subnets.push({ key: 'management', id: MANAGEMENT_SUBNET_ID, label: `management addresses (${managementNetwork.cidr})`, pools: [{ start: managementNetwork.start, end: managementNetwork.end }] });
  const ports = subnets.length ? await db.kysely.selectFrom('port').select(['subnet_id', 'ip_address']).where('subnet_id', 'in', subnets.map((s) => s.id)).execute() : [];
  const bridgePorts = config.network.driver === 'bridge';
  for (const s of subnets) {
    const held = ports.filter((p) => p.subnet_id === s.id && inPools(s.pools, p.ip_address)).length;
    const management = s.key === 'management';
    resources.push({ key: s.key, label: s.label, unit: 'addresses', capacity: poolSize(s.pools), inUse: held, failover: management || (bridgePorts && classes.some((c, i) => c.vipSubnetId === s.id && footprints[i]!.amphorae > 0)) ? spares : 0 });
  }
  classes.forEach((c, i) => {
    if (c.vipSubnetId && catalog.subnet(c.vipSubnetId)) perLb[i]![`vip:${c.vipSubnetId}`] = footprints[i]!.vipAddresses;
    else notes.push(`Class '${c.name}': its VIP subnet ${c.vipSubnetName} is not a configured subnet (network.driver ${config.network.driver}), so its addresses are not counted.`);
    if (footprints[i]!.managementAddresses) perLb[i]!.management = footprints[i]!.managementAddresses;
  });

  await addQuotas(db, config, classes, resources, perLb, notes);
  const amphora = amphoraClasses ? await addMachine(db, config, footprints, resources, perLb, spares, notes) : null;
  notes.push(
    "The service project (where amphorae's ports are accounted) has no compute or port quota here: Ostia's drivers drive no Nova and no Neutron, so its limits are the address ranges and this machine above.",
  );
  return { resources, demands: classes.map((c, i) => ({ name: c.name, count: c.count, perLb: perLb[i]! })), footprints, amphora, notes };
}

async function addQuotas(db: Db, config: Config, classes: readonly PlanClass[], resources: Resource[], perLb: Array<Record<string, number>>, notes: string[]): Promise<void> {
  if (config.identity.mode === 'noauth') {
    notes.push('Quotas: identity.mode noauth enforces none, as Octavia under noauth, so none is counted.');
    return;
  }
  const projects = [...new Set(classes.flatMap((c) => (c.projectId ? [c.projectId] : [])))];
  if (classes.some((c) => !c.projectId)) notes.push('Quotas: a class that names no project is counted against no project quota.');
  for (const projectId of projects) {
    const [limits, usage] = await Promise.all([effectiveQuota(db.kysely, config.quotas, projectId), quotaUsage(db.kysely, projectId)]);
    const name = config.identity.projects.find((p) => p.id === projectId)?.name ?? projectId;
    for (const [resource, unit, take] of [
      ['load_balancer', 'load balancers', () => 1],
      ['listener', 'listeners', (c: PlanClass) => c.listeners],
    ] as const) {
      if (limits[resource] === QUOTA_UNLIMITED) {
        notes.push(`Quota ${resource} of project ${name}: unlimited.`);
        continue;
      }
      const key = `quota:${resource}:${projectId}`;
      resources.push({ key, label: `${resource} quota of project ${name}`, unit, capacity: limits[resource], inUse: usage[resource], failover: 0 });
      classes.forEach((c, i) => {
        if (c.projectId === projectId) perLb[i]![key] = take(c);
      });
    }
  }
}

/** This machine is the host of every amphora of the process drivers: its memory and disk, and what one amphora takes of them. */
async function addMachine(db: Db, config: Config, footprints: readonly ClassFootprint[], resources: Resource[], perLb: Array<Record<string, number>>, spares: number, notes: string[]): Promise<Inventory['amphora']> {
  const { driver } = config.compute;
  if (driver === 'noop') {
    notes.push('compute.driver noop boots nothing: amphorae take addresses but no memory or disk here, so this machine is not counted.');
    return null;
  }
  const measured = await measureAmphorae(db, join(config.dataDir, 'amphorae'));
  const flavors = footprints.filter((f) => f.amphorae > 0);
  const flavorRam = Math.max(...flavors.map((f) => f.ramMiB / f.amphorae));
  const flavorDisk = Math.max(...flavors.map((f) => (f.diskGiB * 1024) / f.amphorae));
  const memoryMiB = measured.memoryMiB ?? flavorRam;
  const diskMiB = measured.diskMiB ?? flavorDisk;
  const source = measured.memoryMiB !== null ? `measured: the median of ${measured.count} running amphorae (PSS of their processes; their directories)` : `not measured (no amphora runs): the compute flavor's RAM and disk`;
  notes.push(`Per amphora on this machine: ${memoryMiB} MiB of memory and ${diskMiB} MiB of disk, ${source}.`);
  const total = totalmem() / MIB;
  const disk = statfsSync(config.dataDir);
  const diskTotal = (disk.blocks * disk.bsize) / MIB;
  resources.push(
    { key: 'memory', label: 'memory of this machine', unit: 'MiB', capacity: Math.round(total), inUse: Math.round(total - freemem() / MIB), failover: spares * memoryMiB },
    { key: 'disk', label: `disk of ${config.dataDir}`, unit: 'MiB', capacity: Math.round(diskTotal), inUse: Math.round(diskTotal - (disk.bavail * disk.bsize) / MIB), failover: spares * diskMiB },
  );
  footprints.forEach((f, i) => {
    if (!f.amphorae) return;
    perLb[i]!.memory = f.amphorae * memoryMiB;
    perLb[i]!.disk = f.amphorae * diskMiB;
  });
  notes.push(`CPU: amphorae of compute.driver ${driver} are processes sharing this machine's CPUs; they reserve none, so vCPUs are counted only as their flavor would reserve them on a cloud.`);
  return { memoryMiB, diskMiB, source, measured };
}

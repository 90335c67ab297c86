/**
 * The health-check source address of each member subnet. OVN probes members from an address
 * on their subnet that nobody else may hold; Neutron would reserve it as the `ovn-lb-hm-<subnet>`
 * port. Here it is a row of Ostia's port table, shared by every monitored load balancer on the
 * subnet and released when the last monitored member there goes.
 */
import { healthMonitorCodec } from '../../db/records/health-monitor.js';
import type { Db } from '../../db/database.js';
import { deletePorts } from '../../db/free-addresses.js';
import type { NetworkCatalog } from '../../network/catalog.js';
import { PROVIDER } from './capabilities.js';
import { HEALTH_PORT_OWNER as OWNER, healthPortName, type HealthPortAddress } from './desired.js';
import { probedByOvn } from './statuses.js';
import type { OvnTree } from './tree.js';


/** The subnets whose members OVN must probe for this tree. */
export function probedSubnets(tree: OvnTree): string[] {
  const monitored = new Set(tree.monitors.map((m) => m.poolId));
  return [...new Set(tree.lb.pools.filter((p) => monitored.has(p.id)).flatMap((p) => p.members.filter((m) => m.enabled).map((m) => m.subnetId ?? tree.vipSubnetId)))];
}

/** The source address on each subnet, reserved on first use. */
export async function reserveHealthPorts(db: Db, catalog: NetworkCatalog, subnetIds: readonly string[]): Promise<Map<string, HealthPortAddress>> {
  const out = new Map<string, HealthPortAddress>();
  if (!subnetIds.length) return out;
  const names = subnetIds.map(healthPortName);
  const held = async () =>
    db.kysely.selectFrom('port').select(['id', 'subnet_id', 'ip_address', 'device_id']).where('device_owner', '=', OWNER).where('device_id', 'in', names).orderBy('created_at').orderBy('id').execute();
  const found = await held();
  const have = new Set(found.map((p) => p.subnet_id));
  const toReserve = subnetIds.filter((s) => !have.has(s));
  if (toReserve.length) {
    await db.kysely.transaction().execute(async (trx) => {
      for (const subnetId of toReserve) {
        const subnet = catalog.subnet(subnetId);
        if (!subnet) throw new Error(`subnet ${subnetId} is not one of Ostia's subnets (network.networks in the config)`);
        await catalog.allocatePort(trx, { subnet, projectId: '', deviceId: healthPortName(subnetId), owner: OWNER, name: healthPortName(subnetId) });
      }
    });
  }
  // Two workers may have reserved the same subnet at once: the oldest reservation wins, the others go.
  const extra: string[] = [];
  for (const p of toReserve.length ? await held() : found) {
    if (out.has(p.subnet_id)) extra.push(p.id);
    else out.set(p.subnet_id, { subnetId: p.subnet_id, ip: p.ip_address });
  }
  await forgetHealthPorts(db, extra);
  return out;
}

/**
 * The source addresses (all, or those among `candidates`) no monitored member of any OVN load
 * balancer needs any more, ignoring what is being deleted: their switch ports go first, then
 * `forgetHealthPorts`.
 */
export async function unusedHealthPorts(db: Db, candidates?: readonly string[]): Promise<Array<{ id: string; name: string }>> {
  if (candidates && !candidates.length) return [];
  let query = db.kysely.selectFrom('port').select(['id', 'subnet_id', 'device_id']).where('device_owner', '=', OWNER);
  if (candidates) query = query.where('ip_address', 'in', [...candidates]);
  const ports = await query.execute();
  if (!ports.length) return [];
  const subnets = ports.map((p) => p.subnet_id);
  const used = await db.kysely
    .selectFrom('member')
    .innerJoin('pool', 'pool.id', 'member.pool_id')
    .innerJoin('load_balancer', 'load_balancer.id', 'pool.load_balancer_id')
    .innerJoin('health_monitor', 'health_monitor.pool_id', 'pool.id')
    .select(['member.subnet_id', 'load_balancer.vip_subnet_id', 'pool.protocol', 'health_monitor.type', 'health_monitor.admin_state_up'])
    .where('load_balancer.provider', '=', PROVIDER)
    .where('load_balancer.provisioning_status', '!=', 'PENDING_DELETE')
    .where('member.provisioning_status', '!=', 'PENDING_DELETE')
    .where('member.admin_state_up', '=', 1)
    .where('health_monitor.provisioning_status', '!=', 'PENDING_DELETE')
    .where((eb) => eb.or([eb('member.subnet_id', 'in', subnets), eb.and([eb('member.subnet_id', 'is', null), eb('load_balancer.vip_subnet_id', 'in', subnets)])]))
    .execute();
  // The rule probedSubnets applies to a tree: enabled members under a monitor OVN runs.
  const needed = new Set(used.filter((u) => probedByOvn(u.protocol, healthMonitorCodec.decode(u))).map((u) => u.subnet_id ?? u.vip_subnet_id));
  return ports.filter((p) => !needed.has(p.subnet_id)).map((p) => ({ id: p.id, name: p.device_id }));
}

export async function forgetHealthPorts(db: Db, ids: readonly string[]): Promise<void> {
  if (ids.length) await deletePorts(db.kysely, (q) => q.where('id', 'in', [...ids]));
}

/**
 * Settling a load balancer of the amphora provider. Provisioning statuses settle as for every
 * provider; operating statuses belong to the health manager, which derives them from heartbeats,
 * so a job only sets what it knows for sure at the moment it finishes:
 *  - objects it changed that are disabled are OFFLINE;
 *  - load balancers, listeners and pools it created or re-enabled (still OFFLINE) are ONLINE until
 *    a heartbeat says otherwise; monitors, L7 policies and rules have no health of their own;
 *  - members of pools without a monitor are NO_MONITOR, or OFFLINE when disabled.
 * Members of monitored pools keep their status: only their monitor knows it.
 * Without a data plane (compute.driver noop) nothing will ever report: the statuses are those of
 * Octavia's amphora provider with no-op drivers, as for the noop provider.
 */
import { treeObjectCodec } from '../../db/records/tree-object.js';
import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { changedObjects, markError, pendingObjects, settleFailure, settleSuccess, treeIds, type PendingObject } from '../../db/lb-tree.js';
import { settleWithoutDataPlane } from '../no-data-plane-statuses.js';
import type { OperatingStatus } from '../../domain/enums.js';

type Trx = Transaction<Database>;
type Table = 'load_balancer' | 'listener' | 'pool' | 'member' | 'health_monitor' | 'l7policy' | 'l7rule';

/** Tables whose enabled objects are ONLINE on the job's word until the health manager reports. */
const OptimisticTables: readonly Table[] = ['load_balancer', 'listener', 'pool'];
/** Tables whose objects have no health signal: enabled means ONLINE. */
const StaticTables: readonly Table[] = ['health_monitor', 'l7policy', 'l7rule'];

interface Pending {
  enabled: string[];
  disabled: string[];
}

async function pendingOf(trx: Trx, table: Table, ids: string[]): Promise<Pending> {
  const rows = ids.length
    ? await trx.selectFrom(table).select(['id', 'admin_state_up']).where('id', 'in', ids).where('provisioning_status', 'in', ['PENDING_CREATE', 'PENDING_UPDATE']).execute()
    : [];
  const objects = rows.map(treeObjectCodec.decode);
  return { enabled: objects.filter((r) => r.admin_state_up).map((r) => r.id), disabled: objects.filter((r) => !r.admin_state_up).map((r) => r.id) };
}

async function setStatus(trx: Trx, table: Table, ids: string[], status: OperatingStatus, onlyFrom?: OperatingStatus): Promise<void> {
  if (!ids.length) return;
  let q = trx.updateTable(table).set({ operating_status: status }).where('id', 'in', ids);
  if (onlyFrom) q = q.where('operating_status', '=', onlyFrom);
  await q.execute();
}

/** Members of pools that have no monitor (after this job): their status is known without one. */
async function setUnmonitoredMembers(trx: Trx, poolIds: string[]): Promise<void> {
  if (!poolIds.length) return;
  const monitored = trx.selectFrom('health_monitor').select('pool_id');
  const unmonitored = trx.updateTable('member').where('pool_id', 'in', poolIds).where('pool_id', 'not in', monitored);
  await unmonitored.set({ operating_status: 'NO_MONITOR' }).where('admin_state_up', '=', 1).execute();
  await unmonitored.set({ operating_status: 'OFFLINE' }).where('admin_state_up', '!=', 1).execute();
}

/** settleSuccess plus the operating statuses above; false when the load balancer was deleted. */
export async function settleAmphoraTree(trx: Trx, lbId: string, opts: { dataPlane: boolean }): Promise<boolean> {
  if (!opts.dataPlane) return settleWithoutDataPlane(trx, lbId);
  const ids = await treeIds(trx, lbId);
  const idsOf: Record<Table, string[]> = {
    load_balancer: [lbId],
    listener: ids.listeners,
    pool: ids.pools,
    member: ids.members,
    health_monitor: ids.healthMonitors,
    l7policy: ids.l7policies,
    l7rule: ids.l7rules,
  };
  const tables = Object.keys(idsOf) as Table[];
  const pending = new Map(await Promise.all(tables.map(async (t) => [t, await pendingOf(trx, t, idsOf[t])] as const)));
  if (!(await settleSuccess(trx, lbId))) return false;
  for (const table of tables) {
    const { enabled, disabled } = pending.get(table)!;
    await setStatus(trx, table, disabled, 'OFFLINE');
    if (OptimisticTables.includes(table)) await setStatus(trx, table, enabled, 'ONLINE', 'OFFLINE');
    if (StaticTables.includes(table)) await setStatus(trx, table, enabled, 'ONLINE');
  }
  await setUnmonitoredMembers(trx, (await treeIds(trx, lbId)).pools);
  return true;
}

const labels: Record<PendingObject['table'], string> = {
  listener: 'listener', pool: 'pool', member: 'member', health_monitor: 'health monitor', l7policy: 'L7 policy', l7rule: 'L7 rule',
};

/**
 * A change the amphorae refused while they kept serving their previous configuration (see
 * ./failures.ts): the objects the job changed go to ERROR, the load balancer and the objects
 * locked with them settle as after a success, so the owner can fix or delete what failed. The
 * reason, on the load balancer (and on a failed listener, which has a reason of its own), names
 * the owner's objects and what to do. A job that changed only the load balancer fails it.
 */
export async function settleRefusedChange(trx: Trx, lbId: string, cause: string, opts: { dataPlane: boolean }): Promise<void> {
  const changed = changedObjects(await pendingObjects(trx, lbId));
  if (!changed.length) return settleFailure(trx, lbId, `the change was not applied: ${cause}`);
  await markError(trx, changed);
  if (!(await settleAmphoraTree(trx, lbId, opts))) return;
  const names = changed.map((o) => `${labels[o.table]} ${o.id}`).join(', ');
  const reason = `the change to ${names} was not applied: ${cause}; update or delete what failed.`;
  await trx.updateTable('load_balancer').set({ status_reason: reason }).where('id', '=', lbId).execute();
  const listeners = changed.filter((o) => o.table === 'listener').map((o) => o.id);
  if (listeners.length) await trx.updateTable('listener').set({ status_reason: reason }).where('id', 'in', listeners).execute();
}

/**
 * Operating statuses where no data plane exists (the noop provider, and the amphora provider
 * under compute.driver noop), as Octavia's amphora provider leaves them with no-op drivers
 * (../shared/reference/octavia-baseline.md): nothing reports health, so load balancers,
 * listeners and pools keep the OFFLINE they were created with. Health monitors, L7 policies
 * and L7 rules get what Octavia's Mark*ActiveInDB tasks give them: ONLINE when enabled,
 * OFFLINE when not. Members of a pool without a monitor are NO_MONITOR whatever their admin
 * state (a monitor's delete flow sets them so); those of a monitored pool keep the OFFLINE
 * they were created with.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import { setOnOffStatus, settleSuccess, treeIds } from '../db/lb-tree.js';

/** settleSuccess, then the statuses above; false when the load balancer was deleted. */
export async function settleWithoutDataPlane(trx: Transaction<Database>, lbId: string): Promise<boolean> {
  if (!(await settleSuccess(trx, lbId))) return false;
  await settleStatuses(trx, lbId);
  return true;
}

async function settleStatuses(db: Kysely<Database> | Transaction<Database>, lbId: string): Promise<void> {
  const ids = await treeIds(db, lbId);
  await setOnOffStatus(db, 'health_monitor', ids.healthMonitors);
  await setOnOffStatus(db, 'l7policy', ids.l7policies);
  await setOnOffStatus(db, 'l7rule', ids.l7rules);
  if (!ids.members.length) return;
  const monitored = ids.healthMonitors.length ? (await db.selectFrom('health_monitor').select('pool_id').where('id', 'in', ids.healthMonitors).execute()).map((r) => r.pool_id) : [];
  let unmonitored = db.updateTable('member').set({ operating_status: 'NO_MONITOR' }).where('id', 'in', ids.members);
  if (monitored.length) unmonitored = unmonitored.where('pool_id', 'not in', monitored);
  await unmonitored.execute();
}

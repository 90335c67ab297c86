/**
 * Makes the Northbound database agree with Ostia's: every settled OVN load balancer's rows are
 * rewritten where they differ (a row deleted or edited behind Ostia's back comes back), and rows
 * and ports Ostia wrote for load balancers it no longer has are removed. Runs when a worker
 * starts and after every Northbound reconnection (the database may have been restored from an
 * older copy). Load balancers with a job in flight are left to that job.
 */
import type { Logger } from 'pino';
import type { Db } from '../../db/database.js';
import { mapToRecord } from '../../ovn/ovsdb/index.js';
import type { OvnDeps } from './deps.js';
import { OWNER, OWNER_KEY } from './desired.js';
import { plannedState, releaseHealthPorts } from './state.js';

export interface ReconcileReport {
  checked: number;
  rewritten: number;
  removed: number;
  failed: number;
}

const SETTLED = ['ACTIVE', 'ERROR'];

export async function reconcileNorthbound(db: Db, deps: OvnDeps, log: Logger): Promise<ReconcileReport> {
  const { nb } = deps;
  const owned = nb.ownedNames();
  const stored = await db.kysely.selectFrom('load_balancer').select(['id', 'provisioning_status']).where('provider', 'in', [...deps.providerNames]).execute();
  const known = new Set(stored.map((lb) => lb.id));
  const report: ReconcileReport = { checked: 0, rewritten: 0, removed: 0, failed: 0 };

  const strayPorts = new Map<string, string[]>();
  for (const row of nb.monitor.tables.get('Logical_Switch_Port')!.values()) {
    const ids = mapToRecord(row.external_ids);
    const lbId = ids['neutron:device_id'];
    if (ids[OWNER_KEY] !== OWNER || ids['neutron:device_owner'] !== 'ovn-lb-vip' || !lbId || known.has(lbId)) continue;
    strayPorts.set(lbId, [...(strayPorts.get(lbId) ?? []), String(row.name)]);
  }
  for (const name of new Set([...owned].filter((n) => !known.has(n)).concat([...strayPorts.keys()]))) {
    await nb.remove(name, strayPorts.get(name) ?? []);
    report.removed++;
    log.info({ load_balancer_id: name }, 'removed northbound rows of a load balancer Ostia does not have');
  }

  const progressEvery = 1000;
  for (const lb of stored) {
    if (!SETTLED.includes(lb.provisioning_status)) continue;
    report.checked++;
    try {
      const outcome = await nb.sync(lb.id, async () => (await plannedState(db, deps, lb.id)).desired, true);
      if (outcome.operations) {
        report.rewritten++;
        log.info({ load_balancer_id: lb.id, operations: outcome.operations }, 'rewrote northbound rows that differed from the load balancer');
      }
    } catch (e) {
      report.failed++;
      log.warn({ load_balancer_id: lb.id, err: (e as Error).message }, 'could not reconcile a load balancer with the northbound database');
    }
    if (report.checked % progressEvery === 0) log.info({ ...report, of: stored.length }, 'reconciling the northbound database');
  }
  await releaseHealthPorts(db, deps);
  return report;
}

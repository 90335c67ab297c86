/**
 * Makes the Northbound database agree with Ostia's: every settled OVN load balancer's rows are
 * rewritten where they differ (a row deleted or edited behind Ostia's back comes back), and rows
 * and ports Ostia wrote for load balancers it no longer has are removed. Runs when a worker
 * starts and after every Northbound reconnection (the database may have been restored from an
 * older copy). Load balancers with a job in flight are left to that job.
 */
import { PendingStatuses } from '../../domain/enums.js';
import type { Logger } from 'pino';
import type { Db } from '../../db/database.js';
import { mapToRecord } from '../../ovn/ovsdb/index.js';
import type { OvnDeps } from './deps.js';
import { OWNER, OWNER_KEY, VIP_PORT_OWNER } from './desired.js';
import { PROVIDER } from './capabilities.js';
import { releaseHealthPorts, SETTLED, syncSettled } from './state.js';

export interface ReconcileReport {
  checked: number;
  rewritten: number;
  removed: number;
  failed: number;
}

/** Load balancers read per round of queries (and per progress line): the trees of a page are read together. */
export const RECONCILE_PAGE = 500;

/**
 * Reads Ostia's side in a few queries per `page` load balancers, whatever their number, and the
 * Northbound side from the provider's monitor; only the rows that differ are written.
 */
export async function reconcileNorthbound(db: Db, deps: OvnDeps, log: Logger, page = RECONCILE_PAGE): Promise<ReconcileReport> {
  const { nb } = deps;
  const owned = nb.ownedNames();
  // A job in flight owns its load balancer's rows, whatever its provider: a move to OVN writes them before the load balancer is OVN's.
  const rows = await db.kysely
    .selectFrom('load_balancer')
    .select(['id', 'provider', 'provisioning_status'])
    .where((eb) => eb.or([eb('provider', '=', PROVIDER), eb('provisioning_status', 'in', PendingStatuses)]))
    .execute();
  const stored = rows.filter((lb) => lb.provider === PROVIDER);
  const known = new Set(rows.map((lb) => lb.id));
  const report: ReconcileReport = { checked: 0, rewritten: 0, removed: 0, failed: 0 };

  const strayPorts = new Map<string, string[]>();
  for (const row of nb.monitor.tables.get('Logical_Switch_Port')!.values()) {
    const ids = mapToRecord(row.external_ids);
    const lbId = ids['neutron:device_id'];
    if (ids[OWNER_KEY] !== OWNER || ids['neutron:device_owner'] !== VIP_PORT_OWNER || !lbId || known.has(lbId)) continue;
    strayPorts.set(lbId, [...(strayPorts.get(lbId) ?? []), String(row.name)]);
  }
  for (const name of new Set([...owned].filter((n) => !known.has(n)).concat([...strayPorts.keys()]))) {
    await nb.remove(name, strayPorts.get(name) ?? []);
    report.removed++;
    log.info({ load_balancer_id: name }, 'removed northbound rows of a load balancer Ostia does not have');
  }

  const settled = stored.filter((lb) => SETTLED.includes(lb.provisioning_status)).map((lb) => lb.id);
  for (let i = 0; i < settled.length; i += page) {
    const batch = settled.slice(i, i + page);
    const { rewritten, failed } = await syncSettled(db, deps, batch, true);
    report.checked += batch.length;
    report.rewritten += rewritten.length;
    report.failed += failed.length;
    for (const id of rewritten) log.info({ load_balancer_id: id }, 'rewrote northbound rows that differed from the load balancer');
    for (const { id, error } of failed) log.warn({ load_balancer_id: id, err: error }, 'could not reconcile a load balancer with the northbound database');
    if (settled.length > page) log.info({ ...report, of: settled.length }, 'reconciling the northbound database');
  }
  await releaseHealthPorts(db, deps);
  return report;
}

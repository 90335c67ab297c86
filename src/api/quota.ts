/**
 * Quota enforcement inside the creating transaction. When a limit applies, the project's quota row
 * is locked (PostgreSQL) so two concurrent creates cannot both take the last unit; when none does
 * (Octavia's default: unlimited), nothing is locked, so a project's creates do not queue behind
 * each other's transactions.
 */
import type { Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import type { Config } from '../config.js';
import { QuotaResources, type QuotaResource } from '../domain/defaults.js';
import { apiError } from '../domain/errors.js';
import { effectiveQuota, quotaUsage } from '../db/quota-usage.js';

export const QuotaLabels: Record<QuotaResource, string> = {
  load_balancer: 'Load Balancer',
  listener: 'Listener',
  pool: 'Pool',
  health_monitor: 'Health Monitor',
  member: 'Member',
  l7policy: 'L7 Policy',
  l7rule: 'L7 Rule',
};

/**
 * Refuses with 403 when adding `wanted` objects would exceed a limit. Octavia skips quota
 * entirely under noauth, and so do we (ctx.isAdmin without roles marks that mode).
 */
export async function checkQuota(
  trx: Transaction<Database>,
  config: Config,
  projectId: string,
  wanted: Partial<Record<QuotaResource, number>>,
  dialect: 'sqlite' | 'postgres',
): Promise<void> {
  if (config.identity.mode === 'noauth') return;
  // Every project that creates something gets a row, as Octavia does; it is also our lock.
  await trx.insertInto('quota').values({ project_id: projectId, load_balancer: null, listener: null, pool: null, health_monitor: null, member: null, l7policy: null, l7rule: null }).onConflict((oc) => oc.column('project_id').doNothing()).execute();
  const limited = async () => {
    const limits = await effectiveQuota(trx, config.quotas, projectId);
    return { limits, needed: QuotaResources.filter((r) => (wanted[r] ?? 0) > 0 && limits[r] !== -1) };
  };
  if (!(await limited()).needed.length) return;
  let lock = trx.selectFrom('quota').select('project_id').where('project_id', '=', projectId);
  if (dialect === 'postgres') lock = lock.forUpdate();
  await lock.execute();
  // Read again under the lock: a quota set meanwhile counts.
  const { limits, needed } = await limited();
  if (!needed.length) return;
  const usage = await quotaUsage(trx, projectId);
  const over = needed.filter((r) => usage[r] + (wanted[r] ?? 0) > limits[r]);
  if (over.length) throw apiError('QUOTA_EXCEEDED', over.map((r) => QuotaLabels[r]).join(', '));
}

/**
 * A project's quota as the API enforces it and the capacity planner counts it: what it holds
 * now and the limits in force.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.js';
import { QuotaResources, type QuotaResource } from '../domain/defaults.js';

type Q = Kysely<Database> | Transaction<Database>;

/** How many objects of each kind a project has now; DELETED rows no longer count, as in Octavia. */
export async function quotaUsage(db: Q, projectId: string): Promise<Record<QuotaResource, number>> {
  const count = async (table: 'load_balancer' | 'listener' | 'pool' | 'health_monitor' | 'member' | 'l7policy' | 'l7rule') =>
    Number((await db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).where('project_id', '=', projectId).where('provisioning_status', '!=', 'DELETED').executeTakeFirstOrThrow()).n);
  const entries = await Promise.all(QuotaResources.map(async (r) => [r, await count(r)] as const));
  return Object.fromEntries(entries) as Record<QuotaResource, number>;
}

/** The limits in force for a project: its own row where set, else `defaults` (the configured `quotas`). */
export async function effectiveQuota(db: Q, defaults: Readonly<Record<QuotaResource, number>>, projectId: string): Promise<Record<QuotaResource, number>> {
  const row = await db.selectFrom('quota').selectAll().where('project_id', '=', projectId).executeTakeFirst();
  return Object.fromEntries(QuotaResources.map((r) => [r, row?.[r] ?? defaults[r]])) as Record<QuotaResource, number>;
}

/** Quota writes: a project's limits set (a row upserted) or reset to the defaults. */
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { QuotaResources, type QuotaResource } from '../../domain/defaults.js';
import { apiError } from '../../domain/errors.js';
import type { QuotaUpdateBody } from '../../domain/schemas/quota.js';
import type { Static } from '../../domain/schema-kit.js';

type QuotaPatch = Static<typeof QuotaUpdateBody>['quota'];

const allNull = Object.fromEntries(QuotaResources.map((r) => [r, null])) as Record<QuotaResource, null>;

/** The columns a PUT sets. When a body has both spellings the underscore-less one wins, as in Octavia. */
function quotaChanges(b: QuotaPatch): Partial<Record<QuotaResource, number | null>> {
  const values: Record<QuotaResource, number | null | undefined> = {
    load_balancer: b.loadbalancer !== undefined ? b.loadbalancer : b.load_balancer,
    listener: b.listener,
    member: b.member,
    pool: b.pool,
    health_monitor: b.healthmonitor !== undefined ? b.healthmonitor : b.health_monitor,
    l7policy: b.l7policy,
    l7rule: b.l7rule,
  };
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined));
}

export async function setQuota(db: Kysely<Database>, projectId: string, patch: QuotaPatch): Promise<void> {
  const changes = quotaChanges(patch);
  const insert = db.insertInto('quota').values({ ...allNull, ...changes, project_id: projectId });
  await (Object.keys(changes).length
    ? insert.onConflict((oc) => oc.column('project_id').doUpdateSet(changes))
    : insert.onConflict((oc) => oc.column('project_id').doNothing())
  ).execute();
}

/** Resets every limit to "use the default"; the row stays, as Octavia keeps it. */
export async function resetQuota(db: Kysely<Database>, projectId: string): Promise<void> {
  const r = await db.updateTable('quota').set(allNull).where('project_id', '=', projectId).executeTakeFirst();
  if (Number(r.numUpdatedRows) === 0) throw apiError('NOT_FOUND', 'Quotas', projectId);
}

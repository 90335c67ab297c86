/** Which listeners serve a pool: the pool's own view and the lock of a pool change both ask. */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.js';
import { inIds } from './dialect.js';

type Q = Kysely<Database> | Transaction<Database>;

/**
 * The listeners a pool serves: those using it as default pool, plus those owning an enabled
 * L7 policy with at least one rule that redirects to it (Octavia's definition).
 */
export async function poolListenerIds(db: Q, poolIds: readonly string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(poolIds.map((id) => [id, []]));
  if (!poolIds.length) return out;
  const ids = [...poolIds];
  const [byDefault, byPolicy] = await Promise.all([
    db.selectFrom('listener').select(['id', 'default_pool_id as pool_id', 'created_at']).where(inIds(db, 'default_pool_id', ids)).execute(),
    db
      .selectFrom('l7policy')
      .innerJoin('listener', 'listener.id', 'l7policy.listener_id')
      .select(['listener.id as id', 'l7policy.redirect_pool_id as pool_id', 'listener.created_at as created_at'])
      .where(inIds(db, 'l7policy.redirect_pool_id', ids))
      .where('l7policy.admin_state_up', '=', 1)
      .where(({ exists, selectFrom }) => exists(selectFrom('l7rule').select('l7rule.id').whereRef('l7rule.l7policy_id', '=', 'l7policy.id')))
      .execute(),
  ]);
  const rows = [...byDefault, ...byPolicy].sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  for (const r of rows) {
    const list = out.get(r.pool_id!);
    if (list && !list.includes(r.id)) list.push(r.id);
  }
  return out;
}

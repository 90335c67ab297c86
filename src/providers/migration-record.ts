/**
 * The end of a migration (PUT …/migrate), whichever provider ran it: the load balancer's row takes
 * the placement it moved to, in the transaction that settles it, so a client that sees it ACTIVE
 * reads its new provider and flavor.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import type { StepContext } from '../provider-contract/flow.js';

export async function recordMigration(db: Kysely<Database> | Transaction<Database>, ctx: Pick<StepContext, 'loadBalancerId' | 'payload'>): Promise<void> {
  const to = ctx.payload.migration?.to;
  if (to) await db.updateTable('load_balancer').set({ provider: to.provider, flavor_id: to.flavor_id, topology: to.topology }).where('id', '=', ctx.loadBalancerId).execute();
}

import type { Kysely } from 'kysely';

/**
 * What the health manager remembers of a load balancer's failed failovers, whichever amphora
 * they replaced: in the database, so a restarted `ostia health` does not start counting anew.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('failover_memory')
    .addColumn('load_balancer_id', 'varchar(36)', (c) => c.primaryKey())
    .addColumn('kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('failures', 'integer', (c) => c.notNull())
    .addColumn('failed_at', 'bigint', (c) => c.notNull())
    .execute();
}

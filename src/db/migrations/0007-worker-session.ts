import type { Kysely } from 'kysely';

/**
 * The database sessions of workers on PostgreSQL, each holding the advisory lock its row names
 * (controller/worker-session.ts): a lease owner with a row whose lock is free has died, and its
 * jobs are adopted without waiting for their lease. Owners without a row (SQLite, a worker of an
 * earlier version) are adopted when their lease expires, as before.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('worker_session')
    .addColumn('owner', 'varchar(255)', (c) => c.primaryKey())
    .addColumn('lock_key', 'integer', (c) => c.notNull())
    .addColumn('started_at', 'varchar(24)', (c) => c.notNull())
    .execute();
}

import type { Kysely } from 'kysely';

/**
 * Managed certificates: a listener's `acme_domains`, and per such listener what its ACME
 * orders have got (the certificate serving, when it expires, why the last attempt failed and
 * when the next is due). `claimed_until` lets one housekeeper at a time order for a listener.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('listener').addColumn('acme_domains', 'text').execute();
  await db.schema
    .createTable('acme_certificate')
    .addColumn('listener_id', 'varchar(36)', (c) => c.primaryKey().references('listener.id').onDelete('cascade'))
    .addColumn('domains', 'text', (c) => c.notNull())
    .addColumn('container_ref', 'text')
    .addColumn('not_before', 'varchar(24)')
    .addColumn('not_after', 'varchar(24)')
    .addColumn('renew_requested', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('claimed_until', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', 'varchar(24)', (c) => c.notNull())
    .execute();
}

import type { Kysely } from 'kysely';

/**
 * TLS in service: why a listener's last certificate change was rolled back, and every
 * certificate, CA bundle and CRL a listener or pool uses, with its not-after date, so expiry
 * can be listed, exported as metrics and warned about without reading the key manager.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('listener').addColumn('status_reason', 'text').execute();
  await db.schema
    .createTable('certificate_in_use')
    .addColumn('object_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('object_kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('role', 'varchar(16)', (c) => c.notNull())
    .addColumn('ref', 'varchar(255)', (c) => c.notNull())
    .addColumn('load_balancer_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('project_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('not_after', 'varchar(32)', (c) => c.notNull())
    .addColumn('fingerprint_sha256', 'varchar(128)')
    .addColumn('subject_cn', 'varchar(255)')
    .addColumn('warned_days', 'integer')
    .addColumn('recorded_at', 'varchar(32)', (c) => c.notNull())
    .addPrimaryKeyConstraint('certificate_in_use_pk', ['object_id', 'role', 'ref'])
    .execute();
  await db.schema.createIndex('certificate_in_use_lb').on('certificate_in_use').column('load_balancer_id').execute();
}

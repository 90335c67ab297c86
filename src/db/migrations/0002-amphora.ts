import type { Kysely } from 'kysely';

/** What the amphora provider, the health manager and housekeeping keep per amphora and listener. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('amphora').addColumn('heartbeat_key', 'varchar(128)').execute();
  await db.schema.alterTable('amphora').addColumn('last_heartbeat_at', 'bigint').execute();
  await db.schema.alterTable('amphora').addColumn('last_heartbeat_seq', 'bigint').execute();
  await db.schema.alterTable('amphora').addColumn('config_version', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable('amphora').addColumn('agent_url', 'varchar(255)').execute();
  await db.schema.alterTable('amphora').addColumn('cert_serial', 'varchar(64)').execute();
  await db.schema.alterTable('amphora').addColumn('status_reason', 'text').execute();
  await db.schema.alterTable('load_balancer').addColumn('config_version', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  await db.schema
    .createTable('listener_statistics')
    .addColumn('listener_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('amphora_id', 'varchar(36)', (c) => c.notNull())
    .addColumn('bytes_in', 'bigint', (c) => c.notNull())
    .addColumn('bytes_out', 'bigint', (c) => c.notNull())
    .addColumn('active_connections', 'bigint', (c) => c.notNull())
    .addColumn('total_connections', 'bigint', (c) => c.notNull())
    .addColumn('request_errors', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('listener_statistics_pk', ['listener_id', 'amphora_id'])
    .execute();
}

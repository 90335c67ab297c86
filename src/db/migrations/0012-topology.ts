import type { Kysely } from 'kysely';

/**
 * A load balancer's own topology, set by a migration (PUT …/migrate): SINGLE or ACTIVE_STANDBY
 * chosen apart from its flavor. Null keeps what its flavor (or the default) says.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('load_balancer').addColumn('topology', 'varchar(16)').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('load_balancer').dropColumn('topology').execute();
}

import type { Kysely } from 'kysely';

/**
 * Spare amphorae: booted ahead with no load balancer (status READY), adopted by a create or a
 * failover. An amphora's id can then no longer tell which job built it, so the row says: the job
 * and the slot of that job's build it fills.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('amphora').addColumn('job_id', 'varchar(36)').execute();
  await db.schema.alterTable('amphora').addColumn('job_slot', 'integer').execute();
  await db.schema.createIndex('amphora_job').on('amphora').columns(['job_id', 'job_slot']).execute();
  await db.schema.createIndex('amphora_status').on('amphora').columns(['status', 'load_balancer_id']).execute();
}

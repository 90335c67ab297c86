import type { Kysely } from 'kysely';

/**
 * Heartbeat keys are derived from amphora.heartbeatSecret and the amphora's id, no longer stored:
 * the column held every key in clear. Amphorae booted before this version keep sending with
 * their old key, which nothing can verify now: they fall silent and are failed over once, onto
 * amphorae with derived keys.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('amphora').dropColumn('heartbeat_key').execute();
}

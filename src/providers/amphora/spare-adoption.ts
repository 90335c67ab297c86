/**
 * How a create or failover takes a spare amphora (./spares.ts keeps the pool) instead of booting one.
 */
import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { AmphoraRow } from '../../db/records/amphora.js';
import { timestamp } from '../../domain/time.js';

/** What an adopting job writes on the spare: the load balancer, the role and the job's slot. */
export type Adoption = Pick<AmphoraRow, 'load_balancer_id' | 'role' | 'vrrp_id' | 'vrrp_priority' | 'cached_zone' | 'compute_flavor' | 'job_id' | 'job_slot'>;

/** Candidates read per try: another job may take the first ones between the read and the update. */
const ADOPT_CANDIDATES = 4;

/**
 * Takes a READY spare for a job, or none. The update re-checks the spare is still free, so two jobs
 * (two workers on PostgreSQL) never take the same one; it then counts as booting until the job's
 * steps find its agent serving.
 */
export async function adoptSpare(trx: Transaction<Database>, adoption: Adoption): Promise<string | undefined> {
  const candidates = await trx.selectFrom('amphora').select('id').where('status', '=', 'READY').where('load_balancer_id', 'is', null).orderBy('created_at').limit(ADOPT_CANDIDATES).execute();
  for (const { id } of candidates) {
    const taken = await trx
      .updateTable('amphora')
      .set({ ...adoption, status: 'BOOTING', updated_at: timestamp() })
      .where('id', '=', id)
      .where('status', '=', 'READY')
      .where('load_balancer_id', 'is', null)
      .executeTakeFirst();
    if (taken.numUpdatedRows === 1n) return id;
  }
  return undefined;
}

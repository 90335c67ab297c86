/** Amphora writes of the admin API: each enqueues a job of the load balancer the amphora serves. */
import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { AmphoraRow } from '../../db/records/amphora.js';
import { apiError } from '../../domain/errors.js';
import { timestamp } from '../../domain/time.js';
import { enqueue } from '../../controller/jobs.js';
import { lockForChildChange } from '../../db/lb-lock.js';

type Trx = Transaction<Database>;
/** The load balancer whose provider runs the amphora's jobs. */
type Owner = { id: string; provider: string };

/**
 * Only a failed amphora may be deleted. One serving a load balancer goes PENDING_DELETE and
 * its provider removes it; a spare has no provider job to wait for and is DELETED at once.
 */
export async function deleteAmphora(trx: Trx, amp: AmphoraRow, lb: Owner | undefined): Promise<void> {
  const r = await trx
    .updateTable('amphora')
    .set({ status: lb ? 'PENDING_DELETE' : 'DELETED', updated_at: timestamp() })
    .where('id', '=', amp.id)
    .where('status', '=', 'ERROR')
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) !== 1) throw apiError('LB_IMMUTABLE', 'amphora', amp.id);
  if (lb) await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'amphora.delete', payload: { amphora_id: amp.id } });
}

export async function failoverAmphora(trx: Trx, amp: AmphoraRow, lb: Owner): Promise<void> {
  await lockForChildChange(trx, lb.id);
  await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'amphora.failover', payload: { amphora_id: amp.id } });
}

/** Refreshes the amphora agent's configuration: no status changes. */
export async function refreshAmphoraConfig(trx: Trx, amp: AmphoraRow, lb: Owner): Promise<void> {
  await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'amphora.config', payload: { amphora_id: amp.id } });
}

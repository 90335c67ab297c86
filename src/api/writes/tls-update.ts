/** The update job of an object that names certificate references (a listener, a pool). */
import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { enqueue } from '../../controller/jobs.js';
import type { TlsChange } from '../../controller/consumers.js';
import type { LoadBalancerRow } from '../views/loadbalancer.js';

/**
 * When the body named references (`named`), the job carries what they replace: the job
 * releases the old ones once the new ones serve, or restores them (controller/consumers.ts).
 */
export async function enqueueTlsUpdate(trx: Transaction<Database>, lb: Pick<LoadBalancerRow, 'id' | 'provider'>, named: boolean, change: TlsChange): Promise<void> {
  const operation = change.kind === 'listener' ? 'listener.update' : 'pool.update';
  await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation, payload: named ? { tls_change: change } : undefined });
}

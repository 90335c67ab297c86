/**
 * What a write of a listener or pool owes the key manager: the objects are consumers of the
 * certificate references they use, and an update's job carries the references it replaces.
 */
import type { Transaction } from 'kysely';
import type { BaseLogger } from 'pino';
import type { ApiDeps } from '../context.js';
import type { Database } from '../../db/schema.js';
import { enqueue } from '../../controller/jobs.js';
import { consumerOf, listenerRefsInUse, poolRefsInUse, syncConsumers, type TlsChange } from '../../certificate-use/consumers.js';
import type { LoadBalancerRow } from '../views/loadbalancer.js';
import type { ListenerRow } from '../views/listener.js';
import type { PoolRow } from '../views/pool.js';

type Log = Pick<BaseLogger, 'warn'>;

/**
 * When the body named references (`named`), the job carries what they replace: the job
 * releases the old ones once the new ones serve, or restores them (certificate-use/consumers.ts).
 */
export async function enqueueTlsUpdate(trx: Transaction<Database>, lb: Pick<LoadBalancerRow, 'id' | 'provider'>, named: boolean, change: TlsChange): Promise<void> {
  const operation = change.kind === 'listener' ? 'listener.update' : 'pool.update';
  await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation, payload: named ? { tls_change: change } : undefined });
}

/**
 * After the transaction: the listener becomes a consumer of the references it now uses. The
 * ones an update replaced stay registered until its job has ended.
 */
export async function registerListenerRefs(deps: Pick<ApiDeps, 'keyManager'>, log: Log, row: ListenerRow): Promise<void> {
  await syncConsumers(deps.keyManager, log, consumerOf('listener', row.id), [], listenerRefsInUse(row));
}

/** As registerListenerRefs, for a pool. */
export async function registerPoolRefs(deps: Pick<ApiDeps, 'keyManager'>, log: Log, row: PoolRow): Promise<void> {
  await syncConsumers(deps.keyManager, log, consumerOf('pool', row.id), [], poolRefsInUse(row));
}

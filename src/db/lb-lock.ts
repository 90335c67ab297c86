/**
 * The load balancer is the lock. A change atomically moves the LB from an allowed state to
 * its pending state in the caller's transaction; when the LB is elsewhere, the change is
 * refused with Octavia's 409 wording, which clients retry on. Both the API and the stale
 * detector's failovers (providers/amphora/health/stale.ts) take it.
 */
import type { Transaction } from 'kysely';
import type { Database } from './schema.js';
import { apiError } from '../domain/errors.js';
import { timestamp } from '../domain/time.js';
import { poolListenerIds } from './pool-listeners.js';
import type { ProvisioningStatus } from '../domain/enums.js';

type Trx = Transaction<Database>;

async function transition(trx: Trx, lbId: string, from: readonly ProvisioningStatus[], to: ProvisioningStatus): Promise<string | null> {
  const r = await trx
    .updateTable('load_balancer')
    .set({ provisioning_status: to, updated_at: timestamp() })
    .where('id', '=', lbId)
    .where('provisioning_status', 'in', [...from])
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) === 1) return null;
  const lb = await trx.selectFrom('load_balancer').select('provisioning_status').where('id', '=', lbId).executeTakeFirst();
  return lb?.provisioning_status ?? 'DELETED';
}

/** For changes to a child object: the LB must be ACTIVE; it becomes PENDING_UPDATE. */
export async function lockForChildChange(trx: Trx, lbId: string): Promise<void> {
  if ((await transition(trx, lbId, ['ACTIVE'], 'PENDING_UPDATE')) !== null) throw apiError('LB_IMMUTABLE', 'Load Balancer', lbId);
}

/** For LB update/delete/failover, with the states each allows. */
export async function lockLoadBalancer(trx: Trx, lbId: string, from: readonly ProvisioningStatus[], to: 'PENDING_UPDATE' | 'PENDING_DELETE'): Promise<void> {
  const state = await transition(trx, lbId, from, to);
  if (state !== null) throw apiError('LB_INVALID_STATE', state, lbId);
}

/** Marks objects of one table pending in the same transaction. */
export async function markPending(
  trx: Trx,
  table: 'listener' | 'pool' | 'member' | 'health_monitor' | 'l7policy' | 'l7rule',
  ids: readonly string[],
  status: 'PENDING_UPDATE' | 'PENDING_DELETE',
): Promise<void> {
  if (!ids.length) return;
  await trx.updateTable(table).set({ provisioning_status: status, updated_at: timestamp() }).where('id', 'in', [...ids]).execute();
}

/** Parent objects other than the LB must be ACTIVE too (pool for members/monitors, policy for rules). */
export function requireActive(status: string, label: string, id: string): void {
  if (status !== 'ACTIVE') throw apiError('LB_IMMUTABLE', label, id);
}

/** §5.2: a pool change also puts every listener using the pool in PENDING_UPDATE. */
export async function markPoolListenersPending(trx: Trx, poolId: string): Promise<void> {
  const listeners = (await poolListenerIds(trx, [poolId])).get(poolId) ?? [];
  await markPending(trx, 'listener', listeners, 'PENDING_UPDATE');
}

/**
 * Locks for a change below a pool (member, health monitor): the pool must be ACTIVE, then
 * the LB, the pool's listeners and the pool go PENDING_UPDATE, all in `trx`.
 */
export async function lockPoolForChildChange(trx: Trx, poolId: string): Promise<void> {
  const pool = await trx.selectFrom('pool').select(['provisioning_status', 'load_balancer_id']).where('id', '=', poolId).executeTakeFirstOrThrow();
  requireActive(pool.provisioning_status, 'Pool', poolId);
  await lockForChildChange(trx, pool.load_balancer_id);
  await markPoolListenersPending(trx, poolId);
  await markPending(trx, 'pool', [poolId], 'PENDING_UPDATE');
}

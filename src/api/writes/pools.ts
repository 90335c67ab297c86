/** Pool writes: the insert the endpoint and graph create share, and the locked create, update and delete. */
import type { Kysely, Transaction } from 'kysely';
import type { ApiDeps } from '../context.js';
import type { Database } from '../../db/schema.js';
import { apiError } from '../../domain/errors.js';
import type { RequestContext } from '../../domain/context.js';
import { timestamp } from '../../domain/time.js';
import type { Static } from '../../domain/schema-kit.js';
import type { PoolCreate, PoolUpdateBody } from '../../domain/schemas/pool.js';
import { poolSpecForCreate, poolSpecForUpdate } from '../../domain/rules/pool.js';
import { enqueue } from '../../controller/jobs.js';
import { poolSpecOf } from '../views/pool.js';
import { poolCodec, type PoolRecord, type PoolRow } from '../../db/records/pool.js';
import type { LoadBalancerRow } from '../../db/records/load-balancer.js';
import type { HealthMonitorRow } from '../../db/records/health-monitor.js';
import type { MemberRow } from '../../db/records/member.js';
import { writeTags } from '../tags.js';
import { lockForChildChange, markPending, markPoolListenersPending } from '../../db/lb-lock.js';
import { checkQuota } from '../quota.js';
import { parentLoadBalancer } from '../loaders.js';
import { namedUpdate, newLoadBalancerChild } from './named.js';
import { enqueueTlsUpdate, poolUser } from './tls-consumers.js';
import { insertMember } from './members.js';
import { insertHealthMonitor } from './healthmonitors.js';
import { forCreate, namesAny, poolTlsRefs, touchesPoolRefs, verifyTlsRefs } from '../tls-refs.js';
import type { Caller } from '../../keymanager/index.js';

type Q = Kysely<Database> | Transaction<Database>;
type Trx = Transaction<Database>;
type UpdateInput = Static<typeof PoolUpdateBody>['pool'];

/** A pool with its protocol and algorithm known: POST /pools, or a full graph definition. */
export type PoolInput = Omit<Static<typeof PoolCreate>, 'loadbalancer_id' | 'listener_id' | 'project_id' | 'tenant_id'>;

/** `listener_id` on POST /pools: a listener of the pool's load balancer whose protocol it suits. */
export async function listenerForNewPool(db: Q, listenerId: string) {
  const listener = await db.selectFrom('listener').select(['id', 'load_balancer_id', 'protocol']).where('id', '=', listenerId).executeTakeFirst();
  if (!listener) throw apiError('NOT_FOUND', 'Listener', listenerId);
  return listener;
}

type NewPoolListener = Awaited<ReturnType<typeof listenerForNewPool>>;

/** The references a new pool names; the pool rules first, as Octavia judges the references only once they are allowed at all. */
export async function verifyNewPoolRefs(deps: ApiDeps, caller: Caller, input: PoolInput): Promise<void> {
  if (namesAny(poolTlsRefs(input))) await verifyTlsRefs(deps.keyManager, caller, [forCreate(poolTlsRefs(poolSpecForCreate(input)))]);
}

/** The references an update names, judged against the pool they would leave. */
export async function verifyPoolUpdateRefs(deps: ApiDeps, caller: Caller, row: PoolRow, b: UpdateInput): Promise<void> {
  if (touchesPoolRefs(b)) await verifyTlsRefs(deps.keyManager, caller, [{ named: poolTlsRefs(b), result: poolTlsRefs(poolSpecForUpdate(poolSpecOf(row), b)) }]);
}

/** A new pool with the monitor and members written with it. */
export interface NewPool {
  pool: PoolRow;
  monitor: HealthMonitorRow | null;
  members: MemberRow[];
}

/**
 * Validates and writes a new pool (PENDING_CREATE) of `lb`, then its health monitor and
 * members, in the caller's transaction. Locking, quota and the job are the caller's.
 */
export async function insertPool(deps: ApiDeps, trx: Trx, ctx: RequestContext, lb: LoadBalancerRow, input: PoolInput): Promise<NewPool> {
  const spec = poolSpecForCreate(input);
  const record: PoolRecord = { ...newLoadBalancerChild(lb, input), ...spec };
  deps.providers.forLoadBalancer(lb.provider).checks.pool?.(record);
  const row = poolCodec.encode(record);
  await trx.insertInto('pool').values(row).execute();
  await writeTags(trx, row.id, input.tags);
  // The monitor first: members created after it start OFFLINE rather than NO_MONITOR.
  const monitor = input.healthmonitor ? await insertHealthMonitor(deps, trx, ctx, row, input.healthmonitor) : null;
  const members: MemberRow[] = [];
  for (const member of input.members ?? []) members.push(await insertMember(deps, trx, row, member, lb));
  return { pool: row, monitor, members };
}

/** `listener_id` on POST /pools: the new pool becomes that listener's default pool. */
async function attachAsDefaultPool(trx: Trx, listenerId: string, poolId: string): Promise<void> {
  const listener = await trx.selectFrom('listener').select('default_pool_id').where('id', '=', listenerId).executeTakeFirstOrThrow();
  if (listener.default_pool_id) throw apiError('DUPLICATE', 'This listener already has a default pool');
  await trx.updateTable('listener').set({ default_pool_id: poolId }).where('id', '=', listenerId).execute();
}

/** POST /pools: the LB locked, the quota taken, the pool (and what it carries) written, a listener given its default pool, the job enqueued. */
export async function createPool(deps: ApiDeps, trx: Trx, ctx: RequestContext, lb: LoadBalancerRow, listener: NewPoolListener | undefined, input: PoolInput): Promise<PoolRow> {
  await lockForChildChange(trx, lb.id);
  // The health monitor's quota is checked by insertHealthMonitor itself.
  await checkQuota(trx, deps.config, lb.project_id, { pool: 1, member: input.members?.length ?? 0 }, deps.db.dialect);
  const { pool } = await insertPool(deps, trx, ctx, lb, input);
  if (listener) {
    await attachAsDefaultPool(trx, listener.id, pool.id);
    await markPending(trx, 'listener', [listener.id], 'PENDING_UPDATE');
  }
  await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'pool.create' });
  return pool;
}

/** As updateListener, for a pool: the listeners it serves go PENDING_UPDATE with it. */
export async function updatePool(deps: ApiDeps, trx: Trx, row: PoolRow, b: UpdateInput): Promise<PoolRow> {
  await lockForChildChange(trx, row.load_balancer_id);
  const { id } = row;
  const current = await trx.selectFrom('pool').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const stored = poolCodec.decode(current);
  const lb = await parentLoadBalancer(trx, current.load_balancer_id);
  const spec = poolSpecForUpdate(poolSpecOf(current), b);
  const record: PoolRecord = {
    ...stored,
    ...spec,
    ...namedUpdate(stored, b),
    provisioning_status: 'PENDING_UPDATE',
    updated_at: timestamp(),
  };
  deps.providers.forLoadBalancer(lb.provider).checks.pool?.(record);
  const updated = poolCodec.encode(record);
  await markPoolListenersPending(trx, id);
  await trx.updateTable('pool').set(updated).where('id', '=', id).execute();
  await writeTags(trx, id, b.tags);
  await enqueueTlsUpdate(trx, lb, poolUser, b, current, updated);
  return updated;
}

/** Refused while an L7 policy redirects to the pool. */
export async function deletePool(trx: Trx, row: PoolRow): Promise<void> {
  const policy = await trx.selectFrom('l7policy').select('id').where('redirect_pool_id', '=', row.id).orderBy('created_at').executeTakeFirst();
  if (policy) throw apiError('CONFLICT', `Pool ${row.id} is in use by L7 policy ${policy.id}`);
  await lockForChildChange(trx, row.load_balancer_id);
  const lb = await parentLoadBalancer(trx, row.load_balancer_id);
  await markPoolListenersPending(trx, row.id);
  await markPending(trx, 'pool', [row.id], 'PENDING_DELETE');
  await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'pool.delete' });
}

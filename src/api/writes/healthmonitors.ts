/** Health monitor writes: the insert pool and graph creates share, and the locked create, update and delete. */
import { randomUUID } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { ApiDeps } from '../context.js';
import type { Database } from '../../db/schema.js';
import type { PoolRow } from '../../db/records/pool.js';
import { apiError } from '../../domain/errors.js';
import type { RequestContext } from '../../domain/context.js';
import { timestamp } from '../../domain/time.js';
import { HealthMonitorDefaults } from '../../domain/defaults.js';
import type { HealthMonitorSingleCreate, HealthMonitorUpdateBody } from '../../domain/schemas/healthmonitor.js';
import type { Static } from '../../domain/schema-kit.js';
import {
  resolveHealthMonitorCreate,
  resolveHealthMonitorUpdate,
  type HealthMonitorAttrs,
  type HealthMonitorSettings,
} from '../../domain/rules/healthmonitor.js';
import { authorize } from '../../identity/policy.js';
import { enqueue } from '../../controller/jobs.js';
import { healthMonitorCodec, type HealthMonitorRow } from '../../db/records/health-monitor.js';
import { poolCodec } from '../../db/records/pool.js';
import { settingsOf } from '../../db/records/tree-object.js';
import { writeTags } from '../tags.js';
import { lockPoolForChildChange, markPending } from '../../db/lb-lock.js';
import { checkQuota } from '../quota.js';
import { parentPool, providerOf } from '../loaders.js';

type Trx = Transaction<Database>;
type UpdateInput = Static<typeof HealthMonitorUpdateBody>['healthmonitor'];

function monitorSettings(deps: ApiDeps): HealthMonitorSettings {
  return { allowPing: deps.config.api.allowPingHealthMonitors, udpConnectMinDelay: HealthMonitorDefaults.udp_connect_min_interval };
}


/**
 * Validates and writes a new monitor (PENDING_CREATE) for `pool`, with its tags, in the
 * caller's transaction; checks RBAC, the provider and the quota. Locking and the job are the
 * caller's: the endpoint locks the tree, graph create relies on the new LB's own state.
 */
export async function insertHealthMonitor(
  deps: ApiDeps,
  trx: Trx,
  ctx: RequestContext,
  pool: PoolRow,
  input: Static<typeof HealthMonitorSingleCreate>,
): Promise<HealthMonitorRow> {
  authorize(ctx, 'healthmonitor', 'post', pool.project_id);
  const attrs = resolveHealthMonitorCreate(input, pool.protocol, monitorSettings(deps));
  deps.providers.forLoadBalancer(await providerOf(trx, pool.load_balancer_id)).checks.healthMonitor?.(attrs, poolCodec.decode(pool));
  await checkQuota(trx, deps.config, pool.project_id, { health_monitor: 1 }, deps.db.dialect);
  if (await trx.selectFrom('health_monitor').select('id').where('pool_id', '=', pool.id).executeTakeFirst()) throw apiError('HM_DUPLICATE');
  const row: HealthMonitorRow = {
    id: randomUUID(),
    project_id: pool.project_id,
    pool_id: pool.id,
    ...healthMonitorCodec.encode(attrs),
    provisioning_status: 'PENDING_CREATE',
    operating_status: 'OFFLINE',
    created_at: timestamp(),
    updated_at: null,
  };
  await trx.insertInto('health_monitor').values(row).execute();
  await writeTags(trx, row.id, input.tags);
  return row;
}

/** POST /healthmonitors: the monitor written (its checks first), then the tree locked and the job enqueued. */
export async function createHealthMonitor(deps: ApiDeps, trx: Trx, ctx: RequestContext, pool: PoolRow, input: Static<typeof HealthMonitorSingleCreate>): Promise<HealthMonitorRow> {
  const hm = await insertHealthMonitor(deps, trx, ctx, pool, input);
  await lockPoolForChildChange(trx, pool.id);
  await enqueue(trx, { loadBalancerId: pool.load_balancer_id, provider: await providerOf(trx, pool.load_balancer_id), operation: 'healthmonitor.create' });
  return hm;
}

/** A PUT's outcome, checked against the monitor and its pool as read before the transaction. */
export interface HealthMonitorChange {
  merged: HealthMonitorAttrs;
  provider: string;
}

export async function checkHealthMonitorUpdate(deps: ApiDeps, hm: HealthMonitorRow, pool: PoolRow, b: UpdateInput): Promise<HealthMonitorChange> {
  const merged = resolveHealthMonitorUpdate(settingsOf(healthMonitorCodec.decode(hm), 'pool_id'), b, pool.protocol, monitorSettings(deps));
  const provider = await providerOf(deps.db.kysely, pool.load_balancer_id);
  deps.providers.forLoadBalancer(provider).checks.healthMonitor?.(merged, poolCodec.decode(pool));
  return { merged, provider };
}

/** Writes a checked change under the pool's lock; returns the monitor as it now stands. */
export async function updateHealthMonitor(trx: Trx, hm: HealthMonitorRow, pool: PoolRow, change: HealthMonitorChange, tags: string[] | undefined): Promise<HealthMonitorRow> {
  await lockPoolForChildChange(trx, pool.id);
  await trx.updateTable('health_monitor').set({ ...healthMonitorCodec.encode(change.merged), provisioning_status: 'PENDING_UPDATE', updated_at: timestamp() }).where('id', '=', hm.id).execute();
  await writeTags(trx, hm.id, tags);
  await enqueue(trx, { loadBalancerId: pool.load_balancer_id, provider: change.provider, operation: 'healthmonitor.update' });
  return trx.selectFrom('health_monitor').selectAll().where('id', '=', hm.id).executeTakeFirstOrThrow();
}

export async function deleteHealthMonitor(trx: Trx, hm: HealthMonitorRow): Promise<void> {
  const pool = await parentPool(trx, hm.pool_id);
  await lockPoolForChildChange(trx, pool.id);
  await markPending(trx, 'health_monitor', [hm.id], 'PENDING_DELETE');
  await enqueue(trx, { loadBalancerId: pool.load_balancer_id, provider: await providerOf(trx, pool.load_balancer_id), operation: 'healthmonitor.delete' });
}

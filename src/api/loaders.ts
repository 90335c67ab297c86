/**
 * The objects a request names by id, loaded as Octavia answers them: 404 when missing (or
 * DELETED), 403 when the caller may not act on them, a routing 404 (pecan body) when the
 * parent in a sub-resource's path is missing.
 */
import type { Kysely, Transaction } from 'kysely';
import type { ApiDeps } from './context.js';
import type { Database } from '../db/schema.js';
import { apiError } from '../domain/errors.js';
import type { RequestContext } from '../domain/context.js';
import { authorize, type Action } from '../identity/policy.js';
import type { ProviderDriver } from '../provider-contract/provider.js';
import type { LoadBalancerRow } from '../db/records/load-balancer.js';
import type { ListenerRow } from '../db/records/listener.js';
import type { PoolRow } from '../db/records/pool.js';
import type { MemberRow } from '../db/records/member.js';
import type { HealthMonitorRow } from '../db/records/health-monitor.js';
import type { L7PolicyRow } from '../db/records/l7policy.js';
import type { L7RuleRow } from '../db/records/l7rule.js';

type Q = Kysely<Database> | Transaction<Database>;

/** Loads a load balancer the caller may act on. */
export async function loadBalancerFor(deps: ApiDeps, ctx: RequestContext, id: string, action: 'get_one' | 'put' | 'delete' | 'get_stats' | 'get_status' | 'put_failover' | 'put_migrate'): Promise<LoadBalancerRow> {
  const row = await parentLoadBalancer(deps.db.kysely, id);
  authorize(ctx, 'loadbalancer', action, row.project_id);
  return row;
}

/** The load balancer a child is created on or belongs to; a missing one is a 404, as in Octavia. */
export async function parentLoadBalancer(db: Q, id: string): Promise<LoadBalancerRow> {
  const lb = await db.selectFrom('load_balancer').selectAll().where('id', '=', id).executeTakeFirst();
  if (!lb || lb.provisioning_status === 'DELETED') throw apiError('NOT_FOUND', 'Load Balancer', id);
  return lb;
}

/** Loads a listener the caller may act on. */
export async function listenerFor(deps: ApiDeps, ctx: RequestContext, id: string, action: Action): Promise<ListenerRow> {
  const row = await deps.db.kysely.selectFrom('listener').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row || row.provisioning_status === 'DELETED') throw apiError('NOT_FOUND', 'Listener', id);
  authorize(ctx, 'listener', action, row.project_id);
  return row;
}

/** The listener a policy is created on or belongs to. */
export async function parentListener(db: Q, id: string): Promise<ListenerRow> {
  const listener = await db.selectFrom('listener').selectAll().where('id', '=', id).executeTakeFirst();
  if (!listener) throw apiError('NOT_FOUND', 'Listener', id);
  return listener;
}

/** Loads a pool the caller may act on. */
export async function poolFor(deps: ApiDeps, ctx: RequestContext, id: string, action: Action): Promise<PoolRow> {
  const row = await deps.db.kysely.selectFrom('pool').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row || row.provisioning_status === 'DELETED') throw apiError('NOT_FOUND', 'Pool', id);
  authorize(ctx, 'pool', action, row.project_id);
  return row;
}

/** The pool a monitor is created on or belongs to. */
export async function parentPool(db: Q, id: string): Promise<PoolRow> {
  const pool = await db.selectFrom('pool').selectAll().where('id', '=', id).executeTakeFirst();
  if (!pool) throw apiError('NOT_FOUND', 'Pool', id);
  return pool;
}

/** The pool of a member path. */
export async function poolOfPath(deps: ApiDeps, poolId: string): Promise<PoolRow> {
  const pool = await deps.db.kysely.selectFrom('pool').selectAll().where('id', '=', poolId).executeTakeFirst();
  if (!pool || pool.provisioning_status === 'DELETED') throw apiError('PARENT_NOT_FOUND', 'Pool', poolId);
  return pool;
}

/** A member of `pool`; one of another pool is as missing as one that does not exist. */
export async function memberOf(deps: ApiDeps, pool: PoolRow, id: string): Promise<MemberRow> {
  const row = await deps.db.kysely.selectFrom('member').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row || row.pool_id !== pool.id || row.provisioning_status === 'DELETED') throw apiError('NOT_FOUND', 'Member', id);
  return row;
}

/** Loads a health monitor the caller may act on. */
export async function healthMonitorFor(deps: ApiDeps, ctx: RequestContext, id: string, action: 'get_one' | 'put' | 'delete'): Promise<HealthMonitorRow> {
  const row = await deps.db.kysely.selectFrom('health_monitor').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw apiError('NOT_FOUND', 'Health Monitor', id);
  authorize(ctx, 'healthmonitor', action, row.project_id);
  return row;
}

/** Loads an L7 policy the caller may act on. */
export async function l7PolicyFor(deps: ApiDeps, ctx: RequestContext, id: string, action: 'get_one' | 'put' | 'delete'): Promise<L7PolicyRow> {
  const row = await deps.db.kysely.selectFrom('l7policy').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw apiError('NOT_FOUND', 'L7 Policy', id);
  authorize(ctx, 'l7policy', action, row.project_id);
  return row;
}

/** The policy of a rule path, with the load balancer and provider its rules change. */
export interface PolicyContext {
  policy: L7PolicyRow;
  loadBalancerId: string;
  driver: ProviderDriver;
  provider: string;
}

export async function policyOfPath(deps: ApiDeps, policyId: string): Promise<PolicyContext> {
  const row = await deps.db.kysely
    .selectFrom('l7policy')
    .innerJoin('listener', 'listener.id', 'l7policy.listener_id')
    .innerJoin('load_balancer', 'load_balancer.id', 'listener.load_balancer_id')
    .selectAll('l7policy')
    .select(['load_balancer.id as lb_id', 'load_balancer.provider as lb_provider'])
    .where('l7policy.id', '=', policyId)
    .executeTakeFirst();
  if (!row) throw apiError('PARENT_NOT_FOUND', 'L7 Policy', policyId);
  const { lb_id, lb_provider, ...policy } = row;
  return { policy, loadBalancerId: lb_id, provider: lb_provider, driver: deps.providers.forLoadBalancer(lb_provider) };
}

/** Loads a rule of `policyId` the caller may act on. */
export async function ruleFor(deps: ApiDeps, ctx: RequestContext, policyId: string, id: string, action: 'get_one' | 'put' | 'delete'): Promise<L7RuleRow> {
  const row = await deps.db.kysely.selectFrom('l7rule').selectAll().where('id', '=', id).where('l7policy_id', '=', policyId).executeTakeFirst();
  if (!row) throw apiError('NOT_FOUND', 'L7 Rule', id);
  authorize(ctx, 'l7rule', action, row.project_id);
  return row;
}

/** The provider that runs a load balancer's jobs. */
export async function providerOf(q: Q, lbId: string): Promise<string> {
  return (await q.selectFrom('load_balancer').select('provider').where('id', '=', lbId).executeTakeFirstOrThrow()).provider;
}

/**
 * Octavia's default RBAC: the new defaults (Keystone's admin/member/reader roles) OR-ed with
 * the deprecated `load-balancer_*` roles, so deployments that still grant those keep working.
 * Every rule is project-scoped, as Octavia declares `scope_types = [project]`.
 */
import type { RequestContext } from '../domain/context.js';
import { apiError } from '../domain/errors.js';

export type Resource =
  | 'loadbalancer'
  | 'listener'
  | 'pool'
  | 'member'
  | 'healthmonitor'
  | 'l7policy'
  | 'l7rule'
  | 'quota'
  | 'amphora'
  | 'provider'
  | 'provider-flavor'
  | 'provider-availability-zone'
  | 'flavor'
  | 'flavor-profile'
  | 'availability-zone'
  | 'availability-zone-profile'
  /** Ostia's Prometheus endpoint: figures of every project. */
  | 'metrics';

export type Action =
  | 'get_all'
  | 'get_all-global'
  | 'get_one'
  | 'post'
  | 'put'
  | 'delete'
  | 'get_stats'
  | 'get_status'
  | 'put_failover'
  | 'put_config'
  | 'get_defaults';

/** `target`: the project owning the object acted on. */
type Rule = (ctx: RequestContext, target: string | null) => boolean;

const hasRole =
  (...roles: string[]): Rule =>
  (ctx) =>
    roles.some((r) => ctx.roles.includes(r));
const anyOf =
  (...rules: Rule[]): Rule =>
  (ctx, target) =>
    rules.some((rule) => rule(ctx, target));
const owner: Rule = (ctx, target) => ctx.projectId !== null && ctx.projectId === target;
const ownerWith =
  (...roles: string[]): Rule =>
  (ctx, target) =>
    hasRole(...roles)(ctx, target) && owner(ctx, target);

// Building blocks, named as in octavia/policies/keystone_default_roles.py; the second role of each is the legacy one.
const admin: Rule = (ctx, target) => ctx.isAdmin || hasRole('admin', 'load-balancer_admin')(ctx, target);
const globalObserver = hasRole('admin', 'load-balancer_global_observer');
const quotaAdmin = hasRole('admin', 'load-balancer_quota_admin');
const memberAndOwner = ownerWith('member', 'load-balancer_member');
const observerAndOwner = ownerWith('reader', 'load-balancer_observer');
const service = hasRole('service');

// The rules applied to API endpoints (octavia/policies/base.py).
const read = anyOf(observerAndOwner, globalObserver, memberAndOwner, admin);
const readGlobal = anyOf(globalObserver, admin);
const write = anyOf(memberAndOwner, admin);
const readQuota = anyOf(read, quotaAdmin);
const readQuotaGlobal = anyOf(globalObserver, quotaAdmin, admin);
const writeQuota = anyOf(quotaAdmin, admin);

const crud = { get_all: read, 'get_all-global': readGlobal, get_one: read, post: write, put: write, delete: write };
const adminOnly = (...actions: Action[]) => Object.fromEntries(actions.map((a) => [a, admin]));

/** Pairs missing here are refused, as oslo.policy refuses an undefined rule. */
const rules: Record<Resource, Partial<Record<Action, Rule>>> = {
  loadbalancer: { ...crud, get_stats: read, get_status: read, put_failover: admin },
  listener: { ...crud, get_stats: read },
  pool: crud,
  member: { get_all: anyOf(read, service), get_one: read, post: write, put: write, delete: write },
  healthmonitor: crud,
  l7policy: crud,
  l7rule: { get_all: read, get_one: read, post: write, put: write, delete: write },
  quota: { get_all: readQuota, 'get_all-global': readQuotaGlobal, get_one: readQuota, get_defaults: readQuota, put: writeQuota, delete: writeQuota },
  amphora: adminOnly('get_all', 'get_one', 'delete', 'put_config', 'put_failover', 'get_stats'),
  provider: { get_all: read },
  'provider-flavor': adminOnly('get_all'),
  'provider-availability-zone': adminOnly('get_all'),
  flavor: { get_all: read, get_one: read, post: admin, put: admin, delete: admin },
  'flavor-profile': adminOnly('get_all', 'get_one', 'post', 'put', 'delete'),
  'availability-zone': { get_all: read, get_one: read, post: admin, put: admin, delete: admin },
  'availability-zone-profile': adminOnly('get_all', 'get_one', 'post', 'put', 'delete'),
  metrics: { get_all: readGlobal },
};

/**
 * `targetProjectId` defaults to the caller's own project, which is what Octavia passes for
 * objects no project owns (flavors, availability zones, providers, amphorae).
 * Under noauth (`isAdmin`) everything is allowed, even without a project.
 */
export function allowed(ctx: RequestContext, resource: Resource, action: Action, targetProjectId: string | null = ctx.projectId): boolean {
  const rule = rules[resource][action];
  if (!rule) return false;
  if (ctx.isAdmin) return true;
  return ctx.projectId !== null && rule(ctx, targetProjectId);
}

export function authorize(ctx: RequestContext, resource: Resource, action: Action, targetProjectId: string | null = ctx.projectId): void {
  if (!allowed(ctx, resource, action, targetProjectId)) throw apiError('POLICY_FORBIDDEN');
}

/** Whether lists may span every project (`get_all-global`); for quotas use allowed(ctx, 'quota', 'get_all-global'). */
export function canSeeAllProjects(ctx: RequestContext): boolean {
  return allowed(ctx, 'loadbalancer', 'get_all-global');
}

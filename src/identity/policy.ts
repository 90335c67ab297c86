/**
 * Octavia's RBAC, in the three policies it ships (`api.policy`). Every endpoint names one of
 * Octavia's building-block rules (octavia/policies/base.py); a policy mode is a choice of those
 * rules, as Octavia's policy files override exactly them. Every rule is project-scoped, as
 * Octavia declares `scope_types = [project]`.
 */
import type { PolicyMode, RequestContext } from '../domain/context.js';
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
  | 'metrics'
  /** Ostia's capacity plan and provider advice (`/v2/ostia/plan`, `/v2/ostia/advice`): every project's load balancers and quotas, and this machine. */
  | 'planning';

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
  | 'put_migrate'
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

/** The rules endpoints are written in, named as Octavia's `load-balancer:*` rules. */
interface RuleSet {
  admin: Rule;
  read: Rule;
  readGlobal: Rule;
  write: Rule;
  readQuota: Rule;
  readQuotaGlobal: Rule;
  writeQuota: Rule;
  /** Listing a pool's members: `read`, widened for `service` where the policy says so. */
  listMembers: Rule;
}

interface Personas {
  admin: Rule;
  globalObserver: Rule;
  quotaAdmin: Rule;
  memberAndOwner: Rule;
  observerAndOwner: Rule;
}

/** How base.py composes its API rules from the personas. */
function fromPersonas(p: Personas): Omit<RuleSet, 'listMembers'> {
  const read = anyOf(p.observerAndOwner, p.globalObserver, p.memberAndOwner, p.admin);
  return {
    admin: p.admin,
    read,
    readGlobal: anyOf(p.globalObserver, p.admin),
    write: anyOf(p.memberAndOwner, p.admin),
    readQuota: anyOf(read, p.quotaAdmin),
    readQuotaGlobal: anyOf(p.globalObserver, p.quotaAdmin, p.admin),
    writeQuota: anyOf(p.quotaAdmin, p.admin),
  };
}

/** Octavia's `context_is_admin` as oslo.policy evaluates it with its deprecated alternative OR-ed in (enforce_new_defaults off). */
const contextIsAdmin = hasRole('admin', 'load-balancer_admin');

/**
 * `advanced`: Octavia 11's in-code defaults as it runs them (enforce_new_defaults off, so each
 * rule is OR-ed with its deprecated form, which needs no Keystone `member`/`reader` besides the
 * `load-balancer_*` role). Keystone's plain `member` and `reader` grant nothing.
 */
const advancedRules = fromPersonas({
  admin: contextIsAdmin,
  globalObserver: hasRole('load-balancer_global_observer'),
  quotaAdmin: hasRole('load-balancer_quota_admin'),
  memberAndOwner: ownerWith('load-balancer_member'),
  observerAndOwner: ownerWith('load-balancer_observer'),
});

/** `keystone_default_roles`: Keystone's admin/member/reader, OR-ed with the `load-balancer_*` roles so deployments granting those keep working. */
const keystoneRules = fromPersonas({
  admin: contextIsAdmin,
  globalObserver: hasRole('admin', 'load-balancer_global_observer'),
  quotaAdmin: hasRole('admin', 'load-balancer_quota_admin'),
  memberAndOwner: ownerWith('member', 'load-balancer_member'),
  observerAndOwner: ownerWith('reader', 'load-balancer_observer'),
});

/** `owner_or_admin` (admin_or_owner-policy.yaml): any caller scoped to the owning project, whatever its roles; cross-project only as admin. */
const adminOrOwner = anyOf(contextIsAdmin, owner);

const policies: Record<PolicyMode, RuleSet> = {
  advanced: { ...advancedRules, listMembers: advancedRules.read },
  keystone_default_roles: { ...keystoneRules, listMembers: anyOf(keystoneRules.read, hasRole('service')) },
  owner_or_admin: {
    admin: contextIsAdmin,
    read: adminOrOwner,
    readGlobal: contextIsAdmin,
    write: adminOrOwner,
    readQuota: adminOrOwner,
    readQuotaGlobal: contextIsAdmin,
    writeQuota: contextIsAdmin,
    listMembers: adminOrOwner,
  },
};

type RuleName = keyof RuleSet;
const crud = { get_all: 'read', 'get_all-global': 'readGlobal', get_one: 'read', post: 'write', put: 'write', delete: 'write' } as const;
const adminOnly = (...actions: Action[]): Partial<Record<Action, RuleName>> => Object.fromEntries(actions.map((a) => [a, 'admin']));

/** Which rule each endpoint applies (octavia/policies/*.py); pairs missing here are refused, as oslo.policy refuses an undefined rule. */
const endpoints: Record<Resource, Partial<Record<Action, RuleName>>> = {
  loadbalancer: { ...crud, get_stats: 'read', get_status: 'read', put_failover: 'admin', put_migrate: 'write' },
  listener: { ...crud, get_stats: 'read' },
  pool: crud,
  member: { get_all: 'listMembers', get_one: 'read', post: 'write', put: 'write', delete: 'write' },
  healthmonitor: crud,
  l7policy: crud,
  l7rule: { get_all: 'read', get_one: 'read', post: 'write', put: 'write', delete: 'write' },
  quota: { get_all: 'readQuota', 'get_all-global': 'readQuotaGlobal', get_one: 'readQuota', get_defaults: 'readQuota', put: 'writeQuota', delete: 'writeQuota' },
  amphora: adminOnly('get_all', 'get_one', 'delete', 'put_config', 'put_failover', 'get_stats'),
  provider: { get_all: 'read' },
  'provider-flavor': adminOnly('get_all'),
  'provider-availability-zone': adminOnly('get_all'),
  flavor: { get_all: 'read', get_one: 'read', post: 'admin', put: 'admin', delete: 'admin' },
  'flavor-profile': adminOnly('get_all', 'get_one', 'post', 'put', 'delete'),
  'availability-zone': { get_all: 'read', get_one: 'read', post: 'admin', put: 'admin', delete: 'admin' },
  'availability-zone-profile': adminOnly('get_all', 'get_one', 'post', 'put', 'delete'),
  metrics: { get_all: 'readGlobal' },
  planning: adminOnly('get_all'),
};

/**
 * Judged by the caller's policy (`ctx.policy`). `targetProjectId` defaults to the caller's own
 * project, which is what Octavia passes for objects no project owns (flavors, availability
 * zones, providers, amphorae). Under noauth (`isAdmin`) everything is allowed, even without a project.
 */
export function allowed(ctx: RequestContext, resource: Resource, action: Action, targetProjectId: string | null = ctx.projectId): boolean {
  const rule = endpoints[resource][action];
  if (!rule) return false;
  if (ctx.isAdmin) return true;
  return ctx.projectId !== null && policies[ctx.policy][rule](ctx, targetProjectId);
}

export function authorize(ctx: RequestContext, resource: Resource, action: Action, targetProjectId: string | null = ctx.projectId): void {
  if (!allowed(ctx, resource, action, targetProjectId)) throw apiError('POLICY_FORBIDDEN');
}

/** Whether lists may span every project (`get_all-global`); for quotas use allowed(ctx, 'quota', 'get_all-global'). */
export function canSeeAllProjects(ctx: RequestContext): boolean {
  return allowed(ctx, 'loadbalancer', 'get_all-global');
}

/** Quota rows → the wire form. */
import type { QuotaResource } from '../../domain/defaults.js';

/**
 * One value per resource under both spellings of the aliased keys: openstacksdk reads
 * `load_balancer`/`health_monitor`, python-octaviaclient `loadbalancer`/`healthmonitor`.
 */
export function quotaValues<T>(v: Readonly<Record<QuotaResource, T>>) {
  return {
    load_balancer: v.load_balancer,
    loadbalancer: v.load_balancer,
    listener: v.listener,
    member: v.member,
    pool: v.pool,
    health_monitor: v.health_monitor,
    healthmonitor: v.health_monitor,
    l7policy: v.l7policy,
    l7rule: v.l7rule,
  };
}

export function quotaView(projectId: string, limits: Readonly<Record<QuotaResource, number | null>>) {
  return { project_id: projectId, tenant_id: projectId, ...quotaValues(limits) };
}

/**
 * Ostia extension: one project's quota also reports what it currently uses, under `in_use`
 * (same keys as the limits). Octavia's clients ignore keys they do not know.
 */
export function quotaWithUsage(projectId: string, limits: Readonly<Record<QuotaResource, number>>, usage: Readonly<Record<QuotaResource, number>>) {
  return { ...quotaView(projectId, limits), in_use: quotaValues(usage) };
}

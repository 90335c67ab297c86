/**
 * The resource types the pages create, edit and delete: where each lives in the API, the key
 * its body is wrapped in, which parent it needs and the RBAC resource that guards it.
 */
import type { Resource } from '../../src/identity/policy.js';

export type Kind = 'loadbalancer' | 'listener' | 'pool' | 'member' | 'healthmonitor' | 'l7policy' | 'l7rule';

export interface KindInfo {
  label: string;
  /** The body's root key (`{"listener": {...}}`) and the collection's (`{"listeners": [...]}`). */
  root: string;
  plural: string;
  /** The query parameter naming the parent a new one is created under, if any path needs it. */
  parent: 'pool_id' | 'l7policy_id' | null;
  policy: Resource;
}

export const KINDS: Record<Kind, KindInfo> = {
  loadbalancer: { label: 'Load balancer', root: 'loadbalancer', plural: 'loadbalancers', parent: null, policy: 'loadbalancer' },
  listener: { label: 'Listener', root: 'listener', plural: 'listeners', parent: null, policy: 'listener' },
  pool: { label: 'Pool', root: 'pool', plural: 'pools', parent: null, policy: 'pool' },
  member: { label: 'Member', root: 'member', plural: 'members', parent: 'pool_id', policy: 'member' },
  healthmonitor: { label: 'Health monitor', root: 'healthmonitor', plural: 'healthmonitors', parent: null, policy: 'healthmonitor' },
  l7policy: { label: 'L7 policy', root: 'l7policy', plural: 'l7policies', parent: null, policy: 'l7policy' },
  l7rule: { label: 'L7 rule', root: 'rule', plural: 'rules', parent: 'l7policy_id', policy: 'l7rule' },
};

export const isKind = (k: string): k is Kind => k in KINDS;

/** The collection URL (`id` absent) or one object's URL. Members and rules sit under their pool or policy. */
export function resourceUrl(kind: Kind, parentId: string | null, id?: string): string {
  const base =
    kind === 'member' ? `/v2/lbaas/pools/${parentId}/members` : kind === 'l7rule' ? `/v2/lbaas/l7policies/${parentId}/rules` : `/v2/lbaas/${KINDS[kind].plural}`;
  return id ? `${base}/${id}` : base;
}

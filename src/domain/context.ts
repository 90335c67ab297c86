/**
 * The RBAC policies Octavia ships: `advanced` is its in-code default (the `load-balancer_*`
 * roles), the others are its sample policy files (etc/policy/keystone_default_roles-policy.yaml,
 * admin_or_owner-policy.yaml). The rules of each are in src/identity/policy.ts.
 */
export const PolicyModes = ['advanced', 'keystone_default_roles', 'owner_or_admin'] as const;
export type PolicyMode = (typeof PolicyModes)[number];

/** Who is calling, as the identity layer established it from the token. */
export interface Caller {
  readonly userId: string | null;
  readonly userName: string | null;
  /** null for an unscoped token: Octavia refuses those with 403. */
  readonly projectId: string | null;
  readonly roles: readonly string[];
  /** true under noauth, where Octavia treats every caller as admin. */
  readonly isAdmin: boolean;
}

/** A caller and the policy (`api.policy`) its requests are judged by, as Octavia's context carries its enforcer. */
export interface RequestContext extends Caller {
  readonly policy: PolicyMode;
}

import { createHash } from 'node:crypto';

/**
 * Roles that exist in every deployment even when no user holds them: Keystone's bootstrap
 * roles, Octavia's legacy `load-balancer_*` roles and `service`. The order is part of the
 * token format (tokens carry indexes into it), so only ever append.
 */
export const KNOWN_ROLES = [
  'admin',
  'member',
  'reader',
  'load-balancer_admin',
  'load-balancer_member',
  'load-balancer_observer',
  'load-balancer_global_observer',
  'load-balancer_quota_admin',
  'service',
] as const;

/** Keystone's bootstrap makes admin imply member and member imply reader; tokens carry the closure. */
const IMPLIES: Readonly<Record<string, readonly string[]>> = { admin: ['member'], member: ['reader'] };

/** Derived from the name so every process and every restart agrees without storing anything. */
export function roleId(name: string): string {
  return createHash('sha256').update(`role:${name}`).digest('hex').slice(0, 32);
}

/** The given roles plus every role they imply, each once, in first-seen order. */
export function withImpliedRoles(names: Iterable<string>): string[] {
  const out = new Set<string>();
  const add = (name: string): void => {
    if (out.has(name)) return;
    out.add(name);
    for (const implied of IMPLIES[name] ?? []) add(implied);
  };
  for (const name of names) add(name);
  return [...out];
}

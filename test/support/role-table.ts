/** The README's table of roles and policy modes, as data: the policy rules and the API are both tested against it. */
import type { PolicyMode } from '../../src/domain/context.js';

/** What a role may do, in the words of the README's table; 'everything' is all of them and more (administration). */
export type Grant = 'read own' | 'write own' | 'read all' | 'quotas' | 'list members' | 'everything';

/** Role held on the caller's project ('' = none) → what each api.policy grants it. */
const RW: Grant[] = ['read own', 'write own'];
const ALL: Grant[] = ['everything'];
export const ROLE_TABLE: Record<string, Record<PolicyMode, Grant[]>> = {
  '': { advanced: [], keystone_default_roles: [], owner_or_admin: RW },
  reader: { advanced: [], keystone_default_roles: ['read own'], owner_or_admin: RW },
  member: { advanced: [], keystone_default_roles: RW, owner_or_admin: RW },
  'load-balancer_observer': { advanced: ['read own'], keystone_default_roles: ['read own'], owner_or_admin: RW },
  'load-balancer_member': { advanced: RW, keystone_default_roles: RW, owner_or_admin: RW },
  'load-balancer_global_observer': { advanced: ['read all'], keystone_default_roles: ['read all'], owner_or_admin: RW },
  'load-balancer_quota_admin': { advanced: ['quotas'], keystone_default_roles: ['quotas'], owner_or_admin: RW },
  'load-balancer_admin': { advanced: ALL, keystone_default_roles: ALL, owner_or_admin: ALL },
  admin: { advanced: ALL, keystone_default_roles: ALL, owner_or_admin: ALL },
  service: { advanced: [], keystone_default_roles: ['list members'], owner_or_admin: RW },
};


import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PolicyModes, type PolicyMode, type RequestContext } from '../domain/context.js';
import { isApiError } from '../domain/errors.js';
import { allowed, authorize, canSeeAllProjects, type Action, type Resource } from './policy.js';
import { ROLE_TABLE, type Grant } from '../../test/support/role-table.js';
import { defaultConfig, ADMIN_PROJECT_ID, ALT_PROJECT_ID, DEMO_PROJECT_ID } from '../config.js';
import { Directory } from './directory.js';

const OWN = 'project-own';
const FOREIGN = 'project-foreign';
const ctx = (roles: string[], policy: PolicyMode = 'advanced', projectId: string | null = OWN, isAdmin = false): RequestContext => ({
  userId: 'u',
  userName: 'u',
  projectId,
  roles,
  isAdmin,
  policy,
});

/** A check lists the grants that open it; 'everything' opens every check. */
type Target = 'own' | 'foreign' | 'default';
type Check = [Resource, Action, Target, ...Grant[]];
const READ: Grant[] = ['read own', 'read all'];
const checks: Check[] = [
  // Reading the caller's own objects, and what no project owns.
  ['loadbalancer', 'get_all', 'own', ...READ],
  ['loadbalancer', 'get_one', 'own', ...READ],
  ['loadbalancer', 'get_stats', 'own', ...READ],
  ['loadbalancer', 'get_status', 'own', ...READ],
  ['listener', 'get_one', 'own', ...READ],
  ['listener', 'get_stats', 'own', ...READ],
  ['pool', 'get_all', 'own', ...READ],
  ['member', 'get_one', 'own', ...READ],
  ['member', 'get_all', 'own', ...READ, 'list members'],
  ['healthmonitor', 'get_one', 'own', ...READ],
  ['l7policy', 'get_all', 'own', ...READ],
  ['l7rule', 'get_one', 'own', ...READ],
  ['quota', 'get_one', 'own', ...READ, 'quotas'],
  ['quota', 'get_all', 'own', ...READ, 'quotas'],
  ['quota', 'get_defaults', 'own', ...READ, 'quotas'],
  ['provider', 'get_all', 'default', ...READ],
  ['flavor', 'get_all', 'default', ...READ],
  ['flavor', 'get_one', 'default', ...READ],
  ['availability-zone', 'get_all', 'default', ...READ],
  ['availability-zone', 'get_one', 'default', ...READ],
  // Changing the caller's own objects.
  ['loadbalancer', 'post', 'own', 'write own'],
  ['loadbalancer', 'put', 'own', 'write own'],
  ['loadbalancer', 'delete', 'own', 'write own'],
  ['listener', 'post', 'own', 'write own'],
  ['pool', 'put', 'own', 'write own'],
  ['member', 'post', 'own', 'write own'],
  ['member', 'delete', 'own', 'write own'],
  ['healthmonitor', 'post', 'own', 'write own'],
  ['l7policy', 'delete', 'own', 'write own'],
  ['l7rule', 'post', 'own', 'write own'],
  // Reading every project's objects.
  ['loadbalancer', 'get_one', 'foreign', 'read all'],
  ['loadbalancer', 'get_all-global', 'own', 'read all'],
  ['loadbalancer', 'get_status', 'foreign', 'read all'],
  ['listener', 'get_stats', 'foreign', 'read all'],
  ['listener', 'get_all-global', 'own', 'read all'],
  ['l7rule', 'get_all', 'foreign', 'read all'],
  ['member', 'get_one', 'foreign', 'read all'],
  ['member', 'get_all', 'foreign', 'read all', 'list members'],
  ['metrics', 'get_all', 'default', 'read all'],
  ['quota', 'get_one', 'foreign', 'read all', 'quotas'],
  ['quota', 'get_defaults', 'foreign', 'read all', 'quotas'],
  ['quota', 'get_all-global', 'own', 'read all', 'quotas'],
  // Setting quotas.
  ['quota', 'put', 'own', 'quotas'],
  ['quota', 'put', 'foreign', 'quotas'],
  ['quota', 'delete', 'foreign', 'quotas'],
  // Administration: other projects' objects, failover, amphorae, flavors, AZs, their profiles, provider capabilities.
  ['loadbalancer', 'post', 'foreign'],
  ['loadbalancer', 'put', 'foreign'],
  ['loadbalancer', 'delete', 'foreign'],
  ['pool', 'post', 'foreign'],
  ['member', 'put', 'foreign'],
  ['loadbalancer', 'put_failover', 'own'],
  ['amphora', 'get_all', 'default'],
  ['amphora', 'get_one', 'default'],
  ['amphora', 'get_stats', 'default'],
  ['amphora', 'put_failover', 'default'],
  ['amphora', 'put_config', 'default'],
  ['amphora', 'delete', 'default'],
  ['flavor', 'post', 'default'],
  ['flavor', 'put', 'default'],
  ['flavor', 'delete', 'default'],
  ['flavor-profile', 'get_all', 'default'],
  ['flavor-profile', 'get_one', 'default'],
  ['flavor-profile', 'post', 'default'],
  ['availability-zone', 'post', 'default'],
  ['availability-zone', 'put', 'default'],
  ['availability-zone-profile', 'get_one', 'default'],
  ['availability-zone-profile', 'delete', 'default'],
  ['provider-flavor', 'get_all', 'default'],
  ['provider-availability-zone', 'get_all', 'default'],
  ['planning', 'get_all', 'default'],
];

const targetOf = (t: Target): string | undefined => (t === 'own' ? OWN : t === 'foreign' ? FOREIGN : undefined);

test('the README role table: every role, in every policy mode, on every kind of check', () => {
  for (const [role, byMode] of Object.entries(ROLE_TABLE)) {
    for (const mode of PolicyModes) {
      const grants = byMode[mode];
      const who = ctx(role ? [role] : [], mode);
      for (const [resource, action, target, ...openedBy] of checks) {
        const expected = grants.includes('everything') || openedBy.some((g) => grants.includes(g));
        assert.equal(allowed(who, resource, action, targetOf(target)), expected, `${mode}: '${role}' ${resource}:${action} on ${target}`);
      }
    }
  }
});

test('every grant of the table is exercised by some check, and every mode is in the table', () => {
  const used = new Set(checks.flatMap(([, , , ...g]) => g));
  for (const byMode of Object.values(ROLE_TABLE)) for (const mode of PolicyModes) for (const g of byMode[mode]) assert.ok(g === 'everything' || used.has(g), g);
});

test('advanced: the load-balancer_* roles need no Keystone member/reader beside them, and those alone grant nothing', () => {
  assert.equal(allowed(ctx(['member', 'reader']), 'provider', 'get_all'), false);
  assert.equal(allowed(ctx(['member', 'reader']), 'flavor', 'get_all'), false);
  assert.equal(allowed(ctx(['member', 'reader', 'load-balancer_member']), 'loadbalancer', 'post', OWN), true);
  assert.equal(allowed(ctx(['reader', 'load-balancer_observer']), 'loadbalancer', 'post', OWN), false);
});

test('roles combine: each role adds what it grants', () => {
  const both = ctx(['load-balancer_observer', 'load-balancer_quota_admin']);
  assert.equal(allowed(both, 'loadbalancer', 'get_one', OWN), true);
  assert.equal(allowed(both, 'quota', 'put', FOREIGN), true);
  assert.equal(allowed(both, 'loadbalancer', 'put', OWN), false);
});

test('pairs Octavia defines no rule for are refused even to admins, in every mode', () => {
  for (const mode of PolicyModes) {
    assert.equal(allowed(ctx(['admin'], mode), 'l7rule', 'get_all-global', OWN), false);
    assert.equal(allowed(ctx(['admin'], mode), 'pool', 'put_failover', OWN), false);
  }
});

test('an unscoped caller is refused everything, whatever its roles and the mode', () => {
  for (const mode of PolicyModes) {
    const unscopedAdmin = ctx(['admin'], mode, null);
    for (const [resource, action] of checks) assert.equal(allowed(unscopedAdmin, resource, action, null), false, `${mode} ${resource}:${action}`);
    assert.equal(canSeeAllProjects(unscopedAdmin), false);
  }
});

test('noauth callers are admins, even without a project, whatever the mode', () => {
  for (const mode of PolicyModes) {
    const noauth = ctx([], mode, null, true);
    assert.equal(allowed(noauth, 'loadbalancer', 'post', FOREIGN), true);
    assert.equal(allowed(noauth, 'amphora', 'put_failover'), true);
    assert.equal(canSeeAllProjects(noauth), true);
  }
});

test('roles must be held on the target project, not on another one', () => {
  assert.equal(allowed(ctx(['load-balancer_member'], 'advanced', FOREIGN), 'loadbalancer', 'put', OWN), false);
  assert.equal(allowed(ctx(['load-balancer_member'], 'advanced', OWN), 'loadbalancer', 'put', OWN), true);
  assert.equal(allowed(ctx(['member'], 'keystone_default_roles', FOREIGN), 'loadbalancer', 'put', OWN), false);
  assert.equal(allowed(ctx([], 'owner_or_admin', FOREIGN), 'loadbalancer', 'put', OWN), false);
});

test('canSeeAllProjects: admins and global observers (not under owner_or_admin)', () => {
  assert.equal(canSeeAllProjects(ctx(['admin'])), true);
  assert.equal(canSeeAllProjects(ctx(['load-balancer_global_observer'])), true);
  assert.equal(canSeeAllProjects(ctx(['load-balancer_global_observer'], 'owner_or_admin')), false);
  assert.equal(canSeeAllProjects(ctx(['load-balancer_member'])), false);
  assert.equal(canSeeAllProjects(ctx(['member'], 'owner_or_admin')), false);
});

test("authorize throws Octavia's 403", () => {
  assert.doesNotThrow(() => authorize(ctx(['load-balancer_member']), 'loadbalancer', 'post', OWN));
  assert.throws(
    () => authorize(ctx(['member']), 'loadbalancer', 'post', OWN),
    (e: unknown) => isApiError(e) && e.status === 403 && e.message === 'Policy does not allow this request to be performed.',
  );
});

test("the embedded Keystone's users (clouds.yaml) can do what their names say under every policy mode", () => {
  const identity = defaultConfig('/tmp/ostia-test').identity;
  const dir = new Directory(identity);
  const as = (name: string, project: string, policy: PolicyMode): RequestContext => {
    const user = dir.userByName(name, { name: 'Default' })!;
    return { userId: user.id, userName: name, projectId: project, roles: dir.rolesOn(user.id, project), isAdmin: false, policy };
  };
  for (const mode of PolicyModes) {
    const demo = as('demo', DEMO_PROJECT_ID, mode);
    const reader = as('demo-reader', DEMO_PROJECT_ID, mode);
    const alt = as('alt', ALT_PROJECT_ID, mode);
    const admin = as('admin', ADMIN_PROJECT_ID, mode);
    for (const who of [demo, alt]) {
      assert.equal(allowed(who, 'loadbalancer', 'post', who.projectId), true, `${mode} ${who.userName}`);
      assert.equal(allowed(who, 'provider', 'get_all'), true, `${mode} ${who.userName}`);
    }
    assert.equal(allowed(demo, 'loadbalancer', 'get_one', ALT_PROJECT_ID), false, mode);
    assert.equal(allowed(reader, 'loadbalancer', 'get_one', DEMO_PROJECT_ID), true, mode);
    assert.equal(allowed(reader, 'flavor', 'get_all'), true, mode);
    assert.equal(allowed(admin, 'loadbalancer', 'delete', DEMO_PROJECT_ID), true, mode);
    assert.equal(allowed(admin, 'amphora', 'get_all'), true, mode);
    if (mode !== 'owner_or_admin') assert.equal(allowed(reader, 'loadbalancer', 'post', DEMO_PROJECT_ID), false, mode);
  }
});

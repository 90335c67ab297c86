import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { RequestContext } from '../domain/context.js';
import { isApiError } from '../domain/errors.js';
import { allowed, authorize, canSeeAllProjects, type Action, type Resource } from './policy.js';

const OWN = 'project-own';
const FOREIGN = 'project-foreign';
const ctx = (roles: string[], projectId: string | null = OWN, isAdmin = false): RequestContext => ({ userId: 'u', userName: 'u', projectId, roles, isAdmin });

const reader = ctx(['reader']);
const member = ctx(['member', 'reader']);
const admin = ctx(['admin', 'member', 'reader']);

/** [resource, action, target, reader, member, admin]; target 'own' is the caller's project, 'default' omits it. */
type Row = [Resource, Action, 'own' | 'foreign' | 'default', boolean, boolean, boolean];
const Y = true;
const N = false;
const matrix: Row[] = [
  // The load-balancer tree: read own, write own as member, everything as admin.
  ['loadbalancer', 'get_all', 'own', Y, Y, Y],
  ['loadbalancer', 'get_all-global', 'own', N, N, Y],
  ['loadbalancer', 'get_one', 'own', Y, Y, Y],
  ['loadbalancer', 'get_one', 'foreign', N, N, Y],
  ['loadbalancer', 'get_stats', 'own', Y, Y, Y],
  ['loadbalancer', 'get_status', 'own', Y, Y, Y],
  ['loadbalancer', 'get_status', 'foreign', N, N, Y],
  ['loadbalancer', 'post', 'own', N, Y, Y],
  ['loadbalancer', 'post', 'foreign', N, N, Y],
  ['loadbalancer', 'put', 'own', N, Y, Y],
  ['loadbalancer', 'put', 'foreign', N, N, Y],
  ['loadbalancer', 'delete', 'own', N, Y, Y],
  ['loadbalancer', 'delete', 'foreign', N, N, Y],
  ['loadbalancer', 'put_failover', 'own', N, N, Y],
  ['listener', 'get_one', 'own', Y, Y, Y],
  ['listener', 'get_stats', 'foreign', N, N, Y],
  ['listener', 'post', 'own', N, Y, Y],
  ['listener', 'get_all-global', 'own', N, N, Y],
  ['pool', 'put', 'own', N, Y, Y],
  ['pool', 'delete', 'foreign', N, N, Y],
  ['member', 'get_all', 'own', Y, Y, Y],
  ['member', 'get_all', 'foreign', N, N, Y],
  ['member', 'post', 'own', N, Y, Y],
  ['member', 'put', 'foreign', N, N, Y],
  ['healthmonitor', 'get_one', 'own', Y, Y, Y],
  ['healthmonitor', 'post', 'own', N, Y, Y],
  ['l7policy', 'delete', 'own', N, Y, Y],
  ['l7policy', 'get_all', 'foreign', N, N, Y],
  ['l7rule', 'post', 'own', N, Y, Y],
  ['l7rule', 'get_one', 'foreign', N, N, Y],
  // Quotas: read own, write only as admin.
  ['quota', 'get_one', 'own', Y, Y, Y],
  ['quota', 'get_one', 'foreign', N, N, Y],
  ['quota', 'get_all', 'own', Y, Y, Y],
  ['quota', 'get_all-global', 'own', N, N, Y],
  ['quota', 'get_defaults', 'own', Y, Y, Y],
  ['quota', 'put', 'own', N, N, Y],
  ['quota', 'delete', 'own', N, N, Y],
  // Amphorae: admin only.
  ['amphora', 'get_all', 'default', N, N, Y],
  // Metrics span every project: admin (or global observer) only.
  ['metrics', 'get_all', 'default', N, N, Y],
  ['amphora', 'get_one', 'default', N, N, Y],
  ['amphora', 'get_stats', 'default', N, N, Y],
  ['amphora', 'put_failover', 'default', N, N, Y],
  ['amphora', 'put_config', 'default', N, N, Y],
  ['amphora', 'delete', 'default', N, N, Y],
  // Flavors, AZs, providers: everyone reads, admins write; profiles and capabilities are admin only.
  ['provider', 'get_all', 'default', Y, Y, Y],
  ['provider-flavor', 'get_all', 'default', N, N, Y],
  ['provider-availability-zone', 'get_all', 'default', N, N, Y],
  ['flavor', 'get_all', 'default', Y, Y, Y],
  ['flavor', 'get_one', 'default', Y, Y, Y],
  ['flavor', 'post', 'default', N, N, Y],
  ['flavor', 'put', 'default', N, N, Y],
  ['flavor', 'delete', 'default', N, N, Y],
  ['flavor-profile', 'get_all', 'default', N, N, Y],
  ['flavor-profile', 'get_one', 'default', N, N, Y],
  ['flavor-profile', 'post', 'default', N, N, Y],
  ['availability-zone', 'get_all', 'default', Y, Y, Y],
  ['availability-zone', 'get_one', 'default', Y, Y, Y],
  ['availability-zone', 'put', 'default', N, N, Y],
  ['availability-zone-profile', 'get_one', 'default', N, N, Y],
  ['availability-zone-profile', 'delete', 'default', N, N, Y],
  // Pairs Octavia defines no rule for are refused even to admins.
  ['l7rule', 'get_all-global', 'own', N, N, N],
  ['pool', 'put_failover', 'own', N, N, N],
];

const targetOf = (t: Row[2]): string | undefined => (t === 'own' ? OWN : t === 'foreign' ? FOREIGN : undefined);

test('the default RBAC matrix (reader / member / admin)', () => {
  for (const [resource, action, target, ...expected] of matrix) {
    [reader, member, admin].forEach((who, i) => {
      assert.equal(allowed(who, resource, action, targetOf(target)), expected[i], `${who.roles[0]} ${resource}:${action} on ${target}`);
    });
  }
});

test('legacy load-balancer_* roles are honoured too', () => {
  const observer = ctx(['load-balancer_observer']);
  assert.equal(allowed(observer, 'loadbalancer', 'get_one', OWN), true);
  assert.equal(allowed(observer, 'loadbalancer', 'get_one', FOREIGN), false);
  assert.equal(allowed(observer, 'loadbalancer', 'post', OWN), false);

  const lbMember = ctx(['load-balancer_member']);
  assert.equal(allowed(lbMember, 'pool', 'post', OWN), true);
  assert.equal(allowed(lbMember, 'pool', 'post', FOREIGN), false);
  assert.equal(allowed(lbMember, 'loadbalancer', 'put_failover', OWN), false);

  const lbAdmin = ctx(['load-balancer_admin']);
  assert.equal(allowed(lbAdmin, 'loadbalancer', 'delete', FOREIGN), true);
  assert.equal(allowed(lbAdmin, 'amphora', 'put_failover'), true);

  const globalObserver = ctx(['load-balancer_global_observer']);
  assert.equal(allowed(globalObserver, 'loadbalancer', 'get_one', FOREIGN), true);
  assert.equal(allowed(globalObserver, 'loadbalancer', 'get_all-global'), true);
  assert.equal(allowed(globalObserver, 'metrics', 'get_all'), true);
  assert.equal(allowed(globalObserver, 'loadbalancer', 'put', FOREIGN), false);

  const quotaAdmin = ctx(['load-balancer_quota_admin']);
  assert.equal(allowed(quotaAdmin, 'quota', 'put', FOREIGN), true);
  assert.equal(allowed(quotaAdmin, 'quota', 'get_all-global'), true);
  assert.equal(allowed(quotaAdmin, 'loadbalancer', 'get_one', FOREIGN), false);
});

test('the service role may list any pool members and nothing else', () => {
  const service = ctx(['service']);
  assert.equal(allowed(service, 'member', 'get_all', FOREIGN), true);
  assert.equal(allowed(service, 'member', 'get_one', FOREIGN), false);
  assert.equal(allowed(service, 'loadbalancer', 'get_all', OWN), false);
});

test('an unscoped token is refused everything, whatever its roles', () => {
  const unscopedAdmin = ctx(['admin'], null);
  for (const [resource, action] of matrix) assert.equal(allowed(unscopedAdmin, resource, action, null), false, `${resource}:${action}`);
  assert.equal(canSeeAllProjects(unscopedAdmin), false);
});

test('noauth callers are admins, even without a project', () => {
  const noauth = ctx([], null, true);
  assert.equal(allowed(noauth, 'loadbalancer', 'post', FOREIGN), true);
  assert.equal(allowed(noauth, 'amphora', 'put_failover'), true);
  assert.equal(canSeeAllProjects(noauth), true);
});

test('roles must be held on the target project, not on another one', () => {
  assert.equal(allowed(ctx(['member'], FOREIGN), 'loadbalancer', 'put', OWN), false);
  assert.equal(allowed(ctx(['member'], OWN), 'loadbalancer', 'put', OWN), true);
});

test('canSeeAllProjects: admins and global observers', () => {
  assert.equal(canSeeAllProjects(admin), true);
  assert.equal(canSeeAllProjects(ctx(['load-balancer_global_observer'])), true);
  assert.equal(canSeeAllProjects(member), false);
  assert.equal(canSeeAllProjects(reader), false);
});

test('authorize throws Octavia\'s 403', () => {
  assert.doesNotThrow(() => authorize(member, 'loadbalancer', 'post', OWN));
  assert.throws(
    () => authorize(reader, 'loadbalancer', 'post', OWN),
    (e: unknown) => isApiError(e) && e.status === 403 && e.message === 'Policy does not allow this request to be performed.',
  );
});

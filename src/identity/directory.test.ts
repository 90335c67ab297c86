import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, defaultConfig, ADMIN_PROJECT_ID, DEMO_PROJECT_ID } from '../config.js';
import { DEFAULT_DOMAIN, Directory } from './directory.js';
import { KNOWN_ROLES, roleId } from './roles.js';

const identity = defaultConfig('/tmp/ostia-test').identity;
const dir = new Directory(identity);
const ADMIN = 'a0000000000000000000000000000001';
const DEMO = 'a0000000000000000000000000000002';
const READER = 'a0000000000000000000000000000003';

test('projects and users by id and by name in the default domain', () => {
  assert.equal(dir.project(DEMO_PROJECT_ID)?.name, 'demo');
  assert.equal(dir.projectByName('admin', { name: 'Default' })?.id, ADMIN_PROJECT_ID);
  assert.equal(dir.projectByName('admin', { id: 'default' })?.id, ADMIN_PROJECT_ID);
  assert.equal(dir.projectByName('admin', { name: 'default' })?.id, ADMIN_PROJECT_ID);
  assert.equal(dir.projectByName('admin', { name: 'Other' }), undefined);
  assert.equal(dir.projectByName('admin', {}), undefined);
  assert.equal(dir.userByName('demo', { name: 'Default' })?.id, DEMO);
  assert.equal(dir.user(READER)?.name, 'demo-reader');
  assert.equal(dir.user('nobody'), undefined);
  assert.deepEqual(dir.domain({ id: 'default', name: 'Default' }), DEFAULT_DOMAIN);
  assert.equal(dir.domain({ id: 'other' }), undefined);
});

test('every known role exists with a stable id, plus roles only the config names', () => {
  const custom = new Directory({
    projects: identity.projects,
    users: [{ id: 'u', name: 'u', password: 'p', roles: { demo: ['creator'] } }],
  });
  for (const name of [...KNOWN_ROLES, 'creator']) assert.deepEqual(custom.role(roleId(name)), { id: roleId(name), name });
});

test('token roles include implied ones, assignments list only direct grants', () => {
  assert.deepEqual(dir.rolesOn(DEMO, DEMO_PROJECT_ID), ['member', 'reader', 'load-balancer_member']);
  assert.deepEqual(dir.rolesOn(READER, DEMO_PROJECT_ID), ['reader', 'load-balancer_observer']);
  assert.deepEqual(dir.rolesOn(DEMO, ADMIN_PROJECT_ID), []);
  const implied = new Directory({ projects: identity.projects, users: [{ id: 'u', name: 'u', password: 'p', roles: { demo: ['admin'] } }] });
  assert.deepEqual(implied.rolesOn('u', DEMO_PROJECT_ID), ['admin', 'member', 'reader']);
  assert.deepEqual(implied.assignments, [{ userId: 'u', projectId: DEMO_PROJECT_ID, roleId: roleId('admin') }]);
});

test('projectsOf lists the projects a user has roles on', () => {
  assert.deepEqual(dir.projectsOf(DEMO).map((p) => p.name), ['demo']);
  assert.deepEqual(dir.projectsOf('nobody'), []);
});

test('checkPassword', () => {
  assert.equal(dir.checkPassword(ADMIN, 'secret'), true);
  assert.equal(dir.checkPassword(ADMIN, 'secret2'), false);
  assert.equal(dir.checkPassword(ADMIN, ''), false);
  assert.equal(dir.checkPassword('nobody', 'secret'), false);
});

test('config mistakes are reported with what is wrong', () => {
  const user = { id: 'u', name: 'u', password: 'p', roles: { nowhere: ['member'] } };
  assert.throws(() => new Directory({ projects: identity.projects, users: [user] }), (e: unknown) => e instanceof ConfigError && /unknown project 'nowhere'/.test(e.message));
  const twice = [...identity.projects, { ...identity.projects[0]!, id: 'x' }];
  assert.throws(() => new Directory({ projects: twice, users: [] }), /duplicate name 'admin'/);
});

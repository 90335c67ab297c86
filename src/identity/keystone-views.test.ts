import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultConfig, DEMO_PROJECT_ID } from '../config.js';
import { serviceCatalog } from './catalog.js';
import { Directory } from './directory.js';
import { assignmentView, keystoneTime, listView, tokenView, versionView } from './keystone-views.js';
import { roleId } from './roles.js';
import type { TokenClaims } from './tokens.js';

const dir = new Directory(defaultConfig('/tmp/ostia-test').identity);
const demo = dir.userByName('demo', { id: 'default' })!;
const project = dir.project(DEMO_PROJECT_ID)!;
const V3 = 'http://h:1/identity/v3';
const claims: TokenClaims = {
  userId: demo.id,
  projectId: project.id,
  roles: ['member', 'reader'],
  methods: ['password'],
  issuedAt: new Date(Date.UTC(2026, 10, 30, 8, 48, 5)),
  expiresAt: new Date(Date.UTC(2026, 11, 1, 8, 48, 5)),
  auditIds: ['buCk_Q96SQW5K_3WmFDHRg'],
};

test('keystoneTime has microseconds and a Z', () => {
  assert.equal(keystoneTime(new Date(Date.UTC(2026, 11, 1, 8, 48, 5))), '2026-12-01T08:48:05.000000Z');
  assert.equal(keystoneTime(new Date(Date.UTC(2026, 11, 1, 8, 48, 5, 120))), '2026-12-01T08:48:05.120000Z');
});

test('the version document', () => {
  assert.deepEqual(versionView(V3).links, [{ rel: 'self', href: `${V3}/` }]);
  assert.equal(versionView(V3).id, 'v3.14');
});

test('a project-scoped token has the full shape real Keystone returns', () => {
  const catalog = serviceCatalog('http://h:1', 'RegionOne');
  assert.deepEqual(tokenView(claims, demo, project, catalog), {
    token: {
      methods: ['password'],
      user: { id: demo.id, name: 'demo', domain: { id: 'default', name: 'Default' }, password_expires_at: null },
      audit_ids: ['buCk_Q96SQW5K_3WmFDHRg'],
      expires_at: '2026-12-01T08:48:05.000000Z',
      issued_at: '2026-11-30T08:48:05.000000Z',
      project: { id: project.id, name: 'demo', domain: { id: 'default', name: 'Default' } },
      is_domain: false,
      roles: [
        { id: roleId('member'), name: 'member' },
        { id: roleId('reader'), name: 'reader' },
      ],
      catalog,
    },
  });
  assert.equal('catalog' in tokenView(claims, demo, project, null).token, false);
});

test('an unscoped token has no project, roles or catalog', () => {
  const token = tokenView({ ...claims, projectId: null, roles: [] }, demo, null, serviceCatalog('http://h:1', 'RegionOne')).token;
  assert.deepEqual(Object.keys(token), ['methods', 'user', 'audit_ids', 'expires_at', 'issued_at']);
});

test('role assignments, with and without names', () => {
  const a = dir.assignments.find((x) => x.userId === demo.id)!;
  assert.deepEqual(assignmentView(a, dir, V3, false), {
    role: { id: a.roleId },
    user: { id: demo.id },
    scope: { project: { id: project.id } },
    links: { assignment: `${V3}/projects/${project.id}/users/${demo.id}/roles/${a.roleId}` },
  });
  const named = assignmentView(a, dir, V3, true);
  assert.deepEqual(named.role, { id: a.roleId, name: 'member' });
  assert.deepEqual(named.user, { id: demo.id, name: 'demo', domain: { id: 'default', name: 'Default' } });
  assert.deepEqual(named.scope.project, { id: project.id, name: 'demo', domain: { id: 'default', name: 'Default' } });
});

test('lists carry Keystone links', () => {
  assert.deepEqual(listView('projects', [], `${V3}/projects`), { projects: [], links: { self: `${V3}/projects`, previous: null, next: null } });
});

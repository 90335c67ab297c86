import { test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify, { type FastifyInstance } from 'fastify';
import { defaultConfig, ADMIN_PROJECT_ID, DEMO_PROJECT_ID, ALT_PROJECT_ID } from '../config.js';
import { apiError } from '../domain/errors.js';
import { IDENTITY_PREFIX, serviceCatalog } from './catalog.js';
import { Directory } from './directory.js';
import { keystone } from './keystone.js';
import { roleId } from './roles.js';
import { TokenService } from './tokens.js';

const B = 'http://127.0.0.1:9876';
const V3 = `${B}/identity/v3`;
const UNAUTHORIZED = { error: { code: 401, title: 'Unauthorized', message: 'The request you have made requires authentication.' } };
const DEMO = 'a0000000000000000000000000000002';

async function server(): Promise<FastifyInstance> {
  const app = Fastify();
  const identity = defaultConfig('/tmp/ostia-test').identity;
  const plugin = keystone({ publicUrl: () => B, region: 'RegionOne', directory: new Directory(identity), tokens: new TokenService('secret', 3600) });
  await app.register(plugin, { prefix: IDENTITY_PREFIX });
  // A sibling route, to show the plugin's error handling stays inside it.
  app.get('/outside', async () => {
    throw apiError('UNAUTHORIZED');
  });
  return app;
}

/** The `openstack` CLI's own request body (clients.md §2.1). */
const cliLogin = (user: string, project: string, password = 'secret') => ({
  auth: {
    identity: { methods: ['password'], password: { user: { password, name: user, domain: { name: 'Default' } } } },
    scope: { project: { name: project, domain: { name: 'Default' } } },
  },
});

async function login(app: FastifyInstance, user: string, project: string): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/identity/v3/auth/tokens', payload: cliLogin(user, project) });
  assert.equal(res.statusCode, 201, res.body);
  return res.headers['x-subject-token'] as string;
}

const get = (app: FastifyInstance, url: string, token?: string, headers: Record<string, string> = {}) =>
  app.inject({ method: 'GET', url, headers: { ...(token && { 'x-auth-token': token }), ...headers } });

test('version discovery: 300 at the root, the v3 document at /v3', async () => {
  const app = await server();
  const root = await get(app, '/identity');
  assert.equal(root.statusCode, 300);
  assert.equal(root.headers.location, `${V3}/`);
  const v3doc = {
    id: 'v3.14',
    status: 'stable',
    updated: '2020-04-07T00:00:00Z',
    links: [{ rel: 'self', href: `${V3}/` }],
    'media-types': [{ base: 'application/json', type: 'application/vnd.openstack.identity-v3+json' }],
  };
  assert.deepEqual(root.json(), { versions: { values: [v3doc] } });
  assert.equal((await get(app, '/identity/')).statusCode, 300);
  for (const url of ['/identity/v3', '/identity/v3/']) {
    const res = await get(app, url);
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { version: v3doc });
  }
});

test('POST /v3/auth/tokens: 201, X-Subject-Token and the full token body', async () => {
  const app = await server();
  const res = await app.inject({ method: 'POST', url: '/identity/v3/auth/tokens', payload: cliLogin('demo', 'demo') });
  assert.equal(res.statusCode, 201);
  assert.ok(res.headers['x-subject-token']);
  assert.match(String(res.headers['x-openstack-request-id']), /^req-[0-9a-f-]{36}$/);
  assert.equal(res.headers.vary, 'X-Auth-Token');
  const { token } = res.json();
  assert.deepEqual(Object.keys(token), ['methods', 'user', 'audit_ids', 'expires_at', 'issued_at', 'project', 'is_domain', 'roles', 'catalog']);
  assert.deepEqual(token.user, { id: DEMO, name: 'demo', domain: { id: 'default', name: 'Default' }, password_expires_at: null });
  assert.deepEqual(token.project, { id: DEMO_PROJECT_ID, name: 'demo', domain: { id: 'default', name: 'Default' } });
  assert.deepEqual(token.roles, [
    { id: roleId('member'), name: 'member' },
    { id: roleId('reader'), name: 'reader' },
    { id: roleId('load-balancer_member'), name: 'load-balancer_member' },
  ]);
  assert.match(token.expires_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000000Z$/);
  assert.deepEqual(token.catalog, serviceCatalog(B, 'RegionOne'));

  const bare = await app.inject({ method: 'POST', url: '/identity/v3/auth/tokens?nocatalog', payload: cliLogin('demo', 'demo') });
  assert.equal('catalog' in bare.json().token, false);
});

test('bad credentials: Keystone\'s 401 body and WWW-Authenticate', async () => {
  const app = await server();
  const res = await app.inject({ method: 'POST', url: '/identity/v3/auth/tokens', payload: cliLogin('demo', 'demo', 'wrong') });
  assert.equal(res.statusCode, 401);
  assert.deepEqual(res.json(), UNAUTHORIZED);
  assert.equal(res.headers['www-authenticate'], `Keystone uri="${B}/identity"`);
  assert.equal(res.headers.vary, 'X-Auth-Token');
  assert.ok(res.headers['x-openstack-request-id']);
});

test('malformed requests and unknown routes get Keystone-style errors', async () => {
  const app = await server();
  const junk = await app.inject({ method: 'POST', url: '/identity/v3/auth/tokens', headers: { 'content-type': 'application/json' }, payload: '{nope' });
  assert.equal(junk.statusCode, 400);
  assert.equal(junk.json().error.code, 400);
  const empty = await app.inject({ method: 'POST', url: '/identity/v3/auth/tokens', payload: {} });
  assert.deepEqual(empty.json().error, {
    code: 400,
    title: 'Bad Request',
    message: 'Expecting to find auth in request body. The server could not comply with the request since it is either malformed or otherwise incorrect. The client is assumed to be in error.',
  });
  const missing = await get(app, '/identity/v3/nothing-here');
  assert.equal(missing.statusCode, 404);
  assert.deepEqual(missing.json(), { error: { code: 404, title: 'Not Found', message: 'The resource could not be found.' } });
});

test('the plugin\'s error handling does not leak into the host app', async () => {
  const app = await server();
  const res = await get(app, '/outside');
  assert.equal(res.statusCode, 401);
  assert.equal(res.headers['www-authenticate'], undefined);
  assert.equal(res.headers.vary, undefined);
});

test('GET/HEAD /v3/auth/tokens validate a token; 404 for a bad subject; 401 for a bad caller', async () => {
  const app = await server();
  const admin = await login(app, 'admin', 'admin');
  const demo = await login(app, 'demo', 'demo');

  const ok = await get(app, '/identity/v3/auth/tokens', admin, { 'x-subject-token': demo });
  assert.equal(ok.statusCode, 200);
  assert.equal(ok.headers['x-subject-token'], demo);
  assert.equal(ok.json().token.project.id, DEMO_PROJECT_ID);
  assert.ok(ok.json().token.catalog);
  assert.equal('catalog' in (await get(app, '/identity/v3/auth/tokens?nocatalog', admin, { 'x-subject-token': demo })).json().token, false);

  const head = await app.inject({ method: 'HEAD', url: '/identity/v3/auth/tokens', headers: { 'x-auth-token': admin, 'x-subject-token': demo } });
  assert.equal(head.statusCode, 200);
  assert.equal(head.body, '');

  const bad = await get(app, '/identity/v3/auth/tokens', admin, { 'x-subject-token': 'garbage' });
  assert.equal(bad.statusCode, 404);
  assert.deepEqual(bad.json(), { error: { code: 404, title: 'Not Found', message: 'Failed to validate token' } });
  assert.equal((await get(app, '/identity/v3/auth/tokens', undefined, { 'x-subject-token': demo })).statusCode, 401);
  assert.equal((await get(app, '/identity/v3/auth/tokens', 'garbage', { 'x-subject-token': demo })).statusCode, 401);
  assert.equal((await get(app, '/identity/v3/auth/tokens', admin)).statusCode, 400);

  // A user may validate their own tokens, not somebody else's.
  assert.equal((await get(app, '/identity/v3/auth/tokens', demo, { 'x-subject-token': demo })).statusCode, 200);
  assert.equal((await get(app, '/identity/v3/auth/tokens', demo, { 'x-subject-token': admin })).statusCode, 403);
});

test('DELETE /v3/auth/tokens revokes the token', async () => {
  const app = await server();
  const admin = await login(app, 'admin', 'admin');
  const demo = await login(app, 'demo', 'demo');
  const del = await app.inject({ method: 'DELETE', url: '/identity/v3/auth/tokens', headers: { 'x-auth-token': admin, 'x-subject-token': demo } });
  assert.equal(del.statusCode, 204);
  assert.equal((await get(app, '/identity/v3/auth/tokens', admin, { 'x-subject-token': demo })).statusCode, 404);
  assert.equal((await get(app, '/identity/v3/auth/projects', demo)).statusCode, 401);
});

test('rescoping an unscoped token with the token method', async () => {
  const app = await server();
  const unscopedRes = await app.inject({
    method: 'POST',
    url: '/identity/v3/auth/tokens',
    payload: { auth: { identity: { methods: ['password'], password: { user: { id: DEMO, password: 'secret' } } } } },
  });
  assert.equal(unscopedRes.statusCode, 201);
  assert.deepEqual(Object.keys(unscopedRes.json().token), ['methods', 'user', 'audit_ids', 'expires_at', 'issued_at']);
  const res = await app.inject({
    method: 'POST',
    url: '/identity/v3/auth/tokens',
    payload: { auth: { identity: { methods: ['token'], token: { id: unscopedRes.headers['x-subject-token'] } }, scope: { project: { id: DEMO_PROJECT_ID } } } },
  });
  assert.equal(res.statusCode, 201);
  assert.deepEqual(res.json().token.methods, ['token', 'password']);
  assert.equal(res.json().token.audit_ids[1], unscopedRes.json().token.audit_ids[0]);
});

test('the read-only admin APIs need a token', async () => {
  const app = await server();
  for (const url of ['/identity/v3/projects', '/identity/v3/users', '/identity/v3/roles', '/identity/v3/role_assignments', '/identity/v3/domains', '/identity/v3/auth/projects']) {
    const res = await get(app, url);
    assert.equal(res.statusCode, 401, url);
    assert.deepEqual(res.json(), UNAUTHORIZED);
  }
});

test('projects: admins list all, others list their own through auth/projects', async () => {
  const app = await server();
  const admin = await login(app, 'admin', 'admin');
  const demo = await login(app, 'demo', 'demo');
  const all = (await get(app, '/identity/v3/projects', admin)).json();
  assert.deepEqual(all.projects.map((p: { name: string }) => p.name), ['admin', 'demo', 'alt']);
  assert.deepEqual(all.links, { self: `${V3}/projects`, previous: null, next: null });
  assert.deepEqual(all.projects[1], {
    id: DEMO_PROJECT_ID,
    name: 'demo',
    domain_id: 'default',
    description: 'A tenant project',
    enabled: true,
    parent_id: 'default',
    is_domain: false,
    tags: [],
    options: {},
    links: { self: `${V3}/projects/${DEMO_PROJECT_ID}` },
  });
  assert.deepEqual((await get(app, '/identity/v3/projects?name=alt', admin)).json().projects.map((p: { id: string }) => p.id), [ALT_PROJECT_ID]);
  assert.equal((await get(app, '/identity/v3/projects?name=alt', admin)).json().links.self, `${V3}/projects?name=alt`);
  assert.equal((await get(app, '/identity/v3/projects', demo)).statusCode, 403);
  assert.equal((await get(app, '/identity/v3/projects?name=alt', demo)).statusCode, 403);
  assert.deepEqual((await get(app, '/identity/v3/auth/projects', demo)).json().projects.map((p: { name: string }) => p.name), ['demo']);

  assert.equal((await get(app, `/identity/v3/projects/${ALT_PROJECT_ID}`, admin)).json().project.name, 'alt');
  assert.equal((await get(app, `/identity/v3/projects/${DEMO_PROJECT_ID}`, demo)).statusCode, 200);
  assert.equal((await get(app, `/identity/v3/projects/${ALT_PROJECT_ID}`, demo)).statusCode, 403);
  const missing = await get(app, '/identity/v3/projects/demo', admin);
  assert.equal(missing.statusCode, 404);
  assert.equal(missing.json().error.message, 'Could not find project: demo.');
});

test('users: admins list all, others may read only themselves', async () => {
  const app = await server();
  const admin = await login(app, 'admin', 'admin');
  const demo = await login(app, 'demo', 'demo');
  assert.equal((await get(app, '/identity/v3/users', admin)).json().users.length, 4);
  assert.deepEqual((await get(app, '/identity/v3/users?name=alt', admin)).json().users.map((u: { name: string }) => u.name), ['alt']);
  assert.equal((await get(app, '/identity/v3/users', demo)).statusCode, 403);
  assert.deepEqual((await get(app, `/identity/v3/users/${DEMO}`, demo)).json().user, {
    id: DEMO, name: 'demo', domain_id: 'default', enabled: true, password_expires_at: null, options: {}, links: { self: `${V3}/users/${DEMO}` },
  });
  assert.equal((await get(app, '/identity/v3/users/a0000000000000000000000000000001', demo)).statusCode, 403);
  assert.equal((await get(app, '/identity/v3/users/nobody', admin)).statusCode, 404);
});

test('roles and domains', async () => {
  const app = await server();
  const demo = await login(app, 'demo', 'demo');
  const roles = (await get(app, '/identity/v3/roles', demo)).json().roles;
  assert.ok(roles.some((r: { name: string }) => r.name === 'load-balancer_member'));
  const member = (await get(app, '/identity/v3/roles?name=member', demo)).json().roles;
  assert.deepEqual(member, [{ id: roleId('member'), name: 'member', domain_id: null, description: null, options: {}, links: { self: `${V3}/roles/${roleId('member')}` } }]);
  assert.equal((await get(app, `/identity/v3/roles/${roleId('admin')}`, demo)).json().role.name, 'admin');
  assert.equal((await get(app, '/identity/v3/roles/nope', demo)).statusCode, 404);

  assert.deepEqual((await get(app, '/identity/v3/domains?name=Default', demo)).json().domains.map((d: { id: string }) => d.id), ['default']);
  assert.deepEqual((await get(app, '/identity/v3/domains?name=Other', demo)).json().domains, []);
  assert.equal((await get(app, '/identity/v3/domains/default', demo)).json().domain.name, 'Default');
  assert.equal((await get(app, '/identity/v3/domains/other', demo)).statusCode, 404);
});

test('role assignments: filters, include_names, and non-admins see only their own', async () => {
  const app = await server();
  const admin = await login(app, 'admin', 'admin');
  const demo = await login(app, 'demo', 'demo');
  const all = (await get(app, '/identity/v3/role_assignments', admin)).json().role_assignments;
  assert.equal(all.length, 3 + 3 + 2 + 3);
  const demoProject = (await get(app, `/identity/v3/role_assignments?scope.project.id=${DEMO_PROJECT_ID}&role.id=${roleId('reader')}`, admin)).json();
  assert.deepEqual(demoProject.role_assignments.map((a: { user: { id: string } }) => a.user.id).sort(), [DEMO, 'a0000000000000000000000000000003']);
  const named = (await get(app, `/identity/v3/role_assignments?user.id=${DEMO}&include_names=True`, admin)).json().role_assignments;
  assert.deepEqual(named[0], {
    role: { id: roleId('member'), name: 'member' },
    user: { id: DEMO, name: 'demo', domain: { id: 'default', name: 'Default' } },
    scope: { project: { id: DEMO_PROJECT_ID, name: 'demo', domain: { id: 'default', name: 'Default' } } },
    links: { assignment: `${V3}/projects/${DEMO_PROJECT_ID}/users/${DEMO}/roles/${roleId('member')}` },
  });
  const own = (await get(app, '/identity/v3/role_assignments', demo)).json().role_assignments;
  assert.ok(own.length > 0 && own.every((a: { user: { id: string } }) => a.user.id === DEMO));
  assert.deepEqual((await get(app, `/identity/v3/role_assignments?scope.project.id=${ADMIN_PROJECT_ID}`, demo)).json().role_assignments, []);
});

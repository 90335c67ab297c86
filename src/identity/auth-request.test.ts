import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultConfig, ADMIN_PROJECT_ID, DEMO_PROJECT_ID } from '../config.js';
import { isApiError } from '../domain/errors.js';
import { grantToken } from './auth-request.js';
import { Directory } from './directory.js';
import { TokenService } from './tokens.js';

const dir = new Directory(defaultConfig('/tmp/ostia-test').identity);
const tokens = new TokenService('secret', 3600);
const DEMO = 'a0000000000000000000000000000002';

const password = (user: object, scope?: unknown) => ({
  auth: { identity: { methods: ['password'], password: { user } }, ...(scope !== undefined && { scope }) },
});
const byName = { name: 'demo', domain: { name: 'Default' }, password: 'secret' };
const demoScope = { project: { name: 'demo', domain: { name: 'Default' } } };

function fails(body: unknown, code: string): void {
  assert.throws(() => grantToken(body, dir, tokens), (e: unknown) => isApiError(e) && e.code === code);
}

test('password by name and domain, project scope by name and domain', () => {
  const { issued, user, project } = grantToken(password(byName, demoScope), dir, tokens);
  assert.equal(user.id, DEMO);
  assert.equal(project?.id, DEMO_PROJECT_ID);
  assert.deepEqual(issued.roles, ['member', 'reader', 'load-balancer_member']);
  assert.deepEqual(issued.methods, ['password']);
  assert.equal(tokens.verify(issued.token)?.projectId, DEMO_PROJECT_ID);
});

test('password by user id, project scope by id', () => {
  const { issued } = grantToken(password({ id: DEMO, password: 'secret' }, { project: { id: DEMO_PROJECT_ID } }), dir, tokens);
  assert.equal(issued.projectId, DEMO_PROJECT_ID);
});

test('no scope gives an unscoped token', () => {
  for (const scope of [undefined, 'unscoped']) {
    const { issued, project } = grantToken(password(byName, scope), dir, tokens);
    assert.equal(project, null);
    assert.equal(issued.projectId, null);
    assert.deepEqual(issued.roles, []);
  }
});

test('the token method rescopes an unscoped token', () => {
  const unscoped = grantToken(password(byName), dir, tokens).issued;
  const body = { auth: { identity: { methods: ['token'], token: { id: unscoped.token } }, scope: demoScope } };
  const { issued } = grantToken(body, dir, tokens);
  assert.equal(issued.projectId, DEMO_PROJECT_ID);
  assert.deepEqual(issued.methods, ['token', 'password']);
  assert.deepEqual(issued.expiresAt, unscoped.expiresAt);
  fails({ auth: { identity: { methods: ['token'], token: { id: 'garbage' } } } }, 'UNAUTHORIZED');
});

test('every credential or scope problem is the same 401', () => {
  fails(password({ ...byName, password: 'wrong' }), 'UNAUTHORIZED');
  fails(password({ ...byName, password: undefined }), 'UNAUTHORIZED');
  fails(password({ ...byName, name: 'nobody' }), 'UNAUTHORIZED');
  fails(password({ ...byName, domain: { name: 'Elsewhere' } }), 'UNAUTHORIZED');
  fails(password({ name: 'demo', password: 'secret' }), 'UNAUTHORIZED');
  fails(password(byName, { project: { name: 'admin', domain: { name: 'Default' } } }), 'UNAUTHORIZED');
  fails(password(byName, { project: { id: 'nope' } }), 'UNAUTHORIZED');
  fails(password(byName, { domain: { id: 'default' } }), 'UNAUTHORIZED');
  fails(password(byName, { system: { all: true } }), 'UNAUTHORIZED');
  fails({ auth: { identity: { methods: ['totp'], totp: {} } } }, 'UNAUTHORIZED');
  fails({ auth: { identity: { methods: ['password', 'token'], password: { user: byName }, token: { id: 'x' } } } }, 'UNAUTHORIZED');
});

test('an admin may scope to the admin project', () => {
  const { issued } = grantToken(password({ name: 'admin', domain: { id: 'default' }, password: 'secret' }, { project: { id: ADMIN_PROJECT_ID } }), dir, tokens);
  assert.deepEqual(issued.roles, ['admin', 'member', 'reader']);
});

test('malformed bodies are 400 with Keystone wording', () => {
  fails(null, 'IDENTITY_VALIDATION');
  fails({}, 'IDENTITY_VALIDATION');
  fails({ auth: {} }, 'IDENTITY_VALIDATION');
  fails({ auth: { identity: { methods: [] } } }, 'IDENTITY_VALIDATION');
  fails({ auth: { identity: { methods: ['password'] } } }, 'IDENTITY_VALIDATION');
  fails(password({ password: 'secret' }), 'IDENTITY_VALIDATION');
  assert.throws(() => grantToken({}, dir, tokens), /Expecting to find auth in request body/);
});

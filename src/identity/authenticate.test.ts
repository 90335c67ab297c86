import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultConfig, DEMO_PROJECT_ID, type Config } from '../config.js';
import { isApiError } from '../domain/errors.js';
import { createAuthenticator } from './authenticate.js';
import { Directory } from './directory.js';
import { TokenService } from './tokens.js';

const base = defaultConfig('/tmp/ostia-test');
const configFor = (mode: Config['identity']['mode']): Config => ({ ...base, identity: { ...base.identity, mode, tokenSecret: 'secret' } });
const DEMO = 'a0000000000000000000000000000002';

const unauthorized = (e: unknown) => isApiError(e) && e.code === 'UNAUTHORIZED' && e.status === 401;

test('embedded: our token in X-Auth-Token becomes the caller', async () => {
  const config = configFor('embedded');
  const tokens = new TokenService('secret', 3600);
  const authenticate = createAuthenticator(config, { tokens, directory: new Directory(config.identity) });
  const { token } = tokens.issue({ userId: DEMO, projectId: DEMO_PROJECT_ID, roles: ['member', 'reader'], methods: ['password'] });
  assert.deepEqual(await authenticate({ 'x-auth-token': token }), {
    userId: DEMO,
    userName: 'demo',
    projectId: DEMO_PROJECT_ID,
    roles: ['member', 'reader'],
    isAdmin: false,
    policy: 'advanced',
  });
});

test('embedded: a token issued by another process with the same secret is accepted', async () => {
  const config = configFor('embedded');
  const { token } = new TokenService('secret', 3600).issue({ userId: DEMO, projectId: null, roles: [], methods: ['password'] });
  const ctx = await createAuthenticator(config)({ 'x-auth-token': token });
  assert.equal(ctx.projectId, null);
});

test('embedded: missing, forged, revoked tokens and unknown users are 401', async () => {
  const config = configFor('embedded');
  const tokens = new TokenService('secret', 3600);
  const authenticate = createAuthenticator(config, { tokens });
  await assert.rejects(authenticate({}), unauthorized);
  await assert.rejects(authenticate({ 'x-auth-token': '' }), unauthorized);
  await assert.rejects(authenticate({ 'x-auth-token': 'notused' }), unauthorized);
  await assert.rejects(authenticate({ 'x-auth-token': new TokenService('other', 3600).issue({ userId: DEMO, projectId: null, roles: [], methods: [] }).token }), unauthorized);
  await assert.rejects(authenticate({ 'x-auth-token': tokens.issue({ userId: 'ghost', projectId: null, roles: [], methods: [] }).token }), unauthorized);
  const revoked = tokens.issue({ userId: DEMO, projectId: null, roles: [], methods: [] });
  tokens.revoke(revoked);
  await assert.rejects(authenticate({ 'x-auth-token': revoked.token }), unauthorized);
});

test('noauth: identity from headers, every caller an admin', async () => {
  const authenticate = createAuthenticator(configFor('noauth'));
  assert.deepEqual(await authenticate({ 'x-auth-token': 'notused', 'x-project-id': 'p1', 'x-user-id': 'u1', 'x-roles': 'member, reader' }), {
    userId: 'u1',
    userName: null,
    projectId: 'p1',
    roles: ['member', 'reader'],
    isAdmin: true,
    policy: 'advanced',
  });
  assert.equal((await authenticate({ 'x-tenant-id': 'p2' })).projectId, 'p2');
  assert.deepEqual(await authenticate({}), { userId: null, userName: null, projectId: null, roles: [], isAdmin: true, policy: 'advanced' });
});

test('testing: identity from headers, judged by the policy (no caller is an admin by mode)', async () => {
  const config = configFor('testing');
  const authenticate = createAuthenticator({ ...config, api: { ...config.api, policy: 'owner_or_admin' } });
  assert.deepEqual(await authenticate({ 'x-auth-token': 'ignored', 'x-project-id': 'p1', 'x-user-id': 'u1', 'x-roles': 'load-balancer_member,reader' }), {
    userId: 'u1',
    userName: null,
    projectId: 'p1',
    roles: ['load-balancer_member', 'reader'],
    isAdmin: false,
    policy: 'owner_or_admin',
  });
  assert.equal((await authenticate({ 'x-tenant-id': 'p2' })).projectId, 'p2');
  // No headers at all is still a caller, one the policy refuses (403), as Octavia's testing strategy does.
  assert.deepEqual(await authenticate({}), { userId: null, userName: null, projectId: null, roles: [], isAdmin: false, policy: 'owner_or_admin' });
});

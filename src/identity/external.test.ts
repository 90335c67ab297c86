import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { defaultConfig, type Config } from '../config.js';
import { isApiError } from '../domain/errors.js';
import { createAuthenticator } from './authenticate.js';
import { IDENTITY_PREFIX } from './catalog.js';
import { Directory } from './directory.js';
import { ExternalKeystone } from './external.js';
import { keystone } from './keystone.js';
import { TokenService } from './tokens.js';

// The embedded Keystone on a real port stands in for a real Keystone: it speaks the same wire protocol.
const TTL = 120;
const identity = {
  ...defaultConfig('/tmp/ostia-test').identity,
  users: [
    ...defaultConfig('/tmp/ostia-test').identity.users,
    { id: 'a00000000000000000000000000000ff', name: 'octavia', password: 'svc-secret', roles: { admin: ['service'] } },
  ],
};
const tokens = new TokenService('keystone-secret', TTL);
let ks: FastifyInstance;
let authUrl: string;
const calls = { login: 0, validate: 0 };

before(async () => {
  ks = Fastify();
  ks.addHook('onRequest', async (req) => {
    if (req.url.startsWith('/identity/v3/auth/tokens')) calls[req.method === 'POST' ? 'login' : 'validate']++;
  });
  await ks.register(keystone({ publicUrl: () => authUrl, region: 'RegionOne', directory: new Directory(identity), tokens }), { prefix: IDENTITY_PREFIX });
  await ks.listen({ host: '127.0.0.1', port: 0 });
  authUrl = `http://127.0.0.1:${(ks.server.address() as AddressInfo).port}`;
});
after(() => ks.close());

const settings = (over: Partial<Config['identity']['external']> = {}): Config['identity']['external'] => ({
  authUrl: `${authUrl}/identity/v3`,
  username: 'octavia',
  password: 'svc-secret',
  projectName: 'admin',
  userDomainName: 'Default',
  projectDomainName: 'Default',
  cacheSeconds: 300,
  ...over,
});

async function userToken(user: string, project: string): Promise<string> {
  const res = await fetch(`${authUrl}/identity/v3/auth/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      auth: {
        identity: { methods: ['password'], password: { user: { name: user, password: 'secret', domain: { name: 'Default' } } } },
        scope: { project: { name: project, domain: { name: 'Default' } } },
      },
    }),
  });
  assert.equal(res.status, 201);
  return res.headers.get('x-subject-token')!;
}

/** Real time moved on by `advance`, or, once `stopAt` is called, a stopped clock that only `advance` moves. */
function clock(): { now: () => number; advance: (s: number) => void; stopAt: (ms: number) => void } {
  let offset = 0;
  let stopped: number | null = null;
  return {
    now: () => (stopped ?? Date.now()) + offset,
    advance: (s) => (offset += s * 1000),
    stopAt: (ms) => {
      stopped = ms;
      offset = 0;
    },
  };
}

const reset = () => Object.assign(calls, { login: 0, validate: 0 });

test('external mode authenticates a Keystone token through the authenticator', async () => {
  const config: Config = { ...defaultConfig('/tmp/ostia-test'), identity: { ...identity, mode: 'external', external: settings() } };
  const authenticate = createAuthenticator(config);
  const token = await userToken('demo', 'demo');
  const ctx = await authenticate({ 'x-auth-token': token });
  assert.deepEqual(ctx, { userId: 'a0000000000000000000000000000002', userName: 'demo', projectId: identity.projects[1]!.id, roles: ['member', 'reader', 'load-balancer_member'], isAdmin: false, policy: 'advanced' });
  await assert.rejects(authenticate({ 'x-auth-token': 'garbage' }), (e) => isApiError(e) && e.code === 'UNAUTHORIZED');
  await assert.rejects(authenticate({}), (e) => isApiError(e) && e.code === 'UNAUTHORIZED');
});

test('an unversioned auth URL gets /v3 appended', () => {
  assert.equal(new ExternalKeystone(settings({ authUrl: 'http://k:5000/' })).authUrl, 'http://k:5000/v3');
  assert.equal(new ExternalKeystone(settings({ authUrl: 'http://k:5000/v3/' })).authUrl, 'http://k:5000/v3');
});

test('valid answers are cached for cacheSeconds, one login serves many validations', async () => {
  const c = clock();
  const external = new ExternalKeystone(settings({ cacheSeconds: 30 }), { now: c.now });
  const token = await userToken('demo', 'demo');
  reset();
  await Promise.all([external.validate(token), external.validate(token)]);
  assert.equal(calls.login, 1);
  const afterFirst = calls.validate;
  assert.equal(await external.validate(token).then((x) => x?.userName), 'demo');
  assert.equal(calls.validate, afterFirst, 'served from the cache');
  c.advance(31);
  await external.validate(token);
  assert.equal(calls.validate, afterFirst + 1, 'cache expired after cacheSeconds');
  assert.equal(calls.login, 1);
});

test('the cache never outlives the token itself', async () => {
  const c = clock();
  const external = new ExternalKeystone(settings({ cacheSeconds: 3600 }), { now: c.now });
  const token = await userToken('alt', 'alt');
  // Counted from the token's own (whole-second) expiry: a loaded machine's seconds between issuing and validating do not shift the window.
  c.stopAt(tokens.verify(token)!.expiresAt.getTime() - TTL * 1000);
  await external.validate(token);
  reset();
  c.advance(TTL - 1);
  await external.validate(token);
  assert.equal(calls.validate, 0);
  c.advance(2);
  // Our clock says expired; Keystone's does not yet, and its answer is what counts.
  assert.ok(await external.validate(token));
  assert.equal(calls.validate, 1);
});

test('invalid tokens are not cached', async () => {
  const external = new ExternalKeystone(settings());
  reset();
  assert.equal(await external.validate('garbage'), null);
  assert.equal(await external.validate('garbage'), null);
  assert.equal(calls.validate, 2);
});

test('a rejected service token leads to one fresh login', async () => {
  // Watch the wire to learn which service token the client uses, then revoke it in Keystone.
  let serviceToken = '';
  const spy: typeof fetch = (url, init) => {
    const headers = (init?.headers ?? {}) as Record<string, string>;
    if (headers['X-Subject-Token']) serviceToken = headers['X-Auth-Token']!;
    return fetch(url, init);
  };
  const external = new ExternalKeystone(settings({ cacheSeconds: 0 }), { fetch: spy });
  const token = await userToken('demo', 'demo');
  await external.validate(token);
  const admin = await userToken('admin', 'admin');
  const revoke = await fetch(`${authUrl}/identity/v3/auth/tokens`, { method: 'DELETE', headers: { 'x-auth-token': admin, 'x-subject-token': serviceToken } });
  assert.equal(revoke.status, 204);
  reset();
  assert.equal((await external.validate(token))?.userName, 'demo');
  assert.deepEqual(calls, { login: 1, validate: 2 });
});

test('a wrong service password is a 503 naming Keystone', async () => {
  const external = new ExternalKeystone(settings({ password: 'wrong' }));
  await assert.rejects(external.validate('anything'), (e) => isApiError(e) && e.status === 503 && e.message.includes(`Keystone at ${authUrl}/identity/v3 is unreachable`));
});

test('an unreachable Keystone is a 503 naming its URL', async () => {
  const closed = Fastify();
  await closed.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(closed.server.address() as AddressInfo).port}/v3`;
  await closed.close();
  const external = new ExternalKeystone(settings({ authUrl: url }));
  await assert.rejects(external.validate('anything'), (e) => isApiError(e) && e.status === 503 && e.message === `Keystone at ${url} is unreachable: ECONNREFUSED`);
});

/**
 * The external KeyManager against a Barbican over real HTTP. No real Barbican runs here, so
 * the Barbican is the embedded one, in process, behind the embedded Keystone: the client logs
 * in with password auth like it would at a deployment's Keystone and speaks only Barbican's
 * v1 wire protocol (also on PostgreSQL when OSTIA_TEST_DATABASE_URL is set).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, deepMerge, validateConfig } from '../config.js';
import { createAuthenticator, Directory, IDENTITY_PREFIX, keystone, TokenService } from '../identity/index.js';
import { createRuntime, type Runtime } from '../runtime.js';
import { freshPostgresDatabase } from '../../test/support/postgres.js';
import { ForeignReferenceError, MissingReferenceError } from './errors.js';
import { AccessRefusedError, ExternalKeyManager } from './external.js';
import { TEST_KEY } from '../../test/support/keymanager-harness.js';

const ADMIN_USER = 'a0000000000000000000000000000001';
let runtime: Runtime;
let url: string;
let dir: string;
let pg: Awaited<ReturnType<typeof freshPostgresDatabase>> | null;
let external: ExternalKeyManager;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ostia-km-external-'));
  pg = process.env.OSTIA_TEST_DATABASE_URL ? await freshPostgresDatabase(process.env.OSTIA_TEST_DATABASE_URL) : null;
  const config = validateConfig(
    deepMerge(defaultConfig(dir), { database: { url: pg?.url ?? 'sqlite::memory:' }, api: { port: 0 }, identity: { tokenSecret: 'test-secret' }, keyManager: { encryptionKey: TEST_KEY }, log: { level: 'silent' } }),
  );
  const tokens = new TokenService(config.identity.tokenSecret, config.identity.tokenTtlSeconds);
  const directory = new Directory(config.identity);
  runtime = await createRuntime(config, {
    api: true,
    authenticate: createAuthenticator(config, { tokens, directory }),
    mounts: [{ prefix: IDENTITY_PREFIX, plugin: keystone({ publicUrl: () => runtime.deps.publicUrl(), region: 'RegionOne', directory, tokens }) }],
    logger: false,
  });
  url = (await runtime.start())!;
  external = new ExternalKeyManager({ url: `${url}/key-manager`, authUrl: `${url}/identity/v3`, username: 'admin', password: 'secret', projectName: 'admin', userDomainName: 'Default', projectDomainName: 'Default' });
});
after(async () => {
  await runtime.close();
  await pg?.drop();
  rmSync(dir, { recursive: true, force: true });
});

async function token(user: string, project: string): Promise<string> {
  const res = await fetch(`${url}/identity/v3/auth/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ auth: { identity: { methods: ['password'], password: { user: { name: user, password: 'secret', domain: { name: 'Default' } } } }, scope: { project: { name: project, domain: { name: 'Default' } } } } }),
  });
  return res.headers.get('x-subject-token')!;
}

async function barbican(tok: string, method: string, path: string, body?: unknown): Promise<Record<string, any>> {
  const res = await fetch(path.startsWith('http') ? path : `${url}/key-manager/v1${path}`, { method, headers: { 'x-auth-token': tok, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : {};
}

const caller = (tok: string) => ({ projectId: null, userId: null, roles: [], token: tok });

test('the service reads a secret once its owner granted it read (as Octavia is granted), not before', async () => {
  const demo = await token('demo', 'demo');
  const { secret_ref: ref } = await barbican(demo, 'POST', '/secrets', { payload: Buffer.from([1, 2, 3]).toString('base64'), payload_content_type: 'application/octet-stream', payload_content_encoding: 'base64' });
  await assert.rejects(external.resolveForService(ref), (e: Error) => e instanceof AccessRefusedError && /HTTP 403: Forbidden: Secret payload retrieval attempt not allowed/.test(e.message));
  await barbican(demo, 'PUT', `${ref}/acl`, { read: { users: [ADMIN_USER] } });
  assert.deepEqual(await external.resolveForService(ref), { kind: 'secret', payload: Buffer.from([1, 2, 3]), contentType: 'application/octet-stream' });
});

test("canRead asks Barbican with the caller's own token", async () => {
  const [demo, alt] = [await token('demo', 'demo'), await token('alt', 'alt')];
  const { secret_ref: ref } = await barbican(demo, 'POST', '/secrets', { payload: 'PEM', payload_content_type: 'text/plain' });
  assert.equal(await external.canRead(caller(demo), ref), true);
  assert.equal(await external.canRead(caller(alt), ref), false);
  assert.equal(await external.canRead(caller(alt), ref.replace(/.{4}$/, '0000')), false);
  await assert.rejects(external.canRead({ projectId: 'x', userId: 'y', roles: ['member'] }, ref), /caller's token/);
  await assert.rejects(external.canRead(caller(demo), `${url}/key-manager/v2/secrets/x`), ForeignReferenceError);
});

test('a certificate container resolves to its parts; consumers register and unregister', async () => {
  const demo = await token('demo', 'demo');
  const parts: Record<string, string> = {};
  for (const [name, payload] of [['certificate', 'CERT'], ['private_key', 'KEY']]) {
    parts[name!] = (await barbican(demo, 'POST', '/secrets', { payload, payload_content_type: 'text/plain' })).secret_ref;
    await barbican(demo, 'PUT', `${parts[name!]}/acl`, { read: { users: [ADMIN_USER] } });
  }
  const { container_ref: ref } = await barbican(demo, 'POST', '/containers', { type: 'certificate', secret_refs: Object.entries(parts).map(([name, secret_ref]) => ({ name, secret_ref })) });
  await barbican(demo, 'PUT', `${ref}/acl`, { read: { users: [ADMIN_USER] } });
  const material = await external.resolveForService(ref);
  assert.ok(material.kind === 'container');
  assert.deepEqual([material.parts.certificate.toString(), material.parts.private_key?.toString()], ['CERT', 'KEY']);

  const listener = { service: 'octavia', resourceType: 'listener', resourceId: crypto.randomUUID() };
  await external.registerConsumer(ref, listener);
  await external.registerConsumer(parts.certificate!, listener);
  assert.deepEqual((await barbican(demo, 'GET', ref)).consumers, [{ name: 'octavia', URL: `listener/${listener.resourceId}` }]);
  assert.equal((await barbican(demo, 'GET', `${parts.certificate}/consumers`)).total, 1);
  await external.unregisterConsumer(ref, listener);
  await external.unregisterConsumer(ref, listener);
  await external.unregisterConsumer(parts.certificate!, listener);
  assert.deepEqual((await barbican(demo, 'GET', ref)).consumers, []);
  await assert.rejects(external.resolveForService(`${url}/key-manager/v1/containers/0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9`), MissingReferenceError);
});

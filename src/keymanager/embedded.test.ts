/**
 * The KeyManager interface the listener/pool code and the worker use, embedded mode
 * (also on PostgreSQL when OSTIA_TEST_DATABASE_URL is set, via test/support/keymanager-harness.ts).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { alice, bea, bob, carol, startKeyManager, type KeyManagerFixture, type Who } from '../../test/support/keymanager-harness.js';
import { ForeignReferenceError, MissingReferenceError } from './errors.js';

let km: KeyManagerFixture;
before(async () => {
  km = await startKeyManager();
});
after(() => km.close());

const text = (as: Who, payload: string) => km.store(as, { payload, payload_content_type: 'text/plain' });
const ident = (w: Who) => ({ projectId: w.project, userId: w.user, roles: w.roles });
async function container(as: Who, parts: Record<string, string>): Promise<string> {
  const res = await km.request('POST', '/key-manager/v1/containers', { as, body: { type: 'certificate', secret_refs: Object.entries(parts).map(([name, secret_ref]) => ({ name, secret_ref })) } });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().container_ref;
}

test('resolveForService reads any project\'s secret with the service identity, as bytes with its content type', async () => {
  const ref = await km.store(bob, { payload: Buffer.from([0, 1, 2, 255]).toString('base64'), payload_content_type: 'application/octet-stream', payload_content_encoding: 'base64' });
  assert.deepEqual(await km.runtime.keyManager.resolveForService(ref), { kind: 'secret', payload: Buffer.from([0, 1, 2, 255]), contentType: 'application/octet-stream' });
});

test('resolveForService of a certificate container gives each named part', async () => {
  const parts = { certificate: await text(alice, 'CERT'), private_key: await text(alice, 'KEY'), intermediates: await text(alice, 'CHAIN'), private_key_passphrase: await text(alice, 'PASS') };
  const material = await km.runtime.keyManager.resolveForService(await container(alice, parts));
  assert.equal(material.kind, 'container');
  if (material.kind !== 'container') return;
  assert.deepEqual(Object.fromEntries(Object.entries(material.parts).map(([k, v]) => [k, v!.toString()])), { certificate: 'CERT', private_key: 'KEY', intermediates: 'CHAIN', private_key_passphrase: 'PASS' });
});

test('what is not ours, or not there, fails by name', async () => {
  const { keyManager } = km.runtime;
  await assert.rejects(keyManager.resolveForService('http://barbican:9311/v1/secrets/0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9'), (e: Error) => e instanceof ForeignReferenceError && /is not a reference to this key manager/.test(e.message));
  await assert.rejects(keyManager.canRead(ident(alice), `${km.base}/secrets/0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9/acl`), ForeignReferenceError);
  const gone = `${km.base}/secrets/0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9`;
  await assert.rejects(keyManager.resolveForService(gone), (e: Error) => e instanceof MissingReferenceError && e.message === `${gone} refers to a secret that does not exist`);
  assert.equal(await keyManager.canRead(ident(alice), gone), false);
  const empty = await km.store(alice, { name: 'no payload yet' });
  await assert.rejects(keyManager.resolveForService(empty), /has no payload/);
});

test('canRead: the owning project and ACL users; a container needs its secrets readable too', async () => {
  const { keyManager } = km.runtime;
  const secret = await text(alice, 'S');
  assert.equal(await keyManager.canRead(ident(alice), secret), true);
  assert.equal(await keyManager.canRead(ident(carol), secret), true);
  assert.equal(await keyManager.canRead(ident(bob), secret), false);
  assert.equal(await keyManager.canRead(ident(bea), secret), false, 'admin of another project');

  const box = await container(alice, { certificate: await text(alice, 'C'), private_key: await text(alice, 'K') });
  assert.equal(await keyManager.canRead(ident(bob), box), false);
  await km.request('PUT', `${new URL(box).pathname}/acl`, { body: { read: { users: ['bob'] } } });
  assert.equal(await keyManager.canRead(ident(bob), box), false, 'the container is shared, its secrets are not');
  const members = (await km.request('GET', new URL(box).pathname)).json().secret_refs as Array<{ secret_ref: string }>;
  for (const m of members) await km.request('PUT', `${new URL(m.secret_ref).pathname}/acl`, { body: { read: { users: ['bob'] } } });
  assert.equal(await keyManager.canRead(ident(bob), box), true);
});

test('consumers registered by the service show in the API; unregistering is idempotent', async () => {
  const { keyManager } = km.runtime;
  const secret = await text(alice, 'S');
  const box = await container(alice, { certificate: await text(alice, 'C') });
  const listener = { service: 'octavia', resourceType: 'listener', resourceId: crypto.randomUUID() };
  await keyManager.registerConsumer(secret, listener);
  await keyManager.registerConsumer(box, listener);
  const secretConsumers = (await km.request('GET', `${new URL(secret).pathname}/consumers`)).json().consumers;
  assert.deepEqual(secretConsumers.map((c: Record<string, string>) => [c.service, c.resource_type, c.resource_id]), [['octavia', 'listener', listener.resourceId]]);
  assert.deepEqual((await km.request('GET', new URL(box).pathname)).json().consumers, [{ name: 'octavia', URL: `listener/${listener.resourceId}` }]);
  await keyManager.unregisterConsumer(secret, listener);
  await keyManager.unregisterConsumer(secret, listener);
  await keyManager.unregisterConsumer(box, listener);
  assert.equal((await km.request('GET', `${new URL(secret).pathname}/consumers`)).json().total, 0);
  assert.deepEqual((await km.request('GET', new URL(box).pathname)).json().consumers, []);
  await assert.rejects(keyManager.registerConsumer(`${km.base}/containers/0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9`, listener), MissingReferenceError);
});

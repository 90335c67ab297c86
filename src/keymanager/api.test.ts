/**
 * The Barbican v1 API in process, through the runtime exactly as `ostia up` mounts it
 * (also on PostgreSQL when OSTIA_TEST_DATABASE_URL is set, via test/support/keymanager-harness.ts).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { PayloadCipher } from './crypto.js';
import { abe, alice, bea, bob, carol, PROJECT_A, rita, startKeyManager, TEST_KEY, type KeyManagerFixture } from '../../test/support/keymanager-harness.js';

type Obj = Record<string, any>;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const FORBIDDEN = (op: string) => ({ code: 403, title: 'Forbidden', description: `${op} attempt not allowed - please review your user/project privileges` });
const binary = randomBytes(600);
const pem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----';

let km: KeyManagerFixture;
before(async () => {
  km = await startKeyManager();
});
after(() => km.close());

const idOf = (ref: string) => ref.split('/').pop()!;
const pathOf = (ref: string) => new URL(ref).pathname;
const storeBinary = (as = alice, extra: Obj = {}) =>
  km.store(as, { payload: binary.toString('base64'), payload_content_type: 'application/octet-stream', payload_content_encoding: 'base64', ...extra });
const storeText = (as = alice, extra: Obj = {}) => km.store(as, { payload: pem, payload_content_type: 'text/plain', ...extra });

describe('version discovery', () => {
  it('lists v1 at the root (300) and describes it at /v1, without a token', async () => {
    const root = await km.request('GET', '/key-manager/', { as: null });
    assert.equal(root.statusCode, 300);
    assert.deepEqual(root.json().versions.values[0].links[0], { rel: 'self', href: `${km.base}/` });
    assert.equal(root.json().versions.values[0].id, 'v1');
    const v1 = await km.request('GET', '/key-manager/v1', { as: null });
    assert.equal(v1.statusCode, 200);
    assert.equal(v1.json().version.status, 'stable');
  });

  it('everything else needs a token: 401 in keystonemiddleware shape', async () => {
    const res = await km.request('GET', '/key-manager/v1/secrets', { as: null });
    assert.equal(res.statusCode, 401);
    assert.equal(res.json().error.code, 401);
  });

  it('unknown paths are 404 in Barbican shape', async () => {
    const res = await km.request('GET', '/key-manager/v1/orders');
    assert.deepEqual(res.json(), { code: 404, title: 'Not Found', description: 'The resource could not be found.' });
  });
});

describe('secrets', () => {
  it('stores a base64 binary payload and answers with an absolute ref and Location', async () => {
    const res = await km.request('POST', '/key-manager/v1/secrets/', {
      body: { name: 'bundle', payload: binary.toString('base64'), payload_content_type: 'application/octet-stream', payload_content_encoding: 'base64', secret_type: 'opaque', algorithm: 'aes', bit_length: 256, mode: 'cbc' },
    });
    assert.equal(res.statusCode, 201);
    const ref = res.json().secret_ref as string;
    assert.match(idOf(ref), UUID);
    assert.ok(ref.startsWith(`${km.base}/secrets/`));
    assert.equal(res.headers.location, ref);

    const meta = (await km.request('GET', pathOf(ref), { headers: { accept: 'application/json' } })).json();
    assert.deepEqual({ ...meta, created: undefined, updated: undefined }, {
      created: undefined, updated: undefined, status: 'ACTIVE', secret_ref: ref, name: 'bundle', secret_type: 'opaque', expiration: null,
      algorithm: 'aes', bit_length: 256, mode: 'cbc', creator_id: 'alice', content_types: { default: 'application/octet-stream' },
    });
    assert.match(meta.created, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}$/);
  });

  it('serves the payload in the type asked for: octet-stream, the stored type for */*, pkcs12; text only if UTF-8', async () => {
    const ref = await storeBinary();
    for (const accept of [undefined, 'application/octet-stream', '*/*', 'application/pkcs12']) {
      const res = await km.request('GET', `${pathOf(ref)}/payload`, { headers: accept ? { accept } : {} });
      assert.equal(res.statusCode, 200, String(accept));
      assert.deepEqual(res.rawPayload, binary);
      assert.equal(res.headers['content-type'], accept === 'application/pkcs12' ? 'application/pkcs12' : 'application/octet-stream');
    }
    const text = await km.request('GET', `${pathOf(ref)}/payload`, { headers: { accept: 'text/plain' } });
    assert.deepEqual(text.json(), { code: 406, title: 'Not Acceptable', description: 'Secret payload retrieval issue seen - Wrong payload content-type.' });
    const deprecated = await km.request('GET', pathOf(ref), { headers: { accept: 'application/octet-stream' } });
    assert.deepEqual(deprecated.rawPayload, binary);
  });

  it('stores PEM as text/plain and gives it back as text', async () => {
    const ref = await storeText(alice, { payload_content_type: 'text/plain; charset=utf-8' });
    const res = await km.request('GET', `${pathOf(ref)}/payload`, { headers: { accept: 'text/plain' } });
    assert.equal(res.body, pem);
    assert.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
    assert.deepEqual((await km.request('GET', pathOf(ref))).json().content_types, { default: 'text/plain' });
  });

  it("accepts application/pkcs12 as a binary type (Ostia's addition)", async () => {
    const ref = await km.store(alice, { payload: binary.toString('base64'), payload_content_type: 'application/pkcs12', payload_content_encoding: 'base64' });
    const res = await km.request('GET', `${pathOf(ref)}/payload`, { headers: { accept: '*/*' } });
    assert.equal(res.headers['content-type'], 'application/pkcs12');
    assert.deepEqual(res.rawPayload, binary);
  });

  it("refuses bodies as Barbican's validator does", async () => {
    const cases: Array<[Obj | string, number, string, Record<string, string>?]> = [
      [{ payload: 'x' }, 400, "Secret creation issue seen - Provided object does not match schema 'Secret': If 'payload' is supplied, 'payload_content_type' must also be supplied.. Invalid property: 'payload_content_type'."],
      [{ payload: 'x', payload_content_type: 'application/json' }, 400, "Secret creation issue seen - Provided object does not match schema 'Secret': payload_content_type is not one of ['text/plain', 'text/plain;charset=utf-8', 'text/plain; charset=utf-8', 'application/octet-stream', 'application/pkcs8', 'application/pkcs12']. Invalid property: 'payload_content_type'."],
      [{ payload: 'eA==', payload_content_type: 'text/plain', payload_content_encoding: 'base64' }, 400, "Secret creation issue seen - Provided object does not match schema 'Secret': payload_content_encoding is not one of None. Invalid property: 'payload_content_encoding'."],
      [{ payload: 'eA==', payload_content_type: 'application/octet-stream' }, 400, "Secret creation issue seen - Provided object does not match schema 'Secret': payload_content_encoding is not one of ['base64', 'binary']. Invalid property: 'payload_content_encoding'."],
      [{ payload: 'not base64!', payload_content_type: 'application/octet-stream', payload_content_encoding: 'base64' }, 400, "Secret creation issue seen - Provided object does not match schema 'Secret': Invalid payload for payload_content_encoding. Invalid property: 'payload'."],
      [{ payload: '  ', payload_content_type: 'text/plain' }, 400, "Secret creation issue seen - Provided object does not match schema 'Secret': If 'payload' specified, must be non empty. Invalid property: 'payload'."],
      [{ payload_content_type: 'text/plain' }, 400, "Secret creation issue seen - Provided object does not match schema 'Secret': payload must be provided when payload_content_type is specified. Invalid property: 'payload'."],
      [{ secret_type: 'x509' }, 400, "Secret creation issue seen - Provided object does not match schema 'Secret': 'x509' is not one of ['symmetric', 'passphrase', 'private', 'public', 'certificate', 'opaque']. Invalid property: 'secret_type'."],
      [{ expiration: '2001-01-01T00:00:00' }, 400, "Secret creation issue seen - Provided object does not match schema 'Secret': 'expiration' is before current time. Invalid property: 'expiration'."],
      ['{not json', 400, 'Malformed JSON', { 'content-type': 'application/json' }],
      ['payload', 415, "Unexpected content type. Expected content types are: ['application/json']", { 'content-type': 'text/plain' }],
    ];
    for (const [body, status, description, headers] of cases) {
      const res = await km.request('POST', '/key-manager/v1/secrets', { body, headers });
      assert.equal(res.statusCode, status, JSON.stringify(body));
      assert.equal(res.json().description, description);
    }
  });

  it('two-step create: metadata first, then one PUT of the payload (a second is 409)', async () => {
    const ref = await km.store(alice, { name: 'later' });
    const meta = (await km.request('GET', pathOf(ref))).json();
    assert.equal(meta.content_types, undefined);
    assert.deepEqual((await km.request('GET', `${pathOf(ref)}/payload`)).json().description, 'Not Found. Sorry but your secret has no payload.');
    const json = await km.request('PUT', pathOf(ref), { body: { payload: 'x' } });
    assert.equal(json.statusCode, 415);
    const put = await km.request('PUT', pathOf(ref), { body: binary.toString('base64'), headers: { 'content-type': 'application/octet-stream', 'content-encoding': 'base64' } });
    assert.equal(put.statusCode, 204);
    assert.deepEqual((await km.request('GET', `${pathOf(ref)}/payload`)).rawPayload, binary);
    const again = await km.request('PUT', pathOf(ref), { body: 'x', headers: { 'content-type': 'text/plain' } });
    assert.deepEqual(again.json(), { code: 409, title: 'Conflict', description: 'Secret already has data, cannot modify it.' });
  });

  it('never keeps a payload in clear: the row holds AES-256-GCM ciphertext under the configured key', async () => {
    const marker = `PLAINTEXT-MARKER-${randomBytes(8).toString('hex')}`;
    const ref = await storeText(alice, { payload: marker });
    const row = await km.runtime.db.kysely.selectFrom('key_manager_secret').selectAll().where('id', '=', idOf(ref)).executeTakeFirstOrThrow();
    const dump = JSON.stringify(row);
    for (const form of [marker, Buffer.from(marker).toString('base64'), Buffer.from(marker).toString('hex')]) assert.ok(!dump.includes(form), `row contains ${form}`);
    assert.equal(Buffer.from(row.nonce!, 'base64').length, 12);
    assert.deepEqual(new PayloadCipher(TEST_KEY).open({ keyId: row.key_id!, nonce: row.nonce!, ciphertext: row.ciphertext!, tag: row.auth_tag! }, row.id).toString(), marker);
  });

  it('deletes (204), then the secret is gone (404)', async () => {
    const ref = await storeText();
    assert.equal((await km.request('DELETE', pathOf(ref))).statusCode, 204);
    assert.deepEqual((await km.request('GET', pathOf(ref))).json(), { code: 404, title: 'Not Found', description: 'Secret not found.' });
    assert.equal((await km.request('GET', '/key-manager/v1/secrets/nope')).json().description, 'Not Found. Provided secret id is invalid.');
  });
});

describe('listing secrets', () => {
  it("pages the caller's project with total, next and previous, and filters", async () => {
    const listing = await startKeyManager();
    try {
      for (let i = 0; i < 5; i++) await listing.store(alice, { name: `s${i}`, payload: pem, payload_content_type: 'text/plain', secret_type: i % 2 ? 'certificate' : 'opaque' });
      await listing.store(bob, { name: 's0', payload: pem, payload_content_type: 'text/plain' });
      const page = (await listing.request('GET', '/key-manager/v1/secrets?limit=2&offset=2&secret_type=opaque')).json();
      assert.equal(page.total, 3);
      assert.deepEqual(page.secrets.map((s: Obj) => s.name), ['s4']);
      assert.equal(page.previous, `${listing.base}/secrets?limit=2&offset=0&secret_type=opaque`);
      assert.equal(page.next, undefined);
      const first = (await listing.request('GET', '/key-manager/v1/secrets?limit=2')).json();
      assert.deepEqual([first.total, first.secrets.length, first.next], [5, 2, `${listing.base}/secrets?limit=2&offset=2`]);
      assert.deepEqual((await listing.request('GET', '/key-manager/v1/secrets?name=s0')).json().secrets.map((s: Obj) => s.creator_id), ['alice']);
      assert.deepEqual((await listing.request('GET', '/key-manager/v1/secrets?sort=name:desc&limit=1')).json().secrets[0].name, 's4');
      assert.deepEqual((await listing.request('GET', '/key-manager/v1/secrets', { as: bob })).json().total, 1);
      assert.deepEqual((await listing.request('GET', '/key-manager/v1/secrets?name=none')).json(), { secrets: [], total: 0 });
      assert.equal((await listing.request('GET', '/key-manager/v1/secrets?sort=payload')).statusCode, 400);
      assert.equal((await listing.request('GET', '/key-manager/v1/secrets?created=gt:yesterday')).statusCode, 400);
      assert.equal((await listing.request('GET', '/key-manager/v1/secrets?created=gt:2000-01-01T00:00:00')).json().total, 5);
    } finally {
      await listing.close();
    }
  });

  it('acl_only=true lists what other projects shared with the caller', async () => {
    const ref = await storeText(alice, { name: 'shared' });
    await km.request('PUT', `${pathOf(ref)}/acl`, { body: { read: { users: ['bob'] } } });
    const shared = (await km.request('GET', '/key-manager/v1/secrets?acl_only=true', { as: bob })).json();
    assert.deepEqual(shared.secrets.map((s: Obj) => s.secret_ref), [ref]);
  });
});

describe("Barbican's default policy", () => {
  it("another project gets 403 on a secret (and 404 on one that does not exist), and can neither list, read nor delete it", async () => {
    const ref = await storeBinary();
    assert.deepEqual((await km.request('GET', pathOf(ref), { as: bob })).json(), FORBIDDEN('Secret retrieval'));
    assert.deepEqual((await km.request('GET', `${pathOf(ref)}/payload`, { as: bob })).json(), FORBIDDEN('Secret payload retrieval'));
    assert.deepEqual((await km.request('DELETE', pathOf(ref), { as: bob })).json(), FORBIDDEN('Secret deletion'));
    assert.deepEqual((await km.request('GET', `${pathOf(ref)}/acl`, { as: bob })).json(), FORBIDDEN('SecretACL(s) retrieval'));
    assert.ok(!(await km.request('GET', '/key-manager/v1/secrets?limit=100', { as: bob })).json().secrets.some((s: Obj) => s.secret_ref === ref));
    assert.equal((await km.request('GET', `/key-manager/v1/secrets/${crypto.randomUUID()}`, { as: bob })).statusCode, 404);
  });

  it('the reader role alone gets nothing; admin of another project sees metadata, never the payload', async () => {
    const ref = await storeBinary();
    assert.deepEqual((await km.request('GET', '/key-manager/v1/secrets', { as: rita })).json(), FORBIDDEN('Secret(s) retrieval'));
    assert.deepEqual((await km.request('GET', pathOf(ref), { as: rita })).json(), FORBIDDEN('Secret retrieval'));
    assert.deepEqual((await km.request('POST', '/key-manager/v1/secrets', { as: rita, body: { name: 'x' } })).json(), FORBIDDEN('Secret creation'));
    assert.equal((await km.request('GET', pathOf(ref), { as: bea })).statusCode, 200);
    assert.deepEqual((await km.request('GET', `${pathOf(ref)}/payload`, { as: bea })).json(), FORBIDDEN('Secret payload retrieval'));
  });

  it('project-access false keeps a secret to its creator and the project admin; ACL users may read it', async () => {
    const ref = await storeBinary();
    assert.equal((await km.request('PUT', `${pathOf(ref)}/acl`, { body: { read: { 'project-access': false, users: ['bob'] } } })).statusCode, 200);
    const payload = (who: typeof alice) => km.request('GET', `${pathOf(ref)}/payload`, { as: who });
    assert.equal((await payload(alice)).statusCode, 200);
    assert.equal((await payload(carol)).statusCode, 200);
    assert.deepEqual((await payload(abe)).json(), FORBIDDEN('Secret payload retrieval'));
    assert.deepEqual((await payload(bob)).rawPayload, binary);
    assert.equal((await payload(bea)).statusCode, 403, 'the grant is to bob, not to his project');
    assert.deepEqual((await km.request('DELETE', pathOf(ref), { as: bob })).json(), FORBIDDEN('Secret deletion'));
    assert.deepEqual((await km.request('PUT', `${pathOf(ref)}/acl`, { as: bob, body: { read: { users: ['bea'] } } })).json(), FORBIDDEN('SecretACL(s) Update'));
  });
});

describe('ACLs', () => {
  it("PUT replaces, PATCH merges, DELETE restores Barbican's implicit project access", async () => {
    const ref = await storeText();
    const acl = () => km.request('GET', `${pathOf(ref)}/acl`).then((r) => r.json());
    assert.deepEqual(await acl(), { read: { 'project-access': true } });
    const put = await km.request('PUT', `${pathOf(ref)}/acl`, { body: { read: { users: ['bob', 'bob'] } } });
    assert.deepEqual(put.json(), { acl_ref: `${ref}/acl` });
    assert.deepEqual({ ...(await acl()).read, created: 0, updated: 0 }, { 'project-access': true, users: ['bob'], created: 0, updated: 0 });
    await km.request('PATCH', `${pathOf(ref)}/acl`, { body: { read: { 'project-access': false } } });
    assert.deepEqual([(await acl()).read['project-access'], (await acl()).read.users], [false, ['bob']]);
    await km.request('PUT', `${pathOf(ref)}/acl`, { body: { read: { users: ['bea'] } } });
    assert.deepEqual([(await acl()).read['project-access'], (await acl()).read.users], [true, ['bea']]);
    assert.equal((await km.request('DELETE', `${pathOf(ref)}/acl`)).statusCode, 200);
    assert.deepEqual(await acl(), { read: { 'project-access': true } });
    const bad = await km.request('PUT', `${pathOf(ref)}/acl`, { body: { write: { users: [] } } });
    assert.equal(bad.json().description, "SecretACL(s) Update issue seen - Provided object does not match schema 'ACL': Additional properties are not allowed ('write' was unexpected). Invalid property: 'write'.");
  });
});

describe('containers', () => {
  it('creates a certificate container of own secrets; gets and lists it with absolute refs', async () => {
    const [cert, key, chain, pass] = [await storeText(), await storeText(), await storeText(), await storeText()];
    const res = await km.request('POST', '/key-manager/v1/containers/', {
      body: { name: 'tls', type: 'certificate', secret_refs: [{ name: 'certificate', secret_ref: cert }, { name: 'private_key', secret_ref: key }, { name: 'intermediates', secret_ref: chain }, { name: 'private_key_passphrase', secret_ref: pass }] },
    });
    assert.equal(res.statusCode, 201);
    const ref = res.json().container_ref as string;
    assert.ok(ref.startsWith(`${km.base}/containers/`));
    const got = (await km.request('GET', pathOf(ref))).json();
    assert.deepEqual([got.name, got.type, got.status, got.creator_id, got.consumers], ['tls', 'certificate', 'ACTIVE', 'alice', []]);
    assert.deepEqual(got.secret_refs, [{ name: 'certificate', secret_ref: cert }, { name: 'private_key', secret_ref: key }, { name: 'intermediates', secret_ref: chain }, { name: 'private_key_passphrase', secret_ref: pass }]);
    const listed = (await km.request('GET', '/key-manager/v1/containers?type=certificate&name=tls')).json();
    assert.deepEqual(listed.containers.map((c: Obj) => c.container_ref), [ref]);
    assert.equal((await km.request('GET', pathOf(ref), { as: bob })).statusCode, 403);
    assert.equal((await km.request('DELETE', pathOf(ref))).statusCode, 204);
    assert.equal((await km.request('GET', pathOf(cert))).statusCode, 200, 'the secrets outlive their container');
  });

  it('refuses what Barbican refuses: names, foreign refs, secrets of other projects', async () => {
    const mine = await storeText();
    const theirs = await storeText(bob);
    const post = (secret_refs: Obj[], type = 'certificate') => km.request('POST', '/key-manager/v1/containers', { body: { type, secret_refs } });
    const schema = "Container creation issue seen - Provided object does not match schema 'Container': ";
    assert.equal((await post([{ name: 'private_key', secret_ref: mine }])).json().description, `${schema}The minimum required reference name is 'certificate' for Certificate type. Invalid property: 'secret_refs'.`);
    assert.equal((await post([{ name: 'cert', secret_ref: mine }])).json().description, `${schema}only 'private_key', 'certificate' , 'private_key_passphrase',  or 'intermediates' reference names are allowed for Certificate type. Invalid property: 'secret_refs'.`);
    assert.equal((await post([{ name: 'certificate', secret_ref: `http://barbican:9311/v1/secrets/${idOf(mine)}` }])).json().description, 'Container creation issue seen - Provided field value is not supported.');
    assert.deepEqual((await post([{ name: 'certificate', secret_ref: theirs }])).json(), { code: 404, title: 'Not Found', description: "Secret provided for 'certificate' doesn't exist." });
    assert.equal((await km.request('POST', '/key-manager/v1/containers', { body: { name: 'x' } })).json().description, `${schema}'type' is a required property. Invalid property: 'type'.`);
    assert.equal((await post([{ name: 'anything', secret_ref: mine }], 'generic')).statusCode, 201);
  });

  it('a deleted secret leaves the containers it was in', async () => {
    const cert = await storeText();
    const ref = (await km.request('POST', '/key-manager/v1/containers', { body: { type: 'certificate', secret_refs: [{ name: 'certificate', secret_ref: cert }] } })).json().container_ref;
    await km.request('DELETE', pathOf(cert));
    assert.deepEqual((await km.request('GET', pathOf(ref))).json().secret_refs, []);
  });

  it('a container read ACL lets its user read the container', async () => {
    const cert = await storeText();
    const ref = (await km.request('POST', '/key-manager/v1/containers', { body: { type: 'certificate', secret_refs: [{ name: 'certificate', secret_ref: cert }] } })).json().container_ref;
    await km.request('PUT', `${pathOf(ref)}/acl`, { body: { read: { users: ['bob'] } } });
    assert.equal((await km.request('GET', pathOf(ref), { as: bob })).statusCode, 200);
    assert.deepEqual((await km.request('DELETE', pathOf(ref), { as: bob })).json(), FORBIDDEN('Container deletion'));
  });
});

describe('consumers', () => {
  it('secrets take {service, resource_type, resource_id}; registering twice is once', async () => {
    const ref = await storeText();
    const consumer = { service: 'octavia', resource_type: 'listener', resource_id: crypto.randomUUID() };
    for (let i = 0; i < 2; i++) {
      const res = await km.request('POST', `${pathOf(ref)}/consumers/`, { body: consumer });
      assert.equal(res.statusCode, 200);
      assert.deepEqual(res.json().consumers, [consumer]);
    }
    const listed = (await km.request('GET', `${pathOf(ref)}/consumers`)).json();
    assert.deepEqual([listed.total, listed.consumers[0].service, listed.consumers[0].resource_id], [1, 'octavia', consumer.resource_id]);
    assert.deepEqual((await km.request('DELETE', `${pathOf(ref)}/consumers`, { body: consumer })).json().consumers, []);
    assert.deepEqual((await km.request('DELETE', `${pathOf(ref)}/consumers`, { body: consumer })).json().description, 'Consumer not found.');
    assert.equal((await km.request('POST', `${pathOf(ref)}/consumers`, { as: bob, body: consumer })).statusCode, 403);
  });

  it('containers take {name, URL}', async () => {
    const cert = await storeText();
    const ref = (await km.request('POST', '/key-manager/v1/containers', { body: { type: 'certificate', secret_refs: [{ name: 'certificate', secret_ref: cert }] } })).json().container_ref;
    const res = await km.request('POST', `${pathOf(ref)}/consumers`, { body: { name: 'octavia', URL: 'listener/1' } });
    assert.deepEqual(res.json().consumers, [{ name: 'octavia', URL: 'listener/1' }]);
    const bad = await km.request('POST', `${pathOf(ref)}/consumers`, { body: { name: 'octavia' } });
    assert.equal(bad.json().description, "ContainerConsumer creation issue seen - Provided object does not match schema 'Consumer': 'URL' is a required property. Invalid property: 'URL'.");
  });
});

describe('wiring', () => {
  it('the project of a secret is the caller\'s', async () => {
    const ref = await storeText(carol);
    const row = await km.runtime.db.kysely.selectFrom('key_manager_secret').select(['project_id', 'creator_id']).where('id', '=', idOf(ref)).executeTakeFirstOrThrow();
    assert.deepEqual(row, { project_id: PROJECT_A, creator_id: 'carol' });
  });
});

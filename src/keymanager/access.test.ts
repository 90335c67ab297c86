import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isAdminAnywhere, mayCreate, mayManage, mayRead, parseRef, refBase, type Guarded, type Identity } from './access.js';
import { ForeignReferenceError } from './errors.js';

const A = 'project-a';
const B = 'project-b';
const who = (projectId: string | null, userId: string, ...roles: string[]): Identity => ({ projectId, userId, roles });
const alice = who(A, 'alice', 'member', 'reader');
const abe = who(A, 'abe', 'member', 'reader');
const carol = who(A, 'carol', 'admin', 'member', 'reader');
const rita = who(A, 'rita', 'reader');
const bob = who(B, 'bob', 'member', 'reader');
const bea = who(B, 'bea', 'admin', 'member', 'reader');

const owned: Guarded = { projectId: A, creatorId: 'alice', acl: null };
const privateToAlice: Guarded = { ...owned, acl: { projectAccess: false, users: [] } };
const sharedWithBob: Guarded = { ...owned, acl: { projectAccess: true, users: ['bob'] } };

test('members of the owning project read and manage; readers and other projects do not', () => {
  for (const w of [alice, abe, carol]) assert.ok(mayRead(w, owned) && mayManage(w, owned), w.userId!);
  for (const w of [rita, bob, bea]) assert.ok(!mayRead(w, owned) && !mayManage(w, owned), w.userId!);
  assert.ok(mayCreate(alice) && !mayCreate(rita) && !mayCreate(who(null, 'x', 'member')));
});

test('project-access false leaves the creator and the project admin', () => {
  assert.ok(mayRead(alice, privateToAlice) && mayManage(alice, privateToAlice));
  assert.ok(mayRead(carol, privateToAlice) && mayManage(carol, privateToAlice));
  assert.ok(!mayRead(abe, privateToAlice) && !mayManage(abe, privateToAlice));
});

test('a read ACL lets its users read from another project, never manage', () => {
  assert.ok(mayRead(bob, sharedWithBob));
  assert.ok(!mayManage(bob, sharedWithBob));
  assert.ok(!mayRead(bea, sharedWithBob), 'the grant is to the user, not the project');
});

test("the admin role anywhere is Barbican's metadata/delete clause only", () => {
  assert.ok(isAdminAnywhere(bea) && !mayRead(bea, owned));
  assert.ok(!isAdminAnywhere(bob));
});

test('references: this key manager, secrets or containers, a uuid, nothing after it', () => {
  const url = 'http://127.0.0.1:9876';
  const id = '0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9';
  assert.equal(refBase(`${url}/`), `${url}/key-manager/v1`);
  assert.deepEqual(parseRef(`${url}/key-manager/v1/secrets/${id}`, url), { kind: 'secret', id });
  assert.deepEqual(parseRef(`${url}/key-manager/v1/containers/${id}/`, url), { kind: 'container', id });
  assert.deepEqual(parseRef('https://lb.example/api/key-manager/v1/secrets/' + id, 'https://lb.example/api'), { kind: 'secret', id });
  for (const bad of [
    `http://127.0.0.1:9877/key-manager/v1/secrets/${id}`,
    `https://127.0.0.1:9876/key-manager/v1/secrets/${id}`,
    `http://barbican:9311/v1/secrets/${id}`,
    `${url}/key-manager/v1/secrets/${id}/payload`,
    `${url}/key-manager/v1/secrets/${id}?x=1`,
    `${url}/key-manager/v1/orders/${id}`,
    `${url}/key-manager/v1/secrets/not-a-uuid`,
    id,
    '',
  ])
    assert.throws(() => parseRef(bad, url), (e: Error) => e instanceof ForeignReferenceError && e.message.includes('is not a reference to this key manager'), bad);
  assert.throws(() => parseRef(`${url}/key-manager/v1/containers/${id}`, url, 'secret'), /expected http:\/\/127.0.0.1:9876\/key-manager\/v1\/secrets\/<uuid>/);
});

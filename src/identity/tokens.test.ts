import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TokenService } from './tokens.js';
import { KNOWN_ROLES } from './roles.js';

const subject = { userId: 'u1', projectId: 'p1', roles: ['member', 'reader', 'custom-role'], methods: ['password'] };

function clock(start = Date.UTC(2026, 0, 1)): { now: () => number; advance: (s: number) => void } {
  let t = start;
  return { now: () => t, advance: (s) => (t += s * 1000) };
}

test('issue → verify round-trips the claims', () => {
  const c = clock();
  const tokens = new TokenService('secret', 3600, c.now);
  const issued = tokens.issue(subject);
  assert.equal(issued.issuedAt.getTime(), c.now());
  assert.equal(issued.expiresAt.getTime() - issued.issuedAt.getTime(), 3600_000);
  assert.match(issued.auditIds[0]!, /^[A-Za-z0-9_-]{22}$/);
  const claims = tokens.verify(issued.token);
  assert.deepEqual(claims, { ...subject, issuedAt: issued.issuedAt, expiresAt: issued.expiresAt, auditIds: issued.auditIds });
});

test('unscoped tokens carry a null project', () => {
  const tokens = new TokenService('secret', 3600);
  const issued = tokens.issue({ userId: 'u1', projectId: null, roles: [], methods: ['password'] });
  assert.equal(tokens.verify(issued.token)?.projectId, null);
});

test('tokens are header/URL safe and short, even for a user holding every role', () => {
  const tokens = new TokenService('secret', 3600);
  const uuid = '3b2c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e';
  const first = tokens.issue({ userId: uuid, projectId: uuid, roles: [...KNOWN_ROLES], methods: ['password'] });
  const { token } = tokens.issue({ userId: uuid, projectId: uuid, roles: [...KNOWN_ROLES], methods: ['token', 'password'] }, first);
  assert.match(token, /^[A-Za-z0-9_.-]+$/);
  assert.ok(token.length < 400, `token is ${token.length} chars`);
});

test('expired tokens are refused', () => {
  const c = clock();
  const tokens = new TokenService('secret', 60, c.now);
  const { token } = tokens.issue(subject);
  c.advance(59);
  assert.ok(tokens.verify(token));
  c.advance(1);
  assert.equal(tokens.verify(token), null);
});

test('a token signed with another secret, or altered, is refused', () => {
  const ours = new TokenService('secret', 3600);
  const theirs = new TokenService('other-secret', 3600);
  assert.equal(ours.verify(theirs.issue(subject).token), null);
  const { token } = ours.issue(subject);
  const [body, sig] = token.split('.') as [string, string];
  const forged = Buffer.from(Buffer.from(body, 'base64url').toString().replace('"u1"', '"u2"')).toString('base64url');
  assert.equal(ours.verify(`${forged}.${sig}`), null);
  assert.equal(ours.verify(`${body}.${sig.slice(0, -2)}`), null);
  for (const junk of ['', '.', 'abc', 'a.b.c', `${body}.`]) assert.equal(ours.verify(junk), null);
});

test('another process with the same secret accepts the token', () => {
  const a = new TokenService('shared', 3600);
  const b = new TokenService('shared', 3600);
  assert.equal(b.verify(a.issue(subject).token)?.userId, 'u1');
});

test('rescoping keeps the expiry and chains the audit ids', () => {
  const c = clock();
  const tokens = new TokenService('secret', 3600, c.now);
  const original = tokens.issue({ ...subject, projectId: null, roles: [] });
  c.advance(100);
  const rescoped = tokens.issue({ ...subject, methods: ['token', 'password'] }, original);
  assert.equal(rescoped.expiresAt.getTime(), original.expiresAt.getTime());
  assert.deepEqual(rescoped.auditIds.slice(1), original.auditIds);
  assert.notEqual(rescoped.auditIds[0], original.auditIds[0]);
});

test('revoked tokens are refused by this service only', () => {
  const tokens = new TokenService('secret', 3600);
  const other = tokens.issue(subject);
  const issued = tokens.issue(subject);
  tokens.revoke(issued);
  assert.equal(tokens.verify(issued.token), null);
  assert.ok(tokens.verify(other.token));
  assert.ok(new TokenService('secret', 3600).verify(issued.token));
});

test('an empty secret is a configuration error', () => {
  assert.throws(() => new TokenService('', 3600), /tokenSecret/);
});

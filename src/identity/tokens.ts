/**
 * Stateless signed tokens: `base64url(payload).base64url(HMAC-SHA256(payload))`. Any api
 * process holding the deployment's token secret validates any other's tokens without a
 * database, the way Keystone's fernet tokens need only the key repository.
 *
 * Revocation (DELETE /v3/auth/tokens) is an in-memory set of audit ids kept until the revoked
 * token would have expired anyway. It is therefore seen only by the process that revoked the
 * token; other processes keep accepting it until it expires.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { KNOWN_ROLES } from './roles.js';

export interface TokenSubject {
  readonly userId: string;
  /** null: an unscoped token. */
  readonly projectId: string | null;
  readonly roles: readonly string[];
  readonly methods: readonly string[];
}

export interface TokenClaims extends TokenSubject {
  readonly issuedAt: Date;
  readonly expiresAt: Date;
  /** This token's audit id first, then the audit chain id of the token it was rescoped from. */
  readonly auditIds: readonly string[];
}

export interface IssuedToken extends TokenClaims {
  readonly token: string;
}

/** On the wire: short keys, and known roles as indexes into KNOWN_ROLES, to stay well under 400 chars. */
interface Payload {
  u: string;
  p: string | null;
  r: Array<number | string>;
  m: string[];
  i: number;
  e: number;
  a: string[];
}

const knownRoleIndex = new Map<string, number>(KNOWN_ROLES.map((name, i) => [name, i]));

export class TokenService {
  private readonly key: Buffer;
  private readonly revoked = new Map<string, number>();

  constructor(
    secret: string,
    private readonly ttlSeconds: number,
    private readonly now: () => number = Date.now,
  ) {
    if (!secret) throw new Error('identity.tokenSecret is empty: tokens cannot be signed');
    // A key of its own, so the same secret can sign other things without confusion between them.
    this.key = createHmac('sha256', secret).update('ostia identity token').digest();
  }

  /** `rescopedFrom`: the token presented with the `token` method; the new one cannot outlive it. */
  issue(subject: TokenSubject, rescopedFrom?: TokenClaims): IssuedToken {
    const issued = Math.floor(this.now() / 1000);
    const expires = rescopedFrom ? Math.floor(rescopedFrom.expiresAt.getTime() / 1000) : issued + this.ttlSeconds;
    const auditIds = [randomBytes(16).toString('base64url')];
    if (rescopedFrom) auditIds.push(rescopedFrom.auditIds.at(-1)!);
    const payload: Payload = {
      u: subject.userId,
      p: subject.projectId,
      r: subject.roles.map((name) => knownRoleIndex.get(name) ?? name),
      m: [...subject.methods],
      i: issued,
      e: expires,
      a: auditIds,
    };
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return { token: `${body}.${this.sign(body).toString('base64url')}`, ...claimsOf(payload) };
  }

  /** The token's claims, or null when it is malformed, forged, expired or revoked here. */
  verify(token: string): TokenClaims | null {
    const dot = token.indexOf('.');
    if (dot < 0) return null;
    const body = token.slice(0, dot);
    const given = Buffer.from(token.slice(dot + 1), 'base64url');
    const expected = this.sign(body);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    let payload: Payload;
    try {
      payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Payload;
    } catch {
      return null;
    }
    if (payload.e * 1000 <= this.now() || this.revoked.has(payload.a[0]!)) return null;
    return claimsOf(payload);
  }

  revoke(claims: TokenClaims): void {
    const now = this.now();
    for (const [auditId, until] of this.revoked) if (until <= now) this.revoked.delete(auditId);
    this.revoked.set(claims.auditIds[0]!, claims.expiresAt.getTime());
  }

  private sign(body: string): Buffer {
    return createHmac('sha256', this.key).update(body).digest();
  }
}

function claimsOf(p: Payload): TokenClaims {
  return {
    userId: p.u,
    projectId: p.p,
    // An index this build does not know comes from a newer process: drop it rather than guess.
    roles: p.r.flatMap((r) => (typeof r === 'number' ? (KNOWN_ROLES[r] ?? []) : [r])),
    methods: p.m,
    issuedAt: new Date(p.i * 1000),
    expiresAt: new Date(p.e * 1000),
    auditIds: p.a,
  };
}

/**
 * Token validation against a real Keystone, the way keystonemiddleware does it: log in as
 * the service user, then `GET /v3/auth/tokens` with our token in X-Auth-Token and the
 * caller's in X-Subject-Token. Valid answers are cached; refusals are not, so a token
 * Keystone has just issued is never refused from a stale cache.
 */
import { createHash } from 'node:crypto';
import type { Config } from '../config.js';
import type { Caller } from '../domain/context.js';
import { apiError } from '../domain/errors.js';

export interface ExternalKeystoneDeps {
  fetch?: typeof fetch;
  now?: () => number;
  /** Per request to Keystone. */
  timeoutMs?: number;
}

interface Cached {
  readonly ctx: Caller;
  readonly until: number;
}

interface Answer {
  readonly status: number;
  readonly subjectToken: string | null;
  readonly token: KeystoneToken;
}

interface KeystoneToken {
  expires_at?: string;
  user?: { id?: string; name?: string };
  project?: { id?: string };
  roles?: Array<{ name?: string }>;
}

/** Beyond this many cached tokens, expired ones are swept, then the oldest dropped. */
const MAX_CACHED = 10_000;
/** A service token this close to expiry is replaced before use. */
const SERVICE_TOKEN_MARGIN_MS = 60_000;

export class ExternalKeystone {
  readonly authUrl: string;
  private readonly fetch: typeof fetch;
  private readonly now: () => number;
  private readonly timeoutMs: number;
  private readonly cache = new Map<string, Cached>();
  private serviceToken: Promise<{ token: string; expiresAt: number }> | null = null;

  constructor(
    private readonly settings: Config['identity']['external'],
    deps: ExternalKeystoneDeps = {},
  ) {
    const url = settings.authUrl.replace(/\/+$/, '');
    this.authUrl = url.endsWith('/v3') ? url : `${url}/v3`;
    this.fetch = deps.fetch ?? globalThis.fetch;
    this.now = deps.now ?? Date.now;
    this.timeoutMs = deps.timeoutMs ?? 10_000;
  }

  /** The caller's context, or null when Keystone says the token is not valid. */
  async validate(userToken: string): Promise<Caller | null> {
    const key = createHash('sha256').update(userToken).digest('hex');
    const hit = this.cache.get(key);
    if (hit && hit.until > this.now()) return hit.ctx;
    this.cache.delete(key);

    let res = await this.check(userToken, await this.loginOnce());
    if (res.status === 401) {
      // Our service token expired or was revoked: one fresh login, then trust the answer.
      this.serviceToken = null;
      res = await this.check(userToken, await this.loginOnce());
    }
    if (res.status === 404) return null;
    if (res.status !== 200) throw this.unreachable(`token validation answered HTTP ${res.status}`);

    const token = res.token;
    const ctx: Caller = {
      userId: token.user?.id ?? null,
      userName: token.user?.name ?? null,
      projectId: token.project?.id ?? null,
      roles: (token.roles ?? []).flatMap((r) => (r.name ? [r.name] : [])),
      isAdmin: false,
    };
    const expiresAt = token.expires_at ? Date.parse(token.expires_at) : NaN;
    this.remember(key, { ctx, until: Math.min(this.now() + this.settings.cacheSeconds * 1000, Number.isNaN(expiresAt) ? 0 : expiresAt) });
    return ctx;
  }

  private check(userToken: string, serviceToken: string): Promise<Answer> {
    return this.request('GET', '/auth/tokens?nocatalog', { 'X-Auth-Token': serviceToken, 'X-Subject-Token': userToken });
  }

  /** Concurrent requests share one login instead of each starting their own. */
  private async loginOnce(): Promise<string> {
    const current = this.serviceToken;
    if (current) {
      const cached = await current.catch(() => null);
      if (cached && cached.expiresAt - SERVICE_TOKEN_MARGIN_MS > this.now()) return cached.token;
      if (this.serviceToken === current) this.serviceToken = null;
    }
    this.serviceToken ??= this.login();
    return (await this.serviceToken).token;
  }

  private async login(): Promise<{ token: string; expiresAt: number }> {
    const s = this.settings;
    const body = {
      auth: {
        identity: { methods: ['password'], password: { user: { name: s.username, password: s.password, domain: { name: s.userDomainName } } } },
        scope: { project: { name: s.projectName, domain: { name: s.projectDomainName } } },
      },
    };
    const res = await this.request('POST', '/auth/tokens?nocatalog', { 'Content-Type': 'application/json' }, JSON.stringify(body));
    if (res.status !== 201 || !res.subjectToken) throw this.unreachable(`the service user '${s.username}' could not log in (HTTP ${res.status})`);
    const expiresAt = Date.parse(res.token.expires_at ?? '');
    return { token: res.subjectToken, expiresAt: Number.isNaN(expiresAt) ? 0 : expiresAt };
  }

  /** Always reads the whole body: an unread one keeps its connection busy until garbage collection. */
  private async request(method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
    try {
      const res = await this.fetch(this.authUrl + path, { method, headers, body, signal: AbortSignal.timeout(this.timeoutMs) });
      const text = await res.text();
      let token: KeystoneToken = {};
      try {
        token = (JSON.parse(text) as { token?: KeystoneToken }).token ?? {};
      } catch {
        // Error pages need not be JSON; only the status matters then.
      }
      return { status: res.status, subjectToken: res.headers.get('x-subject-token'), token };
    } catch (e) {
      const cause = (e as { cause?: { code?: string } }).cause?.code;
      throw this.unreachable(cause ?? (e as Error).message);
    }
  }

  private unreachable(reason: string) {
    return apiError('IDENTITY_UNAVAILABLE', this.authUrl, reason);
  }

  private remember(key: string, entry: Cached): void {
    if (this.cache.size >= MAX_CACHED) {
      const now = this.now();
      for (const [k, v] of this.cache) if (v.until <= now) this.cache.delete(k);
      if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value!);
    }
    this.cache.set(key, entry);
  }
}

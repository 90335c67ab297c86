/**
 * Turns a request's headers into its caller, per `identity.mode`:
 * - embedded: our own signed token in X-Auth-Token;
 * - external: a real Keystone's token, validated like keystonemiddleware does;
 * - noauth: Octavia's noauth strategy, identity taken from headers and every caller an admin;
 * - testing: Octavia's testing strategy, identity taken from headers (anyone may claim any
 *   role) and judged by the policy: for tests and side-by-side comparisons only.
 * Every caller is then judged by the policy `api.policy` names.
 */
import type { Config } from '../config.js';
import type { Caller, RequestContext } from '../domain/context.js';
import { apiError } from '../domain/errors.js';
import { Directory } from './directory.js';
import { ExternalKeystone, type ExternalKeystoneDeps } from './external.js';
import { TokenService } from './tokens.js';

export type RequestHeaders = Readonly<Record<string, string | string[] | undefined>>;
export type Authenticator = (headers: RequestHeaders) => Promise<RequestContext>;

export interface AuthenticatorDeps extends ExternalKeystoneDeps {
  /** Embedded mode: pass the instances the keystone plugin uses, so its revocations apply here. */
  tokens?: TokenService;
  directory?: Directory;
}

/** Node lower-cases header names; a repeated header counts by its first value. */
function header(headers: RequestHeaders, name: string): string | undefined {
  const v = headers[name];
  return (Array.isArray(v) ? v[0] : v) || undefined;
}

/** The identity headers keystonemiddleware would set, read as oslo.context's from_environ reads them. */
function headerCaller(headers: RequestHeaders, isAdmin: boolean): Caller {
  return {
    userId: header(headers, 'x-user-id') ?? null,
    userName: header(headers, 'x-user-name') ?? null,
    projectId: header(headers, 'x-project-id') ?? header(headers, 'x-tenant-id') ?? null,
    roles: (header(headers, 'x-roles') ?? '').split(',').map((r) => r.trim()).filter(Boolean),
    isAdmin,
  };
}

export function createAuthenticator(config: Config, deps: AuthenticatorDeps = {}): Authenticator {
  const identify = identifier(config, deps);
  const policy = config.api.policy;
  return async (headers) => ({ ...(await identify(headers)), policy });
}

function identifier(config: Config, deps: AuthenticatorDeps): (headers: RequestHeaders) => Promise<Caller> {
  const identity = config.identity;
  switch (identity.mode) {
    case 'noauth':
      return async (headers) => headerCaller(headers, true);

    case 'testing':
      return async (headers) => headerCaller(headers, false);

    case 'external': {
      const keystone = new ExternalKeystone(identity.external, deps);
      return async (headers) => {
        const token = header(headers, 'x-auth-token');
        const ctx = token ? await keystone.validate(token) : null;
        if (!ctx) throw apiError('UNAUTHORIZED');
        return ctx;
      };
    }

    case 'embedded': {
      const tokens = deps.tokens ?? new TokenService(identity.tokenSecret, identity.tokenTtlSeconds);
      const directory = deps.directory ?? new Directory(identity);
      return async (headers) => {
        const token = header(headers, 'x-auth-token');
        const claims = token ? tokens.verify(token) : null;
        const user = claims && directory.user(claims.userId);
        if (!claims || !user) throw apiError('UNAUTHORIZED');
        return { userId: user.id, userName: user.name, projectId: claims.projectId, roles: claims.roles, isAdmin: false };
      };
    }
  }
}

/**
 * `POST /v3/auth/tokens`: turns the request body into a token. Every way credentials or
 * scope can be wrong ends in the same 401, as Keystone does with insecure_debug off, so a
 * caller cannot probe which user names or projects exist.
 */
import { apiError } from '../domain/errors.js';
import type { Directory, DomainRef, Project, User } from './directory.js';
import type { IssuedToken, TokenClaims, TokenService } from './tokens.js';

export interface Grant {
  readonly issued: IssuedToken;
  readonly user: User;
  readonly project: Project | null;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

function field(parent: Json, key: string, where: string): Json {
  const v = parent[key];
  if (!isObject(v)) throw apiError('IDENTITY_VALIDATION', key, where);
  return v;
}

function domainRef(v: unknown): DomainRef {
  return isObject(v) ? { id: str(v.id), name: str(v.name) } : {};
}

export function grantToken(body: unknown, directory: Directory, tokens: TokenService): Grant {
  if (!isObject(body)) throw apiError('IDENTITY_VALIDATION', 'auth', 'request body');
  const auth = field(body, 'auth', 'request body');
  const identity = field(auth, 'identity', 'auth');
  const methods = identity.methods;
  if (!Array.isArray(methods) || methods.length === 0) throw apiError('IDENTITY_VALIDATION', 'methods', 'identity');
  // Multi-factor combinations and other plugins (totp, application_credential, …) are not offered.
  if (methods.length !== 1) throw apiError('UNAUTHORIZED');

  let user: User | undefined;
  let parent: TokenClaims | undefined;
  if (methods[0] === 'password') {
    const userRef = field(field(identity, 'password', 'identity'), 'user', 'password');
    const id = str(userRef.id);
    const name = str(userRef.name);
    if (id === undefined && name === undefined) throw apiError('IDENTITY_VALIDATION', 'id or name', 'user');
    user = id !== undefined ? directory.user(id) : directory.userByName(name!, domainRef(userRef.domain));
    if (!user || !directory.checkPassword(user.id, str(userRef.password) ?? '')) throw apiError('UNAUTHORIZED');
  } else if (methods[0] === 'token') {
    const id = str(field(identity, 'token', 'identity').id);
    if (id === undefined) throw apiError('IDENTITY_VALIDATION', 'id', 'token');
    parent = tokens.verify(id) ?? undefined;
    user = parent && directory.user(parent.userId);
    if (!user) throw apiError('UNAUTHORIZED');
  } else {
    throw apiError('UNAUTHORIZED');
  }

  const project = resolveScope(auth.scope, directory);
  const roles = project ? directory.rolesOn(user.id, project.id) : [];
  if (project && roles.length === 0) throw apiError('UNAUTHORIZED');
  const methodNames = parent ? [...new Set(['token', ...parent.methods])] : ['password'];
  const issued = tokens.issue({ userId: user.id, projectId: project?.id ?? null, roles, methods: methodNames }, parent);
  return { issued, user, project };
}

/** null: unscoped. Domain and system scopes do not exist here. */
function resolveScope(scope: unknown, directory: Directory): Project | null {
  if (scope === undefined || scope === 'unscoped') return null;
  if (!isObject(scope) || !isObject(scope.project)) throw apiError('UNAUTHORIZED');
  const ref = scope.project;
  const id = str(ref.id);
  const name = str(ref.name);
  const project = id !== undefined ? directory.project(id) : name !== undefined ? directory.projectByName(name, domainRef(ref.domain)) : undefined;
  if (!project) throw apiError('UNAUTHORIZED');
  return project;
}

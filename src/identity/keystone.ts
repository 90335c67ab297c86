/**
 * The embedded Keystone: the v3 subset the `openstack` CLI, openstacksdk, keystonemiddleware
 * and test tools call. Register `keystone(opts)` with `{ prefix: IDENTITY_PREFIX }` and do not
 * wrap it in fastify-plugin: its error and not-found handlers must stay local so identity
 * errors get Keystone's `{"error": {...}}` body while the rest of the API keeps Octavia's.
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { apiError, isApiError, type ApiError } from '../domain/errors.js';
import { grantToken } from './auth-request.js';
import { IDENTITY_PREFIX, identityUrl, serviceCatalog } from './catalog.js';
import { DEFAULT_DOMAIN, type Directory } from './directory.js';
import { assignmentView, domainView, listView, projectView, roleView, tokenView, userView, versionView } from './keystone-views.js';
import type { TokenClaims, TokenService } from './tokens.js';

export interface KeystoneOptions {
  /** Called per request, so a server bound to port 0 can report the port it got. */
  publicUrl: string | (() => string);
  region: string;
  directory: Directory;
  /** The same instance the API's authenticator uses, so a revoked token is refused there too. */
  tokens: TokenService;
}

type Query = Record<string, string | undefined>;

const flag = (v: string | undefined): boolean => v !== undefined && !['0', 'false', 'False'].includes(v);

export const keystone = (opts: KeystoneOptions): FastifyPluginAsync => async (app) => {
  const { directory, tokens } = opts;
  const base = (): string => (typeof opts.publicUrl === 'string' ? opts.publicUrl : opts.publicUrl()).replace(/\/$/, '');

  app.addHook('onSend', async (_req, reply) => {
    reply.header('Vary', 'X-Auth-Token');
    if (!reply.hasHeader('x-openstack-request-id')) reply.header('x-openstack-request-id', `req-${randomUUID()}`);
  });

  app.setErrorHandler((err, req, reply) => {
    const e = toApiError(err, req);
    // Only unexpected failures are logged: a body parser's message may quote the body, password included.
    if (e.status >= 500) req.log.error({ err }, 'identity request failed');
    return sendError(reply, e, base());
  });
  app.setNotFoundHandler((_req, reply) => sendError(reply, apiError('ROUTE_NOT_FOUND'), base()));

  /** The caller's token claims: every route but version discovery and token issue needs one. */
  const caller = (req: FastifyRequest): TokenClaims => {
    const claims = tokens.verify(header(req, 'x-auth-token') ?? '');
    if (!claims || !directory.user(claims.userId)) throw apiError('UNAUTHORIZED');
    return claims;
  };
  const isAdmin = (c: TokenClaims): boolean => c.roles.includes('admin');
  const self = (req: FastifyRequest): string => base() + req.url;

  app.get('/', async (_req, reply) => {
    const v3 = identityUrl(base());
    return reply.code(300).header('Location', `${v3}/`).send({ versions: { values: [versionView(v3)] } });
  });
  const version = async () => ({ version: versionView(identityUrl(base())) });
  app.get('/v3', version);
  // keystoneauth asks for the auth_url as written, often with a slash; the host router may already fold it.
  if (!app.hasRoute({ method: 'GET', url: `${app.prefix}/v3/` })) app.get('/v3/', version);

  app.post('/v3/auth/tokens', async (req, reply) => {
    const { issued, user, project } = grantToken(req.body, directory, tokens);
    const catalog = 'nocatalog' in (req.query as Query) ? null : serviceCatalog(base(), opts.region);
    return reply.code(201).header('X-Subject-Token', issued.token).send(tokenView(issued, user, project, catalog));
  });

  /** The subject token, after checking the caller may look at it (Keystone's validate_token rule). */
  const subject = (req: FastifyRequest): { claims: TokenClaims; token: string } => {
    const me = caller(req);
    const token = header(req, 'x-subject-token');
    if (token === undefined) throw apiError('IDENTITY_VALIDATION', 'X-Subject-Token', 'header');
    const claims = tokens.verify(token);
    if (!claims || !directory.user(claims.userId)) throw apiError('TOKEN_NOT_FOUND');
    if (!isAdmin(me) && !me.roles.includes('service') && me.userId !== claims.userId) throw apiError('IDENTITY_FORBIDDEN', 'identity:validate_token');
    return { claims, token };
  };

  // Fastify answers HEAD from this route too, without the body, as Keystone's check_token does.
  app.get('/v3/auth/tokens', async (req, reply) => {
    const { claims, token } = subject(req);
    const project = claims.projectId === null ? null : (directory.project(claims.projectId) ?? null);
    const catalog = 'nocatalog' in (req.query as Query) ? null : serviceCatalog(base(), opts.region);
    return reply.header('X-Subject-Token', token).send(tokenView(claims, directory.user(claims.userId)!, project, catalog));
  });

  app.delete('/v3/auth/tokens', async (req, reply) => {
    tokens.revoke(subject(req).claims);
    return reply.code(204).send();
  });

  app.get('/v3/auth/projects', async (req) => {
    const v3 = identityUrl(base());
    return listView('projects', directory.projectsOf(caller(req).userId).map((p) => projectView(p, v3)), self(req));
  });

  app.get('/v3/projects', async (req) => {
    const me = caller(req);
    // Keystone's identity:list_projects needs an admin; clients then fall back to the id they hold.
    if (!isAdmin(me)) throw apiError('IDENTITY_FORBIDDEN', 'identity:list_projects');
    const q = req.query as Query;
    const visible = directory.projects;
    const v3 = identityUrl(base());
    const found = visible.filter((p) => (q.name === undefined || p.name === q.name) && inDomain(q.domain_id));
    return listView('projects', found.map((p) => projectView(p, v3)), self(req));
  });

  app.get<{ Params: { id: string } }>('/v3/projects/:id', async (req) => {
    const me = caller(req);
    const project = directory.project(req.params.id);
    if (!project) throw apiError('IDENTITY_NOT_FOUND', 'project', req.params.id);
    if (!isAdmin(me) && directory.rolesOn(me.userId, project.id).length === 0) throw apiError('IDENTITY_FORBIDDEN', 'identity:get_project');
    return { project: projectView(project, identityUrl(base())) };
  });

  app.get('/v3/users', async (req) => {
    const me = caller(req);
    if (!isAdmin(me)) throw apiError('IDENTITY_FORBIDDEN', 'identity:list_users');
    const q = req.query as Query;
    const visible = directory.users;
    const v3 = identityUrl(base());
    const found = visible.filter((u) => (q.name === undefined || u.name === q.name) && inDomain(q.domain_id));
    return listView('users', found.map((u) => userView(u, v3)), self(req));
  });

  app.get<{ Params: { id: string } }>('/v3/users/:id', async (req) => {
    const me = caller(req);
    const user = directory.user(req.params.id);
    if (!user) throw apiError('IDENTITY_NOT_FOUND', 'user', req.params.id);
    if (!isAdmin(me) && me.userId !== user.id) throw apiError('IDENTITY_FORBIDDEN', 'identity:get_user');
    return { user: userView(user, identityUrl(base())) };
  });

  app.get('/v3/roles', async (req) => {
    caller(req);
    const q = req.query as Query;
    const v3 = identityUrl(base());
    const found = directory.roles.filter((r) => q.name === undefined || r.name === q.name);
    return listView('roles', found.map((r) => roleView(r, v3)), self(req));
  });

  app.get<{ Params: { id: string } }>('/v3/roles/:id', async (req) => {
    caller(req);
    const role = directory.role(req.params.id);
    if (!role) throw apiError('IDENTITY_NOT_FOUND', 'role', req.params.id);
    return { role: roleView(role, identityUrl(base())) };
  });

  app.get('/v3/role_assignments', async (req) => {
    const me = caller(req);
    const q = req.query as Query;
    const found = directory.assignments.filter(
      (a) =>
        (isAdmin(me) || a.userId === me.userId) &&
        (q['user.id'] === undefined || a.userId === q['user.id']) &&
        (q['scope.project.id'] === undefined || a.projectId === q['scope.project.id']) &&
        (q['role.id'] === undefined || a.roleId === q['role.id']),
    );
    const v3 = identityUrl(base());
    return listView('role_assignments', found.map((a) => assignmentView(a, directory, v3, flag(q.include_names))), self(req));
  });

  app.get('/v3/domains', async (req) => {
    caller(req);
    const q = req.query as Query;
    const domain = directory.domain(q.name === undefined ? { id: DEFAULT_DOMAIN.id } : { name: q.name });
    return listView('domains', domain ? [domainView(domain, identityUrl(base()))] : [], self(req));
  });

  app.get<{ Params: { id: string } }>('/v3/domains/:id', async (req) => {
    caller(req);
    const domain = directory.domain({ id: req.params.id });
    if (!domain) throw apiError('IDENTITY_NOT_FOUND', 'domain', req.params.id);
    return { domain: domainView(domain, identityUrl(base())) };
  });
};

const inDomain = (domainId: string | undefined): boolean => domainId === undefined || domainId === DEFAULT_DOMAIN.id;

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Fastify's own failures (body parsing, size) mapped onto the catalog; anything else is a 500. */
function toApiError(err: unknown, req: FastifyRequest): ApiError {
  if (isApiError(err)) return err;
  const status = (err as { statusCode?: number }).statusCode;
  if (status === 413) return apiError('BODY_TOO_LARGE');
  if (status === 415) return apiError('UNSUPPORTED_MEDIA_TYPE', header(req, 'content-type'));
  if (status === 400) return apiError('INVALID_JSON');
  return apiError('INTERNAL', 'An unexpected error prevented the server from fulfilling your request.');
}

/** Keystone's error body; a 401 also names where to authenticate, like keystonemiddleware. */
function sendError(reply: FastifyReply, err: ApiError, publicUrl: string): FastifyReply {
  if (err.status === 401) reply.header('WWW-Authenticate', `Keystone uri="${publicUrl}${IDENTITY_PREFIX}"`);
  return reply.code(err.status).send({ error: { code: err.status, title: STATUS_CODES[err.status], message: err.message } });
}

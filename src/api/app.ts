/**
 * The Fastify application: Octavia's v2 API under /v2 and /v2.0 (with and without the
 * `lbaas/` segment) and Ostia's extensions beside it (`ostia/`), the embedded identity and
 * network look-ups, and the cross-cutting rules every route shares (auth, Accept, JSON bodies,
 * request ids, error bodies).
 */
import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import FindMyWay from 'find-my-way';
import type { Logger } from 'pino';
import { apiError } from '../domain/errors.js';
import { MaxRequestBodyBytes } from '../domain/defaults.js';
import type { RequestContext } from '../domain/context.js';
import { checkBodyDepth, decodeBody } from '../domain/schema-kit.js';
import { octaviaArgumentName } from './argument-names.js';
import type { ApiDeps } from './context.js';
import { sendError, toApiError } from './errors.js';
import { versionRoutes } from './resources/versions.js';
import { resourcePlugins, octaviaPlugins, ostiaPlugins } from './resources/index.js';
import { networkRoutes } from './network-lookups.js';
import { METRICS_PREFIX, metricsRoutes } from './metrics.js';
import { DASHBOARD_PREFIX } from '../domain/dashboard.js';
import { dashboardRoutes } from './dashboard.js';
import { EVENT_STREAM_TYPE } from './event-stream.js';
import { statusWatchOf } from './status-watch.js';

declare module 'fastify' {
  interface FastifyRequest {
    ctx: RequestContext;
  }
}

export interface Mount {
  prefix: string;
  plugin: FastifyPluginAsync;
  /** The plugin speaks another protocol: it authenticates and negotiates content itself (the key manager's binary payloads). */
  ownProtocol?: boolean;
}

export interface AppOptions extends ApiDeps {
  /** Extra plugins mounted at their own prefixes (the embedded identity, key manager…). */
  mounts?: Array<Mount>;
  publicUrl(): string;
  logger?: Logger | false;
}

/** Paths answered without a token, as keystonemiddleware skips them in Octavia. */
function isPublicPath(url: string): boolean {
  const path = url.split('?')[0]!;
  return path === '/' || path === '/healthcheck' || path.startsWith('/identity');
}

function acceptsJson(accept: string | undefined): boolean {
  return accepts(accept, (type) => type === '*/*' || type === 'application/*' || type === 'application/json' || !type.includes('/'));
}

function accepts(accept: string | undefined, ok: (type: string) => boolean): boolean {
  if (!accept || !accept.trim()) return true;
  return accept.split(',').some((part) => ok(part.split(';')[0]!.trim().toLowerCase()));
}

/** The event streams (status-events.ts) also answer browsers' EventSource, which accepts only their type. */
const acceptsEvents = (path: string, accept: string | undefined) => path.endsWith('/events') && accepts(accept, (type) => type === EVENT_STREAM_TYPE);

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    ...(opts.logger ? { loggerInstance: opts.logger as unknown as FastifyBaseLogger } : { logger: false }),
    bodyLimit: MaxRequestBodyBytes,
    genReqId: () => `req-${randomUUID()}`,
    // Per-request access logs would drown the worker's step logs; failures are logged below.
    logController: new LogController({ disableRequestLogging: true }),
    // Octavia strips a trailing `.json` and tolerates a trailing slash.
    rewriteUrl: (req) => (req.url ?? '/').replace(/\.json(?=\?|$)/, ''),
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true },
  });

  // A second router of the same shape answers "which methods exist for this path?" for 405s.
  const shapes = FindMyWay({ ignoreTrailingSlash: true, ignoreDuplicateSlashes: true });
  app.addHook('onRoute', (route) => {
    for (const m of [route.method].flat()) if (m !== 'HEAD' && !shapes.find(m as 'GET', route.url)) shapes.on(m as 'GET', route.url, () => undefined);
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser(['application/json', 'text/javascript', 'application/javascript'], { parseAs: 'string' }, (_req, body, done) => {
    const text = (body as string).trim();
    if (!text) return done(null, undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return done(apiError('INVALID_JSON'), undefined);
    }
    try {
      checkBodyDepth(parsed);
      done(null, parsed);
    } catch (e) {
      done(e as Error, undefined);
    }
  });
  app.addContentTypeParser('*', { parseAs: 'string' }, (req, body, done) => {
    // Clients send bodiless PUTs (failover) with odd content types: only refuse a real body.
    if (!(body as string).length) return done(null, undefined);
    done(apiError('UNSUPPORTED_MEDIA_TYPE', req.headers['content-type'] ?? ''), undefined);
  });

  // Route schemas are TypeBox; they are applied by the WSME-compatible decoder, not ajv.
  app.setValidatorCompiler(({ schema, httpPart, method }) => {
    if (httpPart !== 'body') return () => true;
    const root = Object.keys((schema as { properties?: object }).properties ?? {})[0] ?? 'body';
    const argument = octaviaArgumentName(root, method);
    return (data: unknown) => {
      try {
        return { value: decodeBody(schema as never, data, argument) };
      } catch (e) {
        return { error: e as Error };
      }
    };
  });

  app.decorateRequest('ctx', null as unknown as RequestContext);
  // Prometheus scrapes with its own Accept and a bearer token: /metrics authenticates itself.
  // The dashboard's files are public and HTML; its page then calls the APIs with a token.
  const mounts: Mount[] = [
    ...(opts.mounts ?? []),
    { prefix: METRICS_PREFIX, plugin: metricsRoutes(opts, opts.authenticate), ownProtocol: true },
    { prefix: DASHBOARD_PREFIX, plugin: dashboardRoutes(opts.config), ownProtocol: true },
  ];
  const ownProtocols = mounts.filter((m) => m.ownProtocol).map((m) => m.prefix);
  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-openstack-request-id', req.id);
    const path = req.url.split('?')[0]!;
    if (ownProtocols.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))) return;
    if (!acceptsJson(req.headers.accept) && !acceptsEvents(path, req.headers.accept)) throw apiError('NOT_ACCEPTABLE');
    if (isPublicPath(req.url)) return;
    req.ctx = await opts.authenticate(req.headers);
  });

  const { identity } = opts.config;
  const identityUri = () => (identity.mode === 'external' ? identity.external.authUrl.replace(/\/v3\/?$/, '') : `${opts.publicUrl()}/identity`);
  app.setErrorHandler((err, req, reply) => {
    const e = toApiError(err as Error);
    if (e.status >= 500) req.log.error({ err }, 'request failed');
    return sendError(reply, e, identityUri());
  });

  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0]!;
    const allowed = ['GET', 'POST', 'PUT', 'DELETE'].filter((m) => shapes.find(m as 'GET', path));
    if (allowed.length) {
      reply.header('Allow', allowed.join(', '));
      return sendError(reply, apiError('METHOD_NOT_ALLOWED'), identityUri());
    }
    return sendError(reply, apiError('ROUTE_NOT_FOUND'), identityUri());
  });

  app.addHook('preClose', async () => statusWatchOf(opts.db.status).close());

  await app.register(versionRoutes(opts));
  for (const version of ['/v2', '/v2.0']) {
    for (const plugin of resourcePlugins) {
      await app.register(plugin(opts), { prefix: `${version}/lbaas` });
      await app.register(plugin(opts), { prefix: version });
    }
    for (const plugin of octaviaPlugins) await app.register(plugin(opts), { prefix: `${version}/octavia` });
    for (const plugin of ostiaPlugins) await app.register(plugin(opts), { prefix: `${version}/ostia` });
  }
  await app.register(networkRoutes(opts), { prefix: '/v2.0' });
  for (const m of mounts) await app.register(m.plugin, { prefix: m.prefix });
  return app as unknown as FastifyInstance;
}

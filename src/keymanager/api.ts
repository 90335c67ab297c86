/**
 * The embedded key manager's HTTP API: the Barbican v1 subset real clients use, mounted at
 * `/key-manager` (the catalog's `key-manager` endpoint). It speaks Barbican's protocol rather
 * than Octavia's, so it authenticates its own requests (the version documents are public,
 * as Barbican's are), takes payload bodies of any media type, answers payloads in the type
 * asked for, and renders failures in Barbican's error shape.
 */
import type { FastifyError, FastifyInstance, FastifyPluginAsync, FastifyReply } from 'fastify';
import type { RequestContext } from '../domain/context.js';
import { isApiError } from '../domain/errors.js';
import { refBase } from './access.js';
import { containerRoutes } from './containers-api.js';
import { barbicanBody, BarbicanError, failure } from './errors.js';
import { grantRoutes } from './grants-api.js';
import type { KeyManagerDeps } from './http.js';
import { secretRoutes } from './secrets-api.js';

export type Authenticate = (headers: Record<string, string | string[] | undefined>) => Promise<RequestContext>;

export function keyManagerApi(deps: KeyManagerDeps, authenticate: Authenticate): FastifyPluginAsync {
  return async (app) => {
    const versionPaths = new Set([app.prefix, `${app.prefix}/v1`]);
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
      const text = (body as string).trim();
      if (!text) return done(null, undefined);
      try {
        done(null, JSON.parse(text));
      } catch {
        done(new BarbicanError(400, 'Malformed JSON'), undefined);
      }
    });
    // PUT carries raw payloads (text/plain, application/octet-stream); routes check the type.
    app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

    app.addHook('onRequest', async (req) => {
      if (!versionPaths.has(req.url.split('?')[0]!.replace(/\/+$/, ''))) req.ctx = await authenticate(req.headers);
    });
    app.setErrorHandler((err, req, reply) => {
      const e = asBarbicanError(err);
      if (e.status >= 500) req.log.error({ err: e.cause ?? err }, 'key manager request failed');
      if (e.status === 401) return reply.code(401).type('application/json').send({ error: { code: 401, title: 'Unauthorized', message: e.description } });
      return send(reply, e);
    });
    app.setNotFoundHandler((_req, reply) => send(reply, new BarbicanError(404, 'The resource could not be found.')));

    versionRoutes(app, deps);
    await secretRoutes(app, deps);
    await containerRoutes(app, deps);
    await grantRoutes(app, deps);
  };
}

function send(reply: FastifyReply, e: BarbicanError): FastifyReply {
  return reply.code(e.status).type('application/json').send(barbicanBody(e));
}

function asBarbicanError(err: unknown): BarbicanError {
  if (err instanceof BarbicanError) return err;
  if (isApiError(err)) return new BarbicanError(err.status, err.message);
  if ((err as FastifyError).code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new BarbicanError(413, 'Provided information too large to process');
  return failure('System', err);
}

/**
 * What keystoneauth's discovery reads: `/` lists the versions (300 Multiple Choices, the
 * pre-microversion shape Barbican gives a client that asks for none), `/v1` describes v1.
 */
function versionRoutes(app: FastifyInstance, deps: KeyManagerDeps): void {
  const v1 = () => ({
    id: 'v1',
    status: 'stable',
    links: [
      { rel: 'self', href: `${refBase(deps.publicUrl())}/` },
      { rel: 'describedby', type: 'text/html', href: 'https://docs.openstack.org/' },
    ],
    'media-types': [{ base: 'application/json', type: 'application/vnd.openstack.key-manager-v1+json' }],
  });
  app.get('/', async (_req, reply) => reply.code(300).send({ versions: { values: [v1()] } }));
  app.get('/v1', async () => ({ version: v1() }));
}

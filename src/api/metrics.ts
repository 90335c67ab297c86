/**
 * `GET /metrics`: Prometheus gauges of certificate expiry, computed from the database at
 * scrape time, so every API process reports the same values; and the metrics of this process
 * alone (deps.metrics: the health manager's heartbeat counters under `ostia up`). The metrics span every
 * project, so only an admin or global observer token is accepted — in X-Auth-Token, or as
 * Prometheus sends it (`authorization: Bearer <token>`, its `bearer_token_file`).
 */
import type { FastifyPluginAsync } from 'fastify';
import { Gauge, Registry } from 'prom-client';
import type { RequestContext } from '../domain/context.js';
import { apiError } from '../domain/errors.js';
import { ServedCertificateRoles, daysToExpiry } from '../domain/certificate-expiry.js';
import { allowed } from '../identity/policy.js';
import type { ApiDeps } from './context.js';

type Headers = Record<string, string | string[] | undefined>;

export const METRICS_PREFIX = '/metrics';

export function metricsRoutes(deps: ApiDeps, authenticate: (headers: Headers) => Promise<RequestContext>): FastifyPluginAsync {
  return async (app) => {
    // One registry per app: prom-client's global one would collide between apps of one process (tests).
    const registry = new Registry();
    const db = deps.db.kysely;

    new Gauge({
      name: 'ostia_certificate_days_to_expiry',
      help: 'Days until a certificate, CA bundle or CRL a listener or pool uses expires (negative once expired); the earliest when a role holds several (SNI).',
      labelNames: ['object_kind', 'object_id', 'role', 'load_balancer_id', 'project_id'] as const,
      registers: [registry],
      async collect() {
        const rows = await db
          .selectFrom('certificate_in_use')
          .select(['object_kind', 'object_id', 'role', 'load_balancer_id', 'project_id'])
          .select((eb) => eb.fn.min('not_after').as('not_after'))
          .groupBy(['object_kind', 'object_id', 'role', 'load_balancer_id', 'project_id'])
          .execute();
        const now = new Date();
        this.reset();
        for (const { not_after, ...labels } of rows) this.set(labels, daysToExpiry(not_after, now));
      },
    });

    new Gauge({
      name: 'ostia_listener_certificate_days_to_expiry',
      help: "Days until the first of a listener's own certificates (default and SNI) expires (negative once expired).",
      labelNames: ['listener_id', 'load_balancer_id', 'project_id'] as const,
      registers: [registry],
      async collect() {
        const rows = await db
          .selectFrom('certificate_in_use')
          .select(['object_id', 'load_balancer_id', 'project_id'])
          .select((eb) => eb.fn.min('not_after').as('not_after'))
          .where('object_kind', '=', 'listener')
          .where('role', 'in', [...ServedCertificateRoles])
          .groupBy(['object_id', 'load_balancer_id', 'project_id'])
          .execute();
        const now = new Date();
        this.reset();
        for (const r of rows) this.set({ listener_id: r.object_id, load_balancer_id: r.load_balancer_id, project_id: r.project_id }, daysToExpiry(r.not_after, now));
      },
    });

    app.get('/', async (req, reply) => {
      const ctx = await authenticate(withBearerToken(req.headers));
      if (!allowed(ctx, 'metrics', 'get_all')) throw apiError('POLICY_FORBIDDEN');
      const body = await Registry.merge([registry, deps.metrics]).metrics();
      return reply.type(registry.contentType).send(body);
    });
  };
}

/** A bearer token counts as X-Auth-Token when that header is absent. */
function withBearerToken(headers: Headers): Headers {
  if (headers['x-auth-token']) return headers;
  const authorization = [headers.authorization].flat()[0];
  const bearer = authorization && /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return bearer ? { ...headers, 'x-auth-token': bearer[1] } : headers;
}

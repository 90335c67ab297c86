/**
 * /ostia: what Ostia serves beyond Octavia's API, so that each view of the dashboard reads its live
 * data in one request: the failover history, the certificates in use with their expiry, the capacity
 * plan and the provider advice of the live load balancers.
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ApiDeps } from '../context.js';
import { apiError } from '../../domain/errors.js';
import { FailoverHistoryLimit } from '../../domain/defaults.js';
import { isUuid, normaliseUuid } from '../../domain/net.js';
import { authorize } from '../../identity/policy.js';
import { listCertificatesInUse } from '../../certificate-use/expiry-list.js';
import { livePlan } from '../../tools/plan/plan.js';
import { adviseLive } from '../../tools/advise/live.js';
import { authorizeOwnedList, listedProject } from '../listing.js';
import { failoverHistory } from '../views/failovers.js';
import { listenerFor } from '../loaders.js';
import { acmeCertificateCodec } from '../../db/records/acme-certificate.js';
import { timestamp } from '../../domain/time.js';
import { listenerCodec, type ListenerRow } from '../../db/records/listener.js';

/** The query's values, the last of a repeated key (as lists read them); a key not in `known` is refused as a list refuses an unknown filter. */
export function queryOf<K extends string>(req: FastifyRequest, known: readonly K[]): Partial<Record<K, string>> {
  const values: Partial<Record<K, string>> = {};
  for (const [key, value] of Object.entries(req.query as Record<string, string | string[]>)) {
    if (!(known as readonly string[]).includes(key)) throw apiError('INVALID_FILTER');
    values[key as K] = [value].flat().at(-1)!;
  }
  return values;
}

function failoverLimit(raw: string | undefined): number {
  if (raw === undefined || raw === '') return FailoverHistoryLimit.default;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw apiError('INVALID_LIMIT', raw);
  return Math.min(Number(raw), FailoverHistoryLimit.max);
}

export const ostiaExtensionRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  const db = deps.db.kysely;

  /** A listener's managed certificate as its orders have got it (acme_domains); null fields before the first order. */
  const managedCertificate = async (listener: ListenerRow) => {
    if (listener.acme_domains === null) throw apiError('VALIDATION', `Listener ${listener.id} has no managed certificate: its acme_domains is null.`);
    const row = await db.selectFrom('acme_certificate').selectAll().where('listener_id', '=', listener.id).executeTakeFirst();
    const p = row ? acmeCertificateCodec.decode(row) : undefined;
    return {
      listener_id: listener.id,
      domains: listenerCodec.decode(listener).acme_domains!,
      container_ref: p?.container_ref ?? null,
      not_before: p?.not_before ?? null,
      not_after: p?.not_after ?? null,
      renew_requested: p?.renew_requested ?? false,
      failures: p?.failures ?? 0,
      last_error: p?.last_error ?? null,
      next_attempt_at: p && p.next_attempt_at > 0 ? new Date(p.next_attempt_at).toISOString() : null,
    };
  };

  app.get<{ Params: { id: string } }>('/listeners/:id/certificate', async (req) => ({
    managed_certificate: await managedCertificate(await listenerFor(deps, req.ctx, req.params.id, 'get_one')),
  }));

  /** Who may update the listener may have its managed certificate ordered again now (the housekeeper's next round), whatever its expiry. */
  app.put<{ Params: { id: string } }>('/listeners/:id/certificate/renew', async (req, reply) => {
    const listener = await listenerFor(deps, req.ctx, req.params.id, 'put');
    await managedCertificate(listener);
    await db
      .insertInto('acme_certificate')
      .values(acmeCertificateCodec.encode({
        listener_id: listener.id, domains: listenerCodec.decode(listener).acme_domains!, container_ref: null, not_before: null, not_after: null,
        renew_requested: true, failures: 0, last_error: null, next_attempt_at: 0, claimed_until: 0, updated_at: timestamp(),
      }))
      .onConflict((oc) => oc.column('listener_id').doUpdateSet({ renew_requested: 1, next_attempt_at: 0, updated_at: timestamp() }))
      .execute();
    return reply.code(202).send({ managed_certificate: await managedCertificate(listener) });
  });

  /** Who may read amphorae may read their failovers. */
  app.get('/failovers', async (req) => {
    authorize(req.ctx, 'amphora', 'get_all');
    const { loadbalancer_id: lbId, limit } = queryOf(req, ['loadbalancer_id', 'limit']);
    const loadBalancerId = lbId === undefined ? {} : { loadBalancerId: isUuid(lbId) ? normaliseUuid(lbId) : lbId };
    return { failovers: await failoverHistory(db, { ...loadBalancerId, limit: failoverLimit(limit) }) };
  });

  /** Who may list listeners may list the certificates they and their pools use, of the same projects. */
  app.get('/certificates', async (req) => {
    const seeAll = authorizeOwnedList(req.ctx, 'listener');
    const projectId = listedProject(req.ctx, seeAll, queryOf(req, ['project_id']));
    return { certificates: await listCertificatesInUse(db, projectId === undefined ? {} : { projectId }) };
  });

  /** `ostia plan --from-live --json`, from this process's database and configuration. */
  app.get('/plan', async (req) => {
    authorize(req.ctx, 'planning', 'get_all');
    // It takes no parameter: the plan is of every live load balancer.
    queryOf(req, []);
    const plan = await livePlan(deps.db, deps.config);
    if (!plan) throw apiError('CONFLICT', 'No load balancer runs here, so there is no live class to plan: create load balancers first.');
    return plan;
  });

  /** `ostia advise --from-live --json [--project ID]`. */
  app.get('/advice', async (req) => {
    authorize(req.ctx, 'planning', 'get_all');
    return adviseLive(deps.db, queryOf(req, ['project_id']).project_id);
  });
};

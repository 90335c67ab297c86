/**
 * /lbaas/quotas: the stored rows (nulls kept), one project's effective limits with its
 * current usage, the configured defaults, update (202 + effective) and reset (202).
 */
import type { FastifyPluginAsync } from 'fastify';
import type { ApiDeps } from '../context.js';
import type { QuotaRecord } from '../../db/records/quota.js';
import type { QuotaResource } from '../../domain/defaults.js';
import { QuotaUpdateBody } from '../../domain/schemas/quota.js';
import type { Static } from '../../domain/schema-kit.js';
import { allowed, authorize } from '../../identity/policy.js';
import { listPage, parseListQuery, pickFields, selfUrl, projectScope, type Attribute, type ListSpec } from '../listing.js';
import { effectiveQuota, quotaUsage } from '../../db/quota-usage.js';
import { quotaView, quotaWithUsage } from '../views/quota.js';
import { resetQuota, setQuota } from '../writes/quotas.js';

const limit = (column: QuotaResource): Attribute => ({ column, kind: 'int' });

export const quotaList: ListSpec = {
  table: 'quota',
  key: 'project_id',
  tagged: false,
  projectColumn: 'project_id',
  tieBreakers: ['project_id'],
  attributes: {
    project_id: { column: 'project_id', kind: 'string' },
    tenant_id: { column: 'project_id', kind: 'string' },
    load_balancer: limit('load_balancer'),
    loadbalancer: limit('load_balancer'),
    listener: limit('listener'),
    member: limit('member'),
    pool: limit('pool'),
    health_monitor: limit('health_monitor'),
    healthmonitor: limit('health_monitor'),
    l7policy: limit('l7policy'),
    l7rule: limit('l7rule'),
  },
};

/**
 * Octavia routes /quotas/defaults to the quota of a project literally named "defaults", so
 * its RBAC treats it as a foreign project (admins and global readers only). We keep that
 * RBAC and body, but always answer with the configured defaults.
 */
const DEFAULTS_PROJECT = 'defaults';

export const quotaRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  const db = deps.db.kysely;

  const effectiveWithUsage = async (projectId: string) => {
    const [limits, usage] = await Promise.all([effectiveQuota(db, deps.config.quotas, projectId), quotaUsage(db, projectId)]);
    return { quota: quotaWithUsage(projectId, limits, usage) };
  };

  app.get('/quotas', async (req) => {
    const ctx = req.ctx;
    const seeAll = allowed(ctx, 'quota', 'get_all-global');
    authorize(ctx, 'quota', seeAll ? 'get_all-global' : 'get_all');
    const query = req.query as Record<string, string | string[]>;
    const q = parseListQuery(query, quotaList, deps.config.api.paginationMaxLimit);
    const page = await listPage<QuotaRecord>(db, quotaList, q, projectScope(ctx, seeAll, query, 'quota.project_id'), selfUrl(req, deps.publicUrl()));
    return { quotas: page.rows.map((row) => pickFields(quotaView(row.project_id, row), q.fields)), quotas_links: page.links };
  });

  app.get('/quotas/defaults', async (req) => {
    authorize(req.ctx, 'quota', 'get_one', DEFAULTS_PROJECT);
    return { quota: quotaView(DEFAULTS_PROJECT, deps.config.quotas) };
  });

  app.get<{ Params: { projectId: string } }>('/quotas/:projectId/default', async (req) => {
    authorize(req.ctx, 'quota', 'get_defaults', req.params.projectId);
    return { quota: quotaView(req.params.projectId, deps.config.quotas) };
  });

  app.get<{ Params: { projectId: string } }>('/quotas/:projectId', async (req) => {
    authorize(req.ctx, 'quota', 'get_one', req.params.projectId);
    return effectiveWithUsage(req.params.projectId);
  });

  app.put<{ Params: { projectId: string } }>('/quotas/:projectId', { schema: { body: QuotaUpdateBody } }, async (req, reply) => {
    const { projectId } = req.params;
    authorize(req.ctx, 'quota', 'put', projectId);
    await setQuota(db, projectId, (req.body as Static<typeof QuotaUpdateBody>).quota);
    return reply.code(202).send(await effectiveWithUsage(projectId));
  });

  app.delete<{ Params: { projectId: string } }>('/quotas/:projectId', async (req, reply) => {
    const { projectId } = req.params;
    authorize(req.ctx, 'quota', 'delete', projectId);
    await resetQuota(db, projectId);
    return reply.code(202).send();
  });
};

/**
 * Read-only views across a load balancer's tree: the status tree clients wait on, the
 * statistics, and Ostia's provisioning trace extension.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { ApiDeps } from '../context.js';
import { statusTree } from '../views/status-tree.js';
import { loadBalancerFor } from '../loaders.js';
import { readTrace } from '../../controller/trace.js';
import { allowed } from '../../identity/policy.js';
import { statsTotals } from '../views/stats.js';

/** A failed step's error as its load balancer's owner reads it. */
export const OPERATOR_ONLY = 'failed; the status_reason says why, an operator\'s trace has the detail';

export const loadBalancerStatusRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  for (const path of ['/loadbalancers/:id/status', '/loadbalancers/:id/statuses']) {
    app.get<{ Params: { id: string } }>(path, async (req) => {
      const lb = await loadBalancerFor(deps, req.ctx, req.params.id, 'get_status');
      return { statuses: await statusTree(deps.db.kysely, lb) };
    });
  }

  app.get<{ Params: { id: string } }>('/loadbalancers/:id/stats', async (req) => {
    const lb = await loadBalancerFor(deps, req.ctx, req.params.id, 'get_stats');
    return { stats: await statsTotals(deps.db.kysely, { loadBalancerId: lb.id }) };
  });

  /**
   * Ostia extension: every step of every job run for this LB, oldest first. A step's error is
   * the control plane's own text (agent addresses, file paths, HAProxy's output): an operator's
   * to read; who may not see amphorae learns that the step failed, and why in the status reasons.
   */
  app.get<{ Params: { id: string } }>('/loadbalancers/:id/trace', async (req) => {
    const lb = await loadBalancerFor(deps, req.ctx, req.params.id, 'get_status');
    const trace = await readTrace(deps.db, lb.id);
    const visible = allowed(req.ctx, 'amphora', 'get_one') ? trace : trace.map((s) => ({ ...s, error: s.error === null ? null : OPERATOR_ONLY }));
    return { trace: visible, status_reason: lb.status_reason };
  });
};

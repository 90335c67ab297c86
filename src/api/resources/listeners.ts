/** /lbaas/listeners: list, show, create, update, delete, stats. */
import type { FastifyPluginAsync } from 'fastify';
import type { ApiDeps } from '../context.js';
import { ListenerCreateBody, ListenerUpdateBody } from '../../domain/schemas/listener.js';
import { authorize } from '../../identity/policy.js';
import { loadBalancerIdAttribute, treeObjectAttributes, type ListSpec } from '../listing.js';
import { treeRoutes } from '../shared-routes.js';
import { renderListeners } from '../views/listener.js';
import { statsTotals } from '../views/stats.js';
import { listenerFor, parentLoadBalancer } from '../loaders.js';
import { createListener, deleteListener, updateListener, verifyListenerUpdateRefs, verifyNewListenerRefs } from '../writes/listeners.js';
import { changeCertificateUser, listenerUser, updateCertificateUser } from '../writes/tls-consumers.js';
import { withPlaceholderCertificate } from '../writes/acme-listeners.js';

export const listenerList: ListSpec = {
  table: 'listener',
  tagged: true,
  projectColumn: 'project_id',
  computed: { l7policies: [], tags: [], loadbalancers: ['load_balancer_id'] },
  attributes: treeObjectAttributes(ListenerCreateBody.properties.listener, { stored: loadBalancerIdAttribute }),
};

export const listenerRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  const { db } = deps;

  treeRoutes(app, deps, {
    path: '/listeners', root: 'listener', list: listenerList, load: listenerFor,
    render: renderListeners,
    createBody: ListenerCreateBody,
    create: async ({ listener }, req) => {
      const { loadbalancer_id: lbId, project_id: _project, tenant_id: _tenant, ...input } = listener;
      const lb = await parentLoadBalancer(db.kysely, lbId);
      authorize(req.ctx, 'listener', 'post', lb.project_id);
      return withPlaceholderCertificate(deps, req, lb, input, (placeholder) =>
        changeCertificateUser(deps, req, listenerUser, true, (caller) => verifyNewListenerRefs(deps, caller, lb, input), (trx) => createListener(deps, trx, lb, input, placeholder)),
      );
    },
    updateBody: ListenerUpdateBody,
    update: (row, { listener: b }, req) => updateCertificateUser(deps, req, listenerUser, row, b, verifyListenerUpdateRefs, updateListener),
    remove: deleteListener,
  });

  app.get<{ Params: { id: string } }>('/listeners/:id/stats', async (req) => {
    const listener = await listenerFor(deps, req.ctx, req.params.id, 'get_stats');
    return { stats: await statsTotals(db.kysely, { listenerId: listener.id }) };
  });
};

/** /lbaas/pools: list, show, create (optionally with its monitor and members), update, delete. */
import type { FastifyPluginAsync } from 'fastify';
import type { ApiDeps } from '../context.js';
import { apiError } from '../../domain/errors.js';
import { PoolCreateBody, PoolUpdateBody } from '../../domain/schemas/pool.js';
import { assertPoolProtocolAllowed } from '../../domain/rules/listener.js';
import { authorize } from '../../identity/policy.js';
import { loadBalancerIdAttribute, treeObjectAttributes, type ListSpec } from '../listing.js';
import { treeRoutes } from '../shared-routes.js';
import { renderPools } from '../views/pool.js';
import { parentLoadBalancer, poolFor } from '../loaders.js';
import { createPool, deletePool, listenerForNewPool, updatePool, verifyNewPoolRefs, verifyPoolUpdateRefs } from '../writes/pools.js';
import { changeCertificateUser, poolUser, updateCertificateUser } from '../writes/tls-consumers.js';

export const poolList: ListSpec = {
  table: 'pool',
  tagged: true,
  projectColumn: 'project_id',
  computed: { listeners: [], members: [], healthmonitor_id: [], tags: [], loadbalancers: ['load_balancer_id'] },
  attributes: treeObjectAttributes(PoolCreateBody.properties.pool, { stored: loadBalancerIdAttribute, requestOnly: ['listener_id'] }),
};

export const poolRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  const { db } = deps;

  treeRoutes(app, deps, {
    path: '/pools', root: 'pool', list: poolList, load: poolFor,
    render: renderPools,
    createBody: PoolCreateBody,
    create: async ({ pool }, req) => {
      const { loadbalancer_id: lbId, listener_id: listenerId, project_id: _project, tenant_id: _tenant, ...input } = pool;
      if (!lbId && !listenerId) throw apiError('VALIDATION', 'Must provide at least one of: loadbalancer_id, listener_id');
      const listener = listenerId ? await listenerForNewPool(db.kysely, listenerId) : undefined;
      const lb = await parentLoadBalancer(db.kysely, lbId ?? listener!.load_balancer_id);
      if (listener && listener.load_balancer_id !== lb.id) throw apiError('VALIDATION', 'Listener and pool must be on the same load balancer.');
      authorize(req.ctx, 'pool', 'post', lb.project_id);
      if (listener) assertPoolProtocolAllowed(listener.protocol, input.protocol);
      return changeCertificateUser(deps, req, poolUser, true, (caller) => verifyNewPoolRefs(deps, caller, input), (trx) => createPool(deps, trx, req.ctx, lb, listener, input));
    },
    updateBody: PoolUpdateBody,
    update: (row, { pool: b }, req) => updateCertificateUser(deps, req, poolUser, row, b, verifyPoolUpdateRefs, updatePool),
    remove: deletePool,
  });
};

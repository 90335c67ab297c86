/** /lbaas/pools: list, show, create (optionally with its monitor and members), update, delete. */
import type { FastifyPluginAsync } from 'fastify';
import type { ApiDeps } from '../context.js';
import { apiError } from '../../domain/errors.js';
import type { Static } from '../../domain/schema-kit.js';
import { PoolCreateBody, PoolUpdateBody } from '../../domain/schemas/pool.js';
import { assertPoolProtocolAllowed } from '../../domain/rules/listener.js';
import { authorize } from '../../identity/policy.js';
import { treeAttributes, nameAttributes, type ListSpec } from '../listing.js';
import { treeDeleteRoute, treeReadRoutes, treeUpdateRoute } from '../shared-routes.js';
import { renderPools, type PoolRow } from '../views/pool.js';
import { parentLoadBalancer, poolFor } from '../loaders.js';
import { change } from '../change.js';
import { tlsCaller, touchesPoolRefs } from '../tls-refs.js';
import { createPool, deletePool, listenerForNewPool, updatePool, verifyNewPoolRefs, verifyPoolUpdateRefs } from '../writes/pools.js';
import { registerPoolRefs } from '../writes/tls-consumers.js';

export const poolList: ListSpec = {
  table: 'pool',
  tagged: true,
  projectColumn: 'project_id',
  attributes: {
    ...treeAttributes,
    ...nameAttributes,
    protocol: { column: 'protocol', kind: 'string' },
    lb_algorithm: { column: 'lb_algorithm', kind: 'string' },
    loadbalancer_id: { column: 'load_balancer_id', kind: 'uuid' },
    tls_enabled: { column: 'tls_enabled', kind: 'bool' },
    tls_container_ref: { column: 'tls_container_ref', kind: 'string' },
    ca_tls_container_ref: { column: 'ca_tls_container_ref', kind: 'string' },
    crl_container_ref: { column: 'crl_container_ref', kind: 'string' },
    tls_ciphers: { column: 'tls_ciphers', kind: 'string' },
  },
};

export const poolRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  const { db } = deps;

  treeReadRoutes(app, deps, {
    path: '/pools', root: 'pool', list: poolList, load: poolFor,
    render: (rows: PoolRow[]) => renderPools(db.kysely, rows),
  });

  app.post('/pools', { schema: { body: PoolCreateBody } }, async (req, reply) => {
    const { loadbalancer_id: lbId, listener_id: listenerId, project_id: _project, tenant_id: _tenant, ...input } = (req.body as Static<typeof PoolCreateBody>).pool;
    if (!lbId && !listenerId) throw apiError('VALIDATION', 'Must provide at least one of: loadbalancer_id, listener_id');
    const listener = listenerId ? await listenerForNewPool(db.kysely, listenerId) : undefined;
    const lb = await parentLoadBalancer(db.kysely, lbId ?? listener!.load_balancer_id);
    if (listener && listener.load_balancer_id !== lb.id) throw apiError('VALIDATION', 'Listener and pool must be on the same load balancer.');
    authorize(req.ctx, 'pool', 'post', lb.project_id);
    if (listener) assertPoolProtocolAllowed(listener.protocol, input.protocol);
    await verifyNewPoolRefs(deps, tlsCaller(req), input);
    const row = await change(deps, (trx) => createPool(deps, trx, req.ctx, lb, listener, input));
    await registerPoolRefs(deps, req.log, row);
    const [view] = await renderPools(db.kysely, [row]);
    return reply.code(201).send({ pool: view });
  });

  treeUpdateRoute(app, deps, {
    path: '/pools', root: 'pool', schema: PoolUpdateBody, load: poolFor,
    update: async (row, { pool: b }, req) => {
      await verifyPoolUpdateRefs(deps, tlsCaller(req), row, b);
      const { view, updated } = await change(deps, (trx) => updatePool(deps, trx, row, b));
      if (touchesPoolRefs(b)) await registerPoolRefs(deps, req.log, updated);
      return view;
    },
  });

  treeDeleteRoute(app, deps, '/pools', poolFor, deletePool);
};

/** /lbaas/loadbalancers: create (plain or with its tree), list, show, update, delete, failover, and Ostia's migrate. */
import type { FastifyPluginAsync } from 'fastify';
import type { ApiDeps } from '../context.js';
import { LoadBalancerCreateBody, LoadBalancerMigrateBody, LoadBalancerUpdateBody } from '../../domain/schemas/loadbalancer.js';
import type { Static } from '../../domain/schema-kit.js';
import { migrateLoadBalancer } from '../writes/migrations.js';
import { treeObjectAttributes, type ListSpec } from '../listing.js';
import { treeRoutes } from '../shared-routes.js';
import { renderLoadBalancers } from '../views/loadbalancer.js';
import type { LoadBalancerRow } from '../../db/records/load-balancer.js';
import { renderLoadBalancerTree } from '../views/loadbalancer-tree.js';
import { loadBalancerFor } from '../loaders.js';
import { change } from '../change.js';
import { tlsCaller } from '../tls-refs.js';
import { authorizedCreator, checkLoadBalancerUpdate, deleteLoadBalancer, failoverLoadBalancer, updateLoadBalancer } from '../writes/loadbalancers.js';
import { createLoadBalancerTree, registerGraphConsumers, verifyGraphTlsRefs } from '../writes/graph.js';

export const loadBalancerList: ListSpec = {
  table: 'load_balancer',
  tagged: true,
  projectColumn: 'project_id',
  computed: { listeners: [], pools: [], tags: [] },
  attributes: treeObjectAttributes(LoadBalancerCreateBody.properties.loadbalancer, { stored: { vip_vnic_type: { column: 'vip_vnic_type', kind: 'string' } } }),
};

/** Parses `?cascade=` the way Octavia does (boolean strings). */
function truthy(v: unknown): boolean {
  return typeof v === 'string' && ['true', 't', 'yes', 'y', 'on', '1'].includes(v.toLowerCase());
}

export const loadBalancerRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  const { db } = deps;
  const render = async (row: LoadBalancerRow) => (await renderLoadBalancers(db.kysely, [row]))[0]!;

  treeRoutes(app, deps, {
    path: '/loadbalancers', root: 'loadbalancer', list: loadBalancerList, load: loadBalancerFor,
    render: renderLoadBalancers,
    createBody: LoadBalancerCreateBody,
    create: async ({ loadbalancer: b }, req) => {
      // Who may create comes before what the certificates hold: a refused caller learns nothing about them.
      authorizedCreator(req.ctx, b);
      await verifyGraphTlsRefs(deps, tlsCaller(req), b);
      const tree = await db.kysely.transaction().execute((trx) => createLoadBalancerTree(deps, trx, req.ctx, b));
      await registerGraphConsumers(deps, req.log, tree);
      // Rendered before the worker is woken, so the answer shows the tree as created (PENDING_CREATE).
      const full = await renderLoadBalancerTree(db.kysely, tree);
      deps.jobs.notify();
      return full;
    },
    updateBody: LoadBalancerUpdateBody,
    update: async (row, { loadbalancer: b }, req) => {
      checkLoadBalancerUpdate(deps, row, b);
      await change(deps, (trx) => updateLoadBalancer(trx, row, b));
      return render(await loadBalancerFor(deps, req.ctx, row.id, 'get_one'));
    },
    remove: (trx, row, req) => deleteLoadBalancer(trx, row, truthy((req.query as { cascade?: string }).cascade)),
  });

  app.put<{ Params: { id: string } }>('/loadbalancers/:id/failover', async (req, reply) => {
    const row = await loadBalancerFor(deps, req.ctx, req.params.id, 'put_failover');
    deps.providers.forLoadBalancer(row.provider).checks.operation?.('loadbalancer.failover');
    await change(deps, (trx) => failoverLoadBalancer(trx, row));
    return reply.code(202).send();
  });

  // An Ostia extension: another flavor or topology, with the VIP kept (writes/migrations.ts).
  app.put<{ Params: { id: string } }>('/loadbalancers/:id/migrate', { schema: { body: LoadBalancerMigrateBody } }, async (req, reply) => {
    const row = await loadBalancerFor(deps, req.ctx, req.params.id, 'put_migrate');
    const { migration } = req.body as Static<typeof LoadBalancerMigrateBody>;
    await change(deps, (trx) => migrateLoadBalancer(deps, trx, row, migration));
    return reply.code(202).send({ loadbalancer: await render(await loadBalancerFor(deps, req.ctx, row.id, 'get_one')) });
  });
};

/** /lbaas/l7policies: list, show, create (with inline rules), update, delete. */
import type { FastifyPluginAsync } from 'fastify';
import type { ApiDeps } from '../context.js';
import { L7PolicyCreateBody, L7PolicyUpdateBody } from '../../domain/schemas/l7policy.js';
import { treeObjectAttributes, type ListSpec } from '../listing.js';
import { treeRoutes } from '../shared-routes.js';
import { renderL7Policies } from '../views/l7policy.js';
import type { L7PolicyRow } from '../../db/records/l7policy.js';
import { l7PolicyFor, parentListener } from '../loaders.js';
import { change } from '../change.js';
import { checkL7PolicyUpdate, createL7Policy, deleteL7Policy, updateL7Policy } from '../writes/l7policies.js';

export const l7PolicyList: ListSpec = {
  table: 'l7policy',
  tagged: true,
  projectColumn: 'project_id',
  computed: { rules: [], tags: [] },
  attributes: treeObjectAttributes(L7PolicyCreateBody.properties.l7policy),
};

export const l7PolicyRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  const { db } = deps;
  const render = async (row: L7PolicyRow) => (await renderL7Policies(db.kysely, [row]))[0]!;

  treeRoutes(app, deps, {
    path: '/l7policies', root: 'l7policy', list: l7PolicyList, load: l7PolicyFor,
    render: renderL7Policies,
    createBody: L7PolicyCreateBody,
    create: async ({ l7policy: b }, req) => {
      const listener = await parentListener(db.kysely, b.listener_id);
      const { policy } = await change(deps, (trx) => createL7Policy(deps, trx, req.ctx, listener, b));
      return render(policy);
    },
    updateBody: L7PolicyUpdateBody,
    update: async (stored, { l7policy: b }) => {
      const listener = await parentListener(db.kysely, stored.listener_id);
      const checked = await checkL7PolicyUpdate(deps, stored, listener, b);
      return render(await change(deps, (trx) => updateL7Policy(trx, stored, listener, checked, b)));
    },
    remove: deleteL7Policy,
  });
};

/** /lbaas/healthmonitors: list, show, create, update, delete. */
import type { FastifyPluginAsync } from 'fastify';
import type { ApiDeps } from '../context.js';
import { HealthMonitorCreateBody, HealthMonitorUpdateBody } from '../../domain/schemas/healthmonitor.js';
import type { Static } from '../../domain/schema-kit.js';
import { treeObjectAttributes, type ListSpec } from '../listing.js';
import { treeDeleteRoute, treeReadRoutes, treeUpdateRoute } from '../shared-routes.js';
import { renderHealthMonitors } from '../views/healthmonitor.js';
import type { HealthMonitorRow } from '../../db/records/health-monitor.js';
import { healthMonitorFor, parentPool } from '../loaders.js';
import { change } from '../change.js';
import { checkHealthMonitorUpdate, createHealthMonitor, deleteHealthMonitor, updateHealthMonitor } from '../writes/healthmonitors.js';

export const healthMonitorList: ListSpec = {
  table: 'health_monitor',
  tagged: true,
  projectColumn: 'project_id',
  // Only HTTP(S) monitors show these: the view reads the type too.
  computed: { tags: [], pools: ['pool_id'], http_method: ['http_method', 'type'], url_path: ['url_path', 'type'], expected_codes: ['expected_codes', 'type'] },
  attributes: treeObjectAttributes(HealthMonitorCreateBody.properties.healthmonitor),
};

export const healthMonitorRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  const { db } = deps;
  const render = async (row: HealthMonitorRow) => (await renderHealthMonitors(db.kysely, [row]))[0]!;

  treeReadRoutes(app, deps, {
    path: '/healthmonitors', root: 'healthmonitor', list: healthMonitorList, load: healthMonitorFor,
    render: (rows: HealthMonitorRow[], fields) => renderHealthMonitors(db.kysely, rows, fields),
  });

  app.post('/healthmonitors', { schema: { body: HealthMonitorCreateBody } }, async (req, reply) => {
    const b = (req.body as Static<typeof HealthMonitorCreateBody>).healthmonitor;
    const pool = await parentPool(db.kysely, b.pool_id);
    const row = await change(deps, (trx) => createHealthMonitor(deps, trx, req.ctx, pool, b));
    return reply.code(201).send({ healthmonitor: await render(row) });
  });

  treeUpdateRoute(app, deps, {
    path: '/healthmonitors', root: 'healthmonitor', schema: HealthMonitorUpdateBody, load: healthMonitorFor,
    update: async (hm, { healthmonitor: b }) => {
      const pool = await parentPool(db.kysely, hm.pool_id);
      const checked = await checkHealthMonitorUpdate(deps, hm, pool, b);
      return render(await change(deps, (trx) => updateHealthMonitor(trx, hm, pool, checked, b.tags)));
    },
  });

  treeDeleteRoute(app, deps, '/healthmonitors', healthMonitorFor, deleteHealthMonitor);
};

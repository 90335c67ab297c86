/** /lbaas/healthmonitors: list, show, create, update, delete. */
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import type { Kysely, Transaction } from 'kysely';
import type { ApiDeps } from '../context.js';
import type { Database, PoolTable } from '../../db/schema.js';
import { apiError } from '../../domain/errors.js';
import type { RequestContext } from '../../domain/context.js';
import { timestamp } from '../../domain/time.js';
import { HealthMonitorDefaults } from '../../domain/defaults.js';
import type { HealthMonitorType } from '../../domain/enums.js';
import { HealthMonitorCreateBody, HealthMonitorUpdateBody, type HealthMonitorSingleCreate } from '../../domain/schemas/healthmonitor.js';
import type { Static } from '../../domain/schema-kit.js';
import {
  resolveHealthMonitorCreate,
  resolveHealthMonitorUpdate,
  type HealthMonitorAttrs,
  type HealthMonitorSettings,
} from '../../domain/rules/healthmonitor.js';
import { authorize } from '../../identity/policy.js';
import { enqueue } from '../../controller/jobs.js';
import { listOwned, pickFields, fieldsOf, treeAttributes, type ListSpec } from '../listing.js';
import { renderHealthMonitors, type HealthMonitorRow } from '../views/healthmonitor.js';
import { writeTags } from '../tags.js';
import { lockPoolForChildChange, markPending } from '../../db/lb-lock.js';
import { checkQuota } from '../quota.js';
import { change } from '../change.js';

type Q = Kysely<Database> | Transaction<Database>;
type Trx = Transaction<Database>;

export const healthMonitorList: ListSpec = {
  table: 'health_monitor',
  tagged: true,
  projectColumn: 'project_id',
  attributes: {
    ...treeAttributes,
    name: { column: 'name', kind: 'string' },
    type: { column: 'type', kind: 'string' },
    delay: { column: 'delay', kind: 'int' },
    timeout: { column: 'timeout', kind: 'int' },
    max_retries: { column: 'max_retries', kind: 'int' },
    max_retries_down: { column: 'max_retries_down', kind: 'int' },
    http_method: { column: 'http_method', kind: 'string' },
    url_path: { column: 'url_path', kind: 'string' },
    expected_codes: { column: 'expected_codes', kind: 'string' },
    http_version: { column: 'http_version', kind: 'float' },
    domain_name: { column: 'domain_name', kind: 'string' },
    pool_id: { column: 'pool_id', kind: 'uuid' },
  },
};

function monitorSettings(deps: ApiDeps): HealthMonitorSettings {
  return { allowPing: deps.config.api.allowPingHealthMonitors, udpConnectMinDelay: HealthMonitorDefaults.udp_connect_min_interval };
}

function attrsOf(row: HealthMonitorRow): HealthMonitorAttrs {
  return {
    name: row.name,
    admin_state_up: row.admin_state_up === 1,
    type: row.type as HealthMonitorType,
    delay: row.delay,
    timeout: row.timeout,
    max_retries: row.max_retries,
    max_retries_down: row.max_retries_down,
    http_method: row.http_method,
    url_path: row.url_path,
    expected_codes: row.expected_codes,
    http_version: row.http_version,
    domain_name: row.domain_name,
  };
}

function columnsOf(attrs: HealthMonitorAttrs) {
  return { ...attrs, admin_state_up: attrs.admin_state_up ? 1 : 0 };
}

async function providerOf(q: Q, lbId: string): Promise<string> {
  return (await q.selectFrom('load_balancer').select('provider').where('id', '=', lbId).executeTakeFirstOrThrow()).provider;
}

/**
 * Validates and writes a new monitor (PENDING_CREATE) for `pool`, with its tags, in the
 * caller's transaction; checks RBAC, the provider and the quota. Locking and the job are the
 * caller's: the endpoint locks the tree, graph create relies on the new LB's own state.
 */
export async function insertHealthMonitor(
  deps: ApiDeps,
  trx: Trx,
  ctx: RequestContext,
  pool: PoolTable,
  input: Static<typeof HealthMonitorSingleCreate>,
): Promise<HealthMonitorRow> {
  authorize(ctx, 'healthmonitor', 'post', pool.project_id);
  const attrs = resolveHealthMonitorCreate(input, pool.protocol, monitorSettings(deps));
  deps.providers.forLoadBalancer(await providerOf(trx, pool.load_balancer_id)).checks.healthMonitor?.(attrs, { ...pool });
  await checkQuota(trx, deps.config, pool.project_id, { health_monitor: 1 }, deps.db.dialect);
  if (await trx.selectFrom('health_monitor').select('id').where('pool_id', '=', pool.id).executeTakeFirst()) throw apiError('HM_DUPLICATE');
  const row: HealthMonitorRow = {
    id: randomUUID(),
    project_id: pool.project_id,
    pool_id: pool.id,
    ...columnsOf(attrs),
    provisioning_status: 'PENDING_CREATE',
    operating_status: 'OFFLINE',
    created_at: timestamp(),
    updated_at: null,
  };
  await trx.insertInto('health_monitor').values(row).execute();
  await writeTags(trx, row.id, input.tags);
  return row;
}

async function healthMonitorFor(deps: ApiDeps, ctx: RequestContext, id: string, action: 'get_one' | 'put' | 'delete'): Promise<HealthMonitorRow> {
  const row = await deps.db.kysely.selectFrom('health_monitor').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw apiError('NOT_FOUND', 'Health Monitor', id);
  authorize(ctx, 'healthmonitor', action, row.project_id);
  return row;
}

async function poolRow(q: Q, id: string): Promise<PoolTable> {
  const pool = await q.selectFrom('pool').selectAll().where('id', '=', id).executeTakeFirst();
  if (!pool) throw apiError('NOT_FOUND', 'Pool', id);
  return pool;
}

async function renderOne(deps: ApiDeps, id: string) {
  const row = await deps.db.kysely.selectFrom('health_monitor').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const [view] = await renderHealthMonitors(deps.db.kysely, [row]);
  return view!;
}

export const healthMonitorRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  const { db } = deps;

  app.get('/healthmonitors', async (req) => {
    const { items, links } = await listOwned(deps, req, 'healthmonitor', healthMonitorList, (rows: HealthMonitorRow[]) => renderHealthMonitors(db.kysely, rows));
    return { healthmonitors: items, healthmonitors_links: links };
  });

  app.get<{ Params: { id: string } }>('/healthmonitors/:id', async (req) => {
    const row = await healthMonitorFor(deps, req.ctx, req.params.id, 'get_one');
    const [view] = await renderHealthMonitors(db.kysely, [row]);
    return { healthmonitor: pickFields(view!, fieldsOf(req)) };
  });

  app.post('/healthmonitors', { schema: { body: HealthMonitorCreateBody } }, async (req, reply) => {
    const b = (req.body as Static<typeof HealthMonitorCreateBody>).healthmonitor;
    const pool = await poolRow(db.kysely, b.pool_id);
    const row = await change(deps, async (trx) => {
      const hm = await insertHealthMonitor(deps, trx, req.ctx, pool, b);
      await lockPoolForChildChange(trx, pool.id);
      await enqueue(trx, { loadBalancerId: pool.load_balancer_id, provider: await providerOf(trx, pool.load_balancer_id), operation: 'healthmonitor.create' });
      return hm;
    });
    return reply.code(201).send({ healthmonitor: await renderOne(deps, row.id) });
  });

  app.put<{ Params: { id: string } }>('/healthmonitors/:id', { schema: { body: HealthMonitorUpdateBody } }, async (req) => {
    const hm = await healthMonitorFor(deps, req.ctx, req.params.id, 'put');
    const b = (req.body as Static<typeof HealthMonitorUpdateBody>).healthmonitor;
    const pool = await poolRow(db.kysely, hm.pool_id);
    const merged = resolveHealthMonitorUpdate(attrsOf(hm), b, pool.protocol, monitorSettings(deps));
    const provider = await providerOf(db.kysely, pool.load_balancer_id);
    deps.providers.forLoadBalancer(provider).checks.healthMonitor?.(merged, { ...pool });
    await change(deps, async (trx) => {
      await lockPoolForChildChange(trx, pool.id);
      await trx.updateTable('health_monitor').set({ ...columnsOf(merged), provisioning_status: 'PENDING_UPDATE', updated_at: timestamp() }).where('id', '=', hm.id).execute();
      await writeTags(trx, hm.id, b.tags);
      await enqueue(trx, { loadBalancerId: pool.load_balancer_id, provider, operation: 'healthmonitor.update' });
    });
    return { healthmonitor: await renderOne(deps, hm.id) };
  });

  app.delete<{ Params: { id: string } }>('/healthmonitors/:id', async (req, reply) => {
    const hm = await healthMonitorFor(deps, req.ctx, req.params.id, 'delete');
    const pool = await poolRow(db.kysely, hm.pool_id);
    await change(deps, async (trx) => {
      await lockPoolForChildChange(trx, pool.id);
      await markPending(trx, 'health_monitor', [hm.id], 'PENDING_DELETE');
      await enqueue(trx, { loadBalancerId: pool.load_balancer_id, provider: await providerOf(trx, pool.load_balancer_id), operation: 'healthmonitor.delete' });
    });
    return reply.code(204).send();
  });
};

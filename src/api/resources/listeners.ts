/** /lbaas/listeners: list, show, create, update, delete, stats. */
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import type { Kysely, Transaction } from 'kysely';
import type { ApiDeps } from '../context.js';
import type { Database } from '../../db/schema.js';
import { apiError } from '../../domain/errors.js';
import type { RequestContext } from '../../domain/context.js';
import { timestamp } from '../../domain/time.js';
import type { Static } from '../../domain/schema-kit.js';
import { ListenerCreateBody, ListenerUpdateBody, type ListenerInput } from '../../domain/schemas/listener.js';
import {
  adminStateOf, assertPoolProtocolAllowed, assertPortFree, listenerSpecForCreate, listenerSpecForUpdate,
  type ListenerEnv, type ListenerSpec,
} from '../../domain/rules/listener.js';
import { authorize, type Action } from '../../identity/policy.js';
import { enqueue } from '../../controller/jobs.js';
import { listOwned, pickFields, fieldsOf, treeAttributes, nameAttributes, type ListSpec } from '../listing.js';
import { listenerRelations, listenerSpecOf, listenerView, type ListenerRow } from '../views/listener.js';
import type { LoadBalancerRow } from '../views/loadbalancer.js';
import { writeTags } from '../tags.js';
import { lockForChildChange, markPending } from '../locks.js';
import { checkQuota } from '../quota.js';
import { statsTotals } from '../../health/stats.js';
import { change } from '../change.js';
import { forCreate, listenerTlsRefs, namesAny, tlsCaller, touchesListenerRefs, verifyTlsRefs } from '../tls-refs.js';
import { consumerOf, listenerRefColumns, listenerRefsInUse, syncConsumers, type TlsChange } from '../../certificate-use/consumers.js';

type Q = Kysely<Database> | Transaction<Database>;
type Trx = Transaction<Database>;

export const listenerList: ListSpec = {
  table: 'listener',
  tagged: true,
  projectColumn: 'project_id',
  attributes: {
    ...treeAttributes,
    ...nameAttributes,
    protocol: { column: 'protocol', kind: 'string' },
    protocol_port: { column: 'protocol_port', kind: 'int' },
    connection_limit: { column: 'connection_limit', kind: 'int' },
    default_pool_id: { column: 'default_pool_id', kind: 'uuid' },
    loadbalancer_id: { column: 'load_balancer_id', kind: 'uuid' },
    timeout_client_data: { column: 'timeout_client_data', kind: 'int' },
    timeout_member_connect: { column: 'timeout_member_connect', kind: 'int' },
    timeout_member_data: { column: 'timeout_member_data', kind: 'int' },
    timeout_tcp_inspect: { column: 'timeout_tcp_inspect', kind: 'int' },
    default_tls_container_ref: { column: 'default_tls_container_ref', kind: 'string' },
    client_authentication: { column: 'client_authentication', kind: 'string' },
    client_ca_tls_container_ref: { column: 'client_ca_tls_container_ref', kind: 'string' },
    client_crl_container_ref: { column: 'client_crl_container_ref', kind: 'string' },
    tls_ciphers: { column: 'tls_ciphers', kind: 'string' },
    hsts_max_age: { column: 'hsts_max_age', kind: 'int' },
    hsts_include_subdomains: { column: 'hsts_include_subdomains', kind: 'bool' },
    hsts_preload: { column: 'hsts_preload', kind: 'bool' },
  },
};

/** The load balancer a child is created on; a missing one is a 404, as in Octavia. */
export async function parentLoadBalancer(db: Q, id: string): Promise<LoadBalancerRow> {
  const lb = await db.selectFrom('load_balancer').selectAll().where('id', '=', id).executeTakeFirst();
  if (!lb || lb.provisioning_status === 'DELETED') throw apiError('NOT_FOUND', 'Load Balancer', id);
  return lb;
}

/** Loads a listener the caller may act on, or fails with 404/403 as Octavia does. */
export async function listenerFor(deps: ApiDeps, ctx: RequestContext, id: string, action: Action): Promise<ListenerRow> {
  const row = await deps.db.kysely.selectFrom('listener').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row || row.provisioning_status === 'DELETED') throw apiError('NOT_FOUND', 'Listener', id);
  authorize(ctx, 'listener', action, row.project_id);
  return row;
}

export async function renderListeners(db: Q, rows: ListenerRow[]) {
  const rel = await listenerRelations(db, rows.map((r) => r.id));
  return rows.map((r) => listenerView(r, rel));
}

function listenerEnv(deps: ApiDeps, lb: LoadBalancerRow): ListenerEnv {
  const additional = JSON.parse(lb.additional_vips) as Array<{ ip_address: string }>;
  return {
    vipAddresses: [lb.vip_address, ...additional.map((v) => v.ip_address)].filter((a): a is string => !!a),
    hasVipSecurityGroups: (JSON.parse(lb.vip_sg_ids) as string[]).length > 0,
    allowTerminatedHttps: deps.config.api.allowTerminatedHttps,
    allowPrometheus: deps.config.api.allowPrometheusListeners,
  };
}

/** A default pool must live on the listener's load balancer and speak a compatible protocol. */
async function checkDefaultPool(trx: Trx, lbId: string, poolId: string, listenerProtocol: string): Promise<void> {
  const pool = await trx.selectFrom('pool').select(['protocol', 'load_balancer_id']).where('id', '=', poolId).executeTakeFirst();
  if (!pool || pool.load_balancer_id !== lbId) throw apiError('NOT_FOUND', 'Pool', poolId);
  assertPoolProtocolAllowed(listenerProtocol, pool.protocol);
}

const json = (v: unknown) => (v === null ? null : JSON.stringify(v));

function listenerColumns(spec: ListenerSpec) {
  return {
    protocol: spec.protocol,
    protocol_port: spec.protocol_port,
    connection_limit: spec.connection_limit,
    insert_headers: JSON.stringify(spec.insert_headers),
    timeout_client_data: spec.timeout_client_data,
    timeout_member_connect: spec.timeout_member_connect,
    timeout_member_data: spec.timeout_member_data,
    timeout_tcp_inspect: spec.timeout_tcp_inspect,
    default_tls_container_ref: spec.default_tls_container_ref,
    sni_container_refs: JSON.stringify(spec.sni_container_refs),
    client_authentication: spec.client_authentication,
    client_ca_tls_container_ref: spec.client_ca_tls_container_ref,
    client_crl_container_ref: spec.client_crl_container_ref,
    allowed_cidrs: json(spec.allowed_cidrs),
    tls_ciphers: spec.tls_ciphers,
    tls_versions: json(spec.tls_versions),
    alpn_protocols: json(spec.alpn_protocols),
    hsts_max_age: spec.hsts_max_age,
    hsts_include_subdomains: spec.hsts_include_subdomains ? 1 : 0,
    hsts_preload: spec.hsts_preload ? 1 : 0,
  };
}

/** What a provider's listener check sees: the API attributes after defaults or merge. */
function providerAttrs(row: ListenerRow) {
  return { ...listenerSpecOf(row), id: row.id, name: row.name, description: row.description, admin_state_up: row.admin_state_up === 1, default_pool_id: row.default_pool_id, loadbalancer_id: row.load_balancer_id, project_id: row.project_id };
}

/**
 * Validates and writes a new listener (PENDING_CREATE) of `lb` in the caller's transaction.
 * Locking, quota and the job are the caller's: the endpoint and graph create share this.
 */
export async function insertListener(deps: ApiDeps, trx: Trx, _ctx: RequestContext, lb: LoadBalancerRow, input: Static<typeof ListenerInput>): Promise<ListenerRow> {
  const spec = listenerSpecForCreate(input, listenerEnv(deps, lb));
  const siblings = await trx.selectFrom('listener').select(['protocol', 'protocol_port']).where('load_balancer_id', '=', lb.id).execute();
  assertPortFree(spec, siblings);
  const defaultPoolId = input.default_pool_id ?? null;
  if (defaultPoolId) await checkDefaultPool(trx, lb.id, defaultPoolId, spec.protocol);
  const row: ListenerRow = {
    id: randomUUID(),
    project_id: lb.project_id,
    load_balancer_id: lb.id,
    name: input.name ?? '',
    description: input.description ?? '',
    admin_state_up: adminStateOf(input.admin_state_up, true) ? 1 : 0,
    provisioning_status: 'PENDING_CREATE',
    operating_status: 'OFFLINE',
    default_pool_id: defaultPoolId,
    ...listenerColumns(spec),
    status_reason: null,
    created_at: timestamp(),
    updated_at: null,
  };
  deps.providers.forLoadBalancer(lb.provider).checks.listener?.(providerAttrs(row));
  await trx.insertInto('listener').values(row).execute();
  await writeTags(trx, row.id, input.tags);
  return row;
}

type UpdateInput = Static<typeof ListenerUpdateBody>['listener'];

/** Applies a PUT body to the listener as stored now (read under the LB lock); returns it before and after. */
async function updateListener(deps: ApiDeps, trx: Trx, id: string, b: UpdateInput): Promise<{ current: ListenerRow; updated: ListenerRow }> {
  const current = await trx.selectFrom('listener').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const lb = await parentLoadBalancer(trx, current.load_balancer_id);
  const spec = listenerSpecForUpdate(listenerSpecOf(current), b, listenerEnv(deps, lb));
  if (b.default_pool_id) await checkDefaultPool(trx, lb.id, b.default_pool_id, spec.protocol);
  const updated: ListenerRow = {
    ...current,
    ...listenerColumns(spec),
    name: b.name === undefined ? current.name : (b.name ?? ''),
    description: b.description === undefined ? current.description : (b.description ?? ''),
    admin_state_up: adminStateOf(b.admin_state_up, current.admin_state_up === 1) ? 1 : 0,
    default_pool_id: b.default_pool_id === undefined ? current.default_pool_id : b.default_pool_id,
    provisioning_status: 'PENDING_UPDATE',
    status_reason: null,
    updated_at: timestamp(),
  };
  deps.providers.forLoadBalancer(lb.provider).checks.listener?.(providerAttrs(updated));
  await trx.updateTable('listener').set(updated).where('id', '=', id).execute();
  await writeTags(trx, id, b.tags);
  const tlsChange: TlsChange | null = touchesListenerRefs(b) ? { kind: 'listener', id, previous: listenerRefColumns(current), requested: listenerRefColumns(updated) } : null;
  await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'listener.update', payload: tlsChange ? { tls_change: tlsChange } : undefined });
  return { current, updated };
}

export const listenerRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  const { db } = deps;

  app.get('/listeners', async (req) => {
    const { items, links } = await listOwned(deps, req, 'listener', listenerList, (rows: ListenerRow[]) => renderListeners(db.kysely, rows));
    return { listeners: items, listeners_links: links };
  });

  app.get<{ Params: { id: string } }>('/listeners/:id', async (req) => {
    const row = await listenerFor(deps, req.ctx, req.params.id, 'get_one');
    const [view] = await renderListeners(db.kysely, [row]);
    return { listener: pickFields(view!, fieldsOf(req)) };
  });

  app.get<{ Params: { id: string } }>('/listeners/:id/stats', async (req) => {
    const listener = await listenerFor(deps, req.ctx, req.params.id, 'get_stats');
    return { stats: await statsTotals(db.kysely, { listenerId: listener.id }) };
  });

  app.post('/listeners', { schema: { body: ListenerCreateBody } }, async (req, reply) => {
    const { loadbalancer_id: lbId, project_id: _project, tenant_id: _tenant, ...input } = (req.body as Static<typeof ListenerCreateBody>).listener;
    const lb = await parentLoadBalancer(db.kysely, lbId);
    authorize(req.ctx, 'listener', 'post', lb.project_id);
    // The listener rules first, as Octavia judges the references only once they are allowed at all.
    if (namesAny(listenerTlsRefs(input)))
      await verifyTlsRefs(deps.keyManager, tlsCaller(req), [forCreate(listenerTlsRefs(listenerSpecForCreate(input, listenerEnv(deps, lb))))]);
    const row = await change(deps, async (trx) => {
      await lockForChildChange(trx, lb.id);
      await checkQuota(trx, deps.config, lb.project_id, { listener: 1 }, db.dialect);
      const created = await insertListener(deps, trx, req.ctx, lb, input);
      await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'listener.create' });
      return created;
    });
    await syncConsumers(deps.keyManager, req.log, consumerOf('listener', row.id), [], listenerRefsInUse(row));
    const [view] = await renderListeners(db.kysely, [row]);
    return reply.code(201).send({ listener: view });
  });

  app.put<{ Params: { id: string } }>('/listeners/:id', { schema: { body: ListenerUpdateBody } }, async (req) => {
    const row = await listenerFor(deps, req.ctx, req.params.id, 'put');
    const b = (req.body as Static<typeof ListenerUpdateBody>).listener;
    const touchesRefs = touchesListenerRefs(b);
    if (touchesRefs) {
      const lb = await parentLoadBalancer(db.kysely, row.load_balancer_id);
      const result = listenerSpecForUpdate(listenerSpecOf(row), b, listenerEnv(deps, lb));
      await verifyTlsRefs(deps.keyManager, tlsCaller(req), [{ named: listenerTlsRefs(b), result: listenerTlsRefs(result) }]);
    }
    // Rendered in the transaction: once committed, the worker may settle the change at once.
    const { view, updated } = await change(deps, async (trx) => {
      await lockForChildChange(trx, row.load_balancer_id);
      const rows = await updateListener(deps, trx, row.id, b);
      const [rendered] = await renderListeners(trx, [rows.updated]);
      return { ...rows, view: rendered };
    });
    // The replaced references stay registered until the job has verified the new ones (certificate-use/consumers.ts).
    if (touchesRefs) await syncConsumers(deps.keyManager, req.log, consumerOf('listener', row.id), [], listenerRefsInUse(updated));
    return { listener: view };
  });

  app.delete<{ Params: { id: string } }>('/listeners/:id', async (req, reply) => {
    const row = await listenerFor(deps, req.ctx, req.params.id, 'delete');
    await change(deps, async (trx) => {
      await lockForChildChange(trx, row.load_balancer_id);
      const lb = await parentLoadBalancer(trx, row.load_balancer_id);
      await markPending(trx, 'listener', [row.id], 'PENDING_DELETE');
      await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'listener.delete' });
    });
    return reply.code(204).send();
  });
};

/** /lbaas/pools: list, show, create (optionally with its monitor and members), update, delete. */
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import type { Kysely, Transaction } from 'kysely';
import type { ApiDeps } from '../context.js';
import type { Database } from '../../db/schema.js';
import { apiError } from '../../domain/errors.js';
import type { RequestContext } from '../../domain/context.js';
import { timestamp } from '../../domain/time.js';
import type { Static } from '../../domain/schema-kit.js';
import { PoolCreate, PoolCreateBody, PoolUpdateBody } from '../../domain/schemas/pool.js';
import { adminStateOf, assertPoolProtocolAllowed } from '../../domain/rules/listener.js';
import { poolSpecForCreate, poolSpecForUpdate, type PoolSpec } from '../../domain/rules/pool.js';
import { authorize, type Action } from '../../identity/policy.js';
import { enqueue } from '../../controller/jobs.js';
import { listOwned, pickFields, fieldsOf, treeAttributes, nameAttributes, type ListSpec } from '../listing.js';
import { poolRelations, poolSpecOf, poolView, type PoolRow } from '../views/pool.js';
import type { LoadBalancerRow } from '../views/loadbalancer.js';
import { writeTags } from '../tags.js';
import { lockForChildChange, markPending, markPoolListenersPending } from '../locks.js';
import { checkQuota } from '../quota.js';
import { parentLoadBalancer } from './listeners.js';
import { insertMember } from './members.js';
import { insertHealthMonitor } from './healthmonitors.js';
import { change } from '../change.js';
import { forCreate, namesAny, poolTlsRefs, tlsCaller, touchesPoolRefs, verifyTlsRefs } from '../tls-refs.js';
import { consumerOf, poolRefColumns, poolRefsInUse, syncConsumers, type TlsChange } from '../../certificate-use/consumers.js';

type Q = Kysely<Database> | Transaction<Database>;
type Trx = Transaction<Database>;

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

/** A pool with its protocol and algorithm known: POST /pools, or a full graph definition. */
export type PoolInput = Omit<Static<typeof PoolCreate>, 'loadbalancer_id' | 'listener_id' | 'project_id' | 'tenant_id'>;

/** Loads a pool the caller may act on, or fails with 404/403 as Octavia does. */
export async function poolFor(deps: ApiDeps, ctx: RequestContext, id: string, action: Action): Promise<PoolRow> {
  const row = await deps.db.kysely.selectFrom('pool').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row || row.provisioning_status === 'DELETED') throw apiError('NOT_FOUND', 'Pool', id);
  authorize(ctx, 'pool', action, row.project_id);
  return row;
}

export async function renderPools(db: Q, rows: PoolRow[]) {
  const rel = await poolRelations(db, rows.map((r) => r.id));
  return rows.map((r) => poolView(r, rel));
}

const json = (v: unknown) => (v === null ? null : JSON.stringify(v));

function poolColumns(spec: PoolSpec) {
  return {
    protocol: spec.protocol,
    lb_algorithm: spec.lb_algorithm,
    session_persistence: json(spec.session_persistence),
    tls_enabled: spec.tls_enabled ? 1 : 0,
    tls_container_ref: spec.tls_container_ref,
    ca_tls_container_ref: spec.ca_tls_container_ref,
    crl_container_ref: spec.crl_container_ref,
    tls_ciphers: spec.tls_ciphers,
    tls_versions: json(spec.tls_versions),
    alpn_protocols: json(spec.alpn_protocols),
  };
}

/** What a provider's pool check sees: the API attributes after defaults or merge. */
function providerAttrs(row: PoolRow) {
  return { ...poolSpecOf(row), id: row.id, name: row.name, description: row.description, admin_state_up: row.admin_state_up === 1, loadbalancer_id: row.load_balancer_id, project_id: row.project_id };
}

/**
 * Validates and writes a new pool (PENDING_CREATE) of `lb`, then its health monitor and
 * members, in the caller's transaction. Locking, quota and the job are the caller's.
 */
export async function insertPool(deps: ApiDeps, trx: Trx, ctx: RequestContext, lb: LoadBalancerRow, input: PoolInput): Promise<PoolRow> {
  const spec = poolSpecForCreate(input);
  const row: PoolRow = {
    id: randomUUID(),
    project_id: lb.project_id,
    load_balancer_id: lb.id,
    name: input.name ?? '',
    description: input.description ?? '',
    admin_state_up: adminStateOf(input.admin_state_up, true) ? 1 : 0,
    provisioning_status: 'PENDING_CREATE',
    operating_status: 'OFFLINE',
    ...poolColumns(spec),
    created_at: timestamp(),
    updated_at: null,
  };
  deps.providers.forLoadBalancer(lb.provider).checks.pool?.(providerAttrs(row));
  await trx.insertInto('pool').values(row).execute();
  await writeTags(trx, row.id, input.tags);
  // The monitor first: members created after it start OFFLINE rather than NO_MONITOR.
  if (input.healthmonitor) await insertHealthMonitor(deps, trx, ctx, row, input.healthmonitor);
  for (const member of input.members ?? []) await insertMember(deps, trx, ctx, row, member, lb);
  return row;
}

/** `listener_id` on POST /pools: the new pool becomes that listener's default pool. */
async function listenerForNewPool(db: Q, listenerId: string) {
  const listener = await db.selectFrom('listener').select(['id', 'load_balancer_id', 'protocol']).where('id', '=', listenerId).executeTakeFirst();
  if (!listener) throw apiError('NOT_FOUND', 'Listener', listenerId);
  return listener;
}

async function attachAsDefaultPool(trx: Trx, listenerId: string, poolId: string): Promise<void> {
  const listener = await trx.selectFrom('listener').select('default_pool_id').where('id', '=', listenerId).executeTakeFirstOrThrow();
  if (listener.default_pool_id) throw apiError('DUPLICATE', 'This listener already has a default pool');
  await trx.updateTable('listener').set({ default_pool_id: poolId }).where('id', '=', listenerId).execute();
}

type UpdateInput = Static<typeof PoolUpdateBody>['pool'];

/** Returns the pool as stored before and after. */
async function updatePool(deps: ApiDeps, trx: Trx, id: string, b: UpdateInput): Promise<{ current: PoolRow; updated: PoolRow }> {
  const current = await trx.selectFrom('pool').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const lb = await parentLoadBalancer(trx, current.load_balancer_id);
  const spec = poolSpecForUpdate(poolSpecOf(current), b);
  const updated: PoolRow = {
    ...current,
    ...poolColumns(spec),
    name: b.name === undefined ? current.name : (b.name ?? ''),
    description: b.description === undefined ? current.description : (b.description ?? ''),
    admin_state_up: adminStateOf(b.admin_state_up, current.admin_state_up === 1) ? 1 : 0,
    provisioning_status: 'PENDING_UPDATE',
    updated_at: timestamp(),
  };
  deps.providers.forLoadBalancer(lb.provider).checks.pool?.(providerAttrs(updated));
  await markPoolListenersPending(trx, id);
  await trx.updateTable('pool').set(updated).where('id', '=', id).execute();
  await writeTags(trx, id, b.tags);
  const tlsChange: TlsChange | null = touchesPoolRefs(b) ? { kind: 'pool', id, previous: poolRefColumns(current), requested: poolRefColumns(updated) } : null;
  await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'pool.update', payload: tlsChange ? { tls_change: tlsChange } : undefined });
  return { current, updated };
}

export const poolRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  const { db } = deps;

  app.get('/pools', async (req) => {
    const { items, links } = await listOwned(deps, req, 'pool', poolList, (rows: PoolRow[]) => renderPools(db.kysely, rows));
    return { pools: items, pools_links: links };
  });

  app.get<{ Params: { id: string } }>('/pools/:id', async (req) => {
    const row = await poolFor(deps, req.ctx, req.params.id, 'get_one');
    const [view] = await renderPools(db.kysely, [row]);
    return { pool: pickFields(view!, fieldsOf(req)) };
  });

  app.post('/pools', { schema: { body: PoolCreateBody } }, async (req, reply) => {
    const { loadbalancer_id: lbId, listener_id: listenerId, project_id: _project, tenant_id: _tenant, ...input } = (req.body as Static<typeof PoolCreateBody>).pool;
    if (!lbId && !listenerId) throw apiError('VALIDATION', 'Must provide at least one of: loadbalancer_id, listener_id');
    const listener = listenerId ? await listenerForNewPool(db.kysely, listenerId) : undefined;
    const lb = await parentLoadBalancer(db.kysely, lbId ?? listener!.load_balancer_id);
    if (listener && listener.load_balancer_id !== lb.id) throw apiError('VALIDATION', 'Listener and pool must be on the same load balancer.');
    authorize(req.ctx, 'pool', 'post', lb.project_id);
    if (listener) assertPoolProtocolAllowed(listener.protocol, input.protocol);
    // The pool rules first, as Octavia judges the references only once they are allowed at all.
    if (namesAny(poolTlsRefs(input))) await verifyTlsRefs(deps.keyManager, tlsCaller(req), [forCreate(poolTlsRefs(poolSpecForCreate(input)))]);
    const row = await change(deps, async (trx) => {
      await lockForChildChange(trx, lb.id);
      // The health monitor's quota is checked by insertHealthMonitor itself.
      await checkQuota(trx, deps.config, lb.project_id, { pool: 1, member: input.members?.length ?? 0 }, db.dialect);
      const created = await insertPool(deps, trx, req.ctx, lb, input);
      if (listener) {
        await attachAsDefaultPool(trx, listener.id, created.id);
        await markPending(trx, 'listener', [listener.id], 'PENDING_UPDATE');
      }
      await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'pool.create' });
      return created;
    });
    await syncConsumers(deps.keyManager, req.log, consumerOf('pool', row.id), [], poolRefsInUse(row));
    const [view] = await renderPools(db.kysely, [row]);
    return reply.code(201).send({ pool: view });
  });

  app.put<{ Params: { id: string } }>('/pools/:id', { schema: { body: PoolUpdateBody } }, async (req) => {
    const row = await poolFor(deps, req.ctx, req.params.id, 'put');
    const b = (req.body as Static<typeof PoolUpdateBody>).pool;
    const touchesRefs = touchesPoolRefs(b);
    if (touchesRefs)
      await verifyTlsRefs(deps.keyManager, tlsCaller(req), [{ named: poolTlsRefs(b), result: poolTlsRefs(poolSpecForUpdate(poolSpecOf(row), b)) }]);
    // Rendered in the transaction: once committed, the worker may settle the change at once.
    const { view, updated } = await change(deps, async (trx) => {
      await lockForChildChange(trx, row.load_balancer_id);
      const rows = await updatePool(deps, trx, row.id, b);
      const [rendered] = await renderPools(trx, [rows.updated]);
      return { ...rows, view: rendered };
    });
    // The replaced references stay registered until the job has ended (certificate-use/consumers.ts).
    if (touchesRefs) await syncConsumers(deps.keyManager, req.log, consumerOf('pool', row.id), [], poolRefsInUse(updated));
    return { pool: view };
  });

  app.delete<{ Params: { id: string } }>('/pools/:id', async (req, reply) => {
    const row = await poolFor(deps, req.ctx, req.params.id, 'delete');
    await change(deps, async (trx) => {
      const policy = await trx.selectFrom('l7policy').select('id').where('redirect_pool_id', '=', row.id).orderBy('created_at').executeTakeFirst();
      if (policy) throw apiError('CONFLICT', `Pool ${row.id} is in use by L7 policy ${policy.id}`);
      await lockForChildChange(trx, row.load_balancer_id);
      const lb = await parentLoadBalancer(trx, row.load_balancer_id);
      await markPoolListenersPending(trx, row.id);
      await markPending(trx, 'pool', [row.id], 'PENDING_DELETE');
      await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'pool.delete' });
    });
    return reply.code(204).send();
  });
};

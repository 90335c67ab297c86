/** /lbaas/l7policies: list, show, create (with inline rules), update, delete. */
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import type { Kysely, Transaction } from 'kysely';
import type { ApiDeps } from '../context.js';
import type { Database, ListenerTable } from '../../db/schema.js';
import { apiError } from '../../domain/errors.js';
import type { RequestContext } from '../../domain/context.js';
import { timestamp } from '../../domain/time.js';
import type { L7PolicyAction } from '../../domain/enums.js';
import { assertPoolProtocolAllowed } from '../../domain/rules/listener.js';
import { L7PolicyCreateBody, L7PolicyUpdateBody, type L7PolicySingleCreate } from '../../domain/schemas/l7policy.js';
import type { Static } from '../../domain/schema-kit.js';
import { checkRuleCount, placePolicy, resolveL7PolicyTargetCreate, resolveL7PolicyTargetUpdate, type L7PolicyTarget } from '../../domain/rules/l7.js';
import { authorize } from '../../identity/policy.js';
import { enqueue } from '../../controller/jobs.js';
import { listOwned, pickFields, fieldsOf, treeAttributes, nameAttributes, type ListSpec } from '../listing.js';
import { renderL7Policies, type L7PolicyRow } from '../views/l7policy.js';
import { writeTags } from '../tags.js';
import { lockForChildChange, markPending } from '../../db/lb-lock.js';
import { checkQuota } from '../quota.js';
import { prepareL7Rule, writeL7Rule } from './l7rules.js';
import { change } from '../change.js';

type Q = Kysely<Database> | Transaction<Database>;
type Trx = Transaction<Database>;

export const l7PolicyList: ListSpec = {
  table: 'l7policy',
  tagged: true,
  projectColumn: 'project_id',
  attributes: {
    ...treeAttributes,
    ...nameAttributes,
    action: { column: 'action', kind: 'string' },
    listener_id: { column: 'listener_id', kind: 'uuid' },
    redirect_pool_id: { column: 'redirect_pool_id', kind: 'uuid' },
    redirect_url: { column: 'redirect_url', kind: 'string' },
    redirect_prefix: { column: 'redirect_prefix', kind: 'string' },
    redirect_http_code: { column: 'redirect_http_code', kind: 'int' },
    position: { column: 'position', kind: 'int' },
  },
};

/** A policy to create: the endpoint's body, or a graph-create policy whose redirect pool name was resolved to an id. */
export type L7PolicyInput = Omit<Static<typeof L7PolicySingleCreate>, 'redirect_pool'> & { redirect_pool_id?: string | null };

async function providerOf(q: Q, lbId: string): Promise<string> {
  return (await q.selectFrom('load_balancer').select('provider').where('id', '=', lbId).executeTakeFirstOrThrow()).provider;
}

/** A redirect pool must belong to the listener's LB (else 404) and suit its protocol (§3.14). */
async function checkRedirectPool(q: Q, listener: ListenerTable, poolId: string): Promise<void> {
  const pool = await q.selectFrom('pool').select(['protocol', 'load_balancer_id']).where('id', '=', poolId).executeTakeFirst();
  if (!pool || pool.load_balancer_id !== listener.load_balancer_id) throw apiError('NOT_FOUND', 'Pool', poolId);
  assertPoolProtocolAllowed(listener.protocol, pool.protocol);
}

/**
 * Puts policy `id` at `position` among its listener's policies and renumbers them 1..n in
 * the caller's transaction. Returns the policy's own new position (the caller writes it).
 */
async function placeL7Policy(trx: Trx, listenerId: string, id: string, position: number | undefined): Promise<number> {
  const rows = await trx.selectFrom('l7policy').select(['id', 'position']).where('listener_id', '=', listenerId).orderBy('position').orderBy('created_at').orderBy('id').execute();
  const order = placePolicy(rows.map((r) => r.id), id, position);
  const current = new Map(rows.map((r) => [r.id, r.position]));
  for (const [index, policyId] of order.entries()) {
    if (policyId !== id && current.get(policyId) !== index + 1) await trx.updateTable('l7policy').set({ position: index + 1 }).where('id', '=', policyId).execute();
  }
  return order.indexOf(id) + 1;
}

/**
 * Validates and writes a new policy (PENDING_CREATE) of `listener` with its rules and tags,
 * in the caller's transaction; checks RBAC, the provider and quotas. Locking and the job are
 * the caller's: the endpoint locks the tree, graph create relies on the new LB's own state.
 */
export async function insertL7Policy(
  deps: ApiDeps,
  trx: Trx,
  ctx: RequestContext,
  listener: ListenerTable,
  input: L7PolicyInput,
): Promise<L7PolicyRow> {
  authorize(ctx, 'l7policy', 'post', listener.project_id);
  if (listener.protocol === 'PROMETHEUS') throw apiError('LISTENER_NO_CHILDREN', 'PROMETHEUS');
  if (input.redirect_pool_id) await checkRedirectPool(trx, listener, input.redirect_pool_id);
  const target = resolveL7PolicyTargetCreate({
    action: input.action,
    redirect_pool_id: input.redirect_pool_id,
    redirect_url: input.redirect_url,
    redirect_prefix: input.redirect_prefix,
    redirect_http_code: input.redirect_http_code,
  });
  const id = randomUUID();
  const rulesInput = input.rules ?? [];
  checkRuleCount(id, rulesInput.length);
  const driver = deps.providers.forLoadBalancer(await providerOf(trx, listener.load_balancer_id));
  const rules = rulesInput.map((r) => ({ attrs: prepareL7Rule(driver, r), tags: r.tags }));
  const attrs = {
    name: input.name ?? '',
    description: input.description ?? '',
    // Octavia's quirk: an explicit null admin_state_up means false.
    admin_state_up: input.admin_state_up === undefined ? true : Boolean(input.admin_state_up),
    ...target,
  };
  driver.checks.l7policy?.(attrs, { ...listener });
  await checkQuota(trx, deps.config, listener.project_id, { l7policy: 1, l7rule: rules.length }, deps.db.dialect);
  const row: L7PolicyRow = {
    id,
    project_id: listener.project_id,
    listener_id: listener.id,
    ...attrs,
    admin_state_up: attrs.admin_state_up ? 1 : 0,
    position: await placeL7Policy(trx, listener.id, id, input.position ?? undefined),
    provisioning_status: 'PENDING_CREATE',
    operating_status: 'OFFLINE',
    created_at: timestamp(),
    updated_at: null,
  };
  await trx.insertInto('l7policy').values(row).execute();
  for (const rule of rules) await writeL7Rule(trx, row, rule.attrs, rule.tags);
  await writeTags(trx, id, input.tags);
  return row;
}

/** §5.2 for policy changes: LB ACTIVE→PENDING_UPDATE and the policy's listener PENDING_UPDATE. */
async function lockListenerForPolicyChange(trx: Trx, listener: ListenerTable): Promise<void> {
  await lockForChildChange(trx, listener.load_balancer_id);
  await markPending(trx, 'listener', [listener.id], 'PENDING_UPDATE');
}

async function l7PolicyFor(deps: ApiDeps, ctx: RequestContext, id: string, action: 'get_one' | 'put' | 'delete'): Promise<L7PolicyRow> {
  const row = await deps.db.kysely.selectFrom('l7policy').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw apiError('NOT_FOUND', 'L7 Policy', id);
  authorize(ctx, 'l7policy', action, row.project_id);
  return row;
}

async function listenerRow(q: Q, id: string): Promise<ListenerTable> {
  const listener = await q.selectFrom('listener').selectAll().where('id', '=', id).executeTakeFirst();
  if (!listener) throw apiError('NOT_FOUND', 'Listener', id);
  return listener;
}

function targetOf(row: L7PolicyRow): L7PolicyTarget {
  return {
    action: row.action as L7PolicyAction,
    redirect_pool_id: row.redirect_pool_id,
    redirect_url: row.redirect_url,
    redirect_prefix: row.redirect_prefix,
    redirect_http_code: row.redirect_http_code,
  };
}

async function renderOne(deps: ApiDeps, id: string) {
  const row = await deps.db.kysely.selectFrom('l7policy').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const [view] = await renderL7Policies(deps.db.kysely, [row]);
  return view!;
}

export const l7PolicyRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  const { db } = deps;

  app.get('/l7policies', async (req) => {
    const { items, links } = await listOwned(deps, req, 'l7policy', l7PolicyList, (rows: L7PolicyRow[]) => renderL7Policies(db.kysely, rows));
    return { l7policies: items, l7policies_links: links };
  });

  app.get<{ Params: { id: string } }>('/l7policies/:id', async (req) => {
    const row = await l7PolicyFor(deps, req.ctx, req.params.id, 'get_one');
    const [view] = await renderL7Policies(db.kysely, [row]);
    return { l7policy: pickFields(view!, fieldsOf(req)) };
  });

  app.post('/l7policies', { schema: { body: L7PolicyCreateBody } }, async (req, reply) => {
    const b = (req.body as Static<typeof L7PolicyCreateBody>).l7policy;
    const listener = await listenerRow(db.kysely, b.listener_id);
    const row = await change(deps, async (trx) => {
      const policy = await insertL7Policy(deps, trx, req.ctx, listener, b);
      await lockListenerForPolicyChange(trx, listener);
      await enqueue(trx, { loadBalancerId: listener.load_balancer_id, provider: await providerOf(trx, listener.load_balancer_id), operation: 'l7policy.create' });
      return policy;
    });
    return reply.code(201).send({ l7policy: await renderOne(deps, row.id) });
  });

  app.put<{ Params: { id: string } }>('/l7policies/:id', { schema: { body: L7PolicyUpdateBody } }, async (req) => {
    const stored = await l7PolicyFor(deps, req.ctx, req.params.id, 'put');
    const b = (req.body as Static<typeof L7PolicyUpdateBody>).l7policy;
    const target = resolveL7PolicyTargetUpdate(targetOf(stored), b);
    const listener = await listenerRow(db.kysely, stored.listener_id);
    if (b.redirect_pool_id) await checkRedirectPool(db.kysely, listener, b.redirect_pool_id);
    const pick = <T>(v: T | null | undefined, old: T, reset: T): T => (v === undefined ? old : v === null ? reset : v);
    const attrs = {
      name: pick(b.name, stored.name, ''),
      description: pick(b.description, stored.description, ''),
      admin_state_up: pick(b.admin_state_up, stored.admin_state_up === 1, false),
      ...target,
    };
    const provider = await providerOf(db.kysely, listener.load_balancer_id);
    deps.providers.forLoadBalancer(provider).checks.l7policy?.(attrs, { ...listener });
    await change(deps, async (trx) => {
      await lockListenerForPolicyChange(trx, listener);
      const position = b.position === undefined ? stored.position : await placeL7Policy(trx, listener.id, stored.id, b.position);
      await trx
        .updateTable('l7policy')
        .set({ ...attrs, admin_state_up: attrs.admin_state_up ? 1 : 0, position, provisioning_status: 'PENDING_UPDATE', updated_at: timestamp() })
        .where('id', '=', stored.id)
        .execute();
      await writeTags(trx, stored.id, b.tags);
      await enqueue(trx, { loadBalancerId: listener.load_balancer_id, provider, operation: 'l7policy.update' });
    });
    return { l7policy: await renderOne(deps, stored.id) };
  });

  app.delete<{ Params: { id: string } }>('/l7policies/:id', async (req, reply) => {
    const stored = await l7PolicyFor(deps, req.ctx, req.params.id, 'delete');
    const listener = await listenerRow(db.kysely, stored.listener_id);
    await change(deps, async (trx) => {
      await lockListenerForPolicyChange(trx, listener);
      await markPending(trx, 'l7policy', [stored.id], 'PENDING_DELETE');
      await enqueue(trx, { loadBalancerId: listener.load_balancer_id, provider: await providerOf(trx, listener.load_balancer_id), operation: 'l7policy.delete' });
    });
    return reply.code(204).send();
  });
};

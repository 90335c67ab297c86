/** L7 policy writes: the insert the endpoint and graph create share, and the locked create, update and delete. */
import { randomUUID } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import type { ApiDeps } from '../context.js';
import type { Database } from '../../db/schema.js';
import type { ListenerRow } from '../../db/records/listener.js';
import { apiError } from '../../domain/errors.js';
import type { RequestContext } from '../../domain/context.js';
import { timestamp } from '../../domain/time.js';
import type { L7PolicyAction } from '../../domain/enums.js';
import { assertPoolProtocolAllowed } from '../../domain/rules/listener.js';
import type { L7PolicySingleCreate, L7PolicyUpdateBody } from '../../domain/schemas/l7policy.js';
import type { Static } from '../../domain/schema-kit.js';
import { checkRuleCount, placePolicy, resolveL7PolicyTargetCreate, resolveL7PolicyTargetUpdate, type L7PolicyTarget } from '../../domain/rules/l7.js';
import { authorize } from '../../identity/policy.js';
import { enqueue } from '../../controller/jobs.js';
import { l7PolicyCodec, type L7PolicyRow } from '../../db/records/l7policy.js';
import { listenerCodec } from '../../db/records/listener.js';
import type { L7RuleRow } from '../../db/records/l7rule.js';
import { writeTags } from '../tags.js';
import { lockForChildChange, markPending } from '../../db/lb-lock.js';
import { checkQuota } from '../quota.js';
import { parentListener, providerOf } from '../loaders.js';
import { prepareL7Rule, writeL7Rule } from './l7rules.js';

type Q = Kysely<Database> | Transaction<Database>;
type Trx = Transaction<Database>;
type UpdateInput = Static<typeof L7PolicyUpdateBody>['l7policy'];

/** A policy to create: the endpoint's body, or a graph-create policy whose redirect pool name was resolved to an id. */
export type L7PolicyInput = Omit<Static<typeof L7PolicySingleCreate>, 'redirect_pool'> & { redirect_pool_id?: string | null };

/** A redirect pool must belong to the listener's LB (else 404) and suit its protocol (§3.14). */
async function checkRedirectPool(q: Q, listener: ListenerRow, poolId: string): Promise<void> {
  const pool = await q.selectFrom('pool').select(['protocol', 'load_balancer_id']).where('id', '=', poolId).executeTakeFirst();
  if (!pool || pool.load_balancer_id !== listener.load_balancer_id) throw apiError('NOT_FOUND', 'Pool', poolId);
  assertPoolProtocolAllowed(listener.protocol, pool.protocol);
}

/**
 * Puts policy `id` at `position` among its listener's policies and renumbers the others 1..n
 * in the caller's transaction. Returns the listener's policy ids in their new order (the
 * caller writes the position of `id`).
 */
async function placeL7Policy(trx: Trx, listenerId: string, id: string, position: number | undefined): Promise<string[]> {
  const rows = await trx.selectFrom('l7policy').select(['id', 'position']).where('listener_id', '=', listenerId).orderBy('position').orderBy('created_at').orderBy('id').execute();
  const order = placePolicy(rows.map((r) => r.id), id, position);
  const current = new Map(rows.map((r) => [r.id, r.position]));
  for (const [index, policyId] of order.entries()) {
    if (policyId !== id && current.get(policyId) !== index + 1) await trx.updateTable('l7policy').set({ position: index + 1 }).where('id', '=', policyId).execute();
  }
  return order;
}

const positionIn = (order: readonly string[], id: string) => order.indexOf(id) + 1;

/** A new policy with its rules, and its listener's policy ids in their new order (the others may have moved). */
export interface NewL7Policy {
  policy: L7PolicyRow;
  rules: L7RuleRow[];
  order: string[];
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
  listener: ListenerRow,
  input: L7PolicyInput,
): Promise<NewL7Policy> {
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
  driver.checks.l7policy?.(attrs, listenerCodec.decode(listener));
  await checkQuota(trx, deps.config, listener.project_id, { l7policy: 1, l7rule: rules.length }, deps.db.dialect);
  const order = await placeL7Policy(trx, listener.id, id, input.position ?? undefined);
  const row: L7PolicyRow = {
    id,
    project_id: listener.project_id,
    listener_id: listener.id,
    ...l7PolicyCodec.encode(attrs),
    position: positionIn(order, id),
    provisioning_status: 'PENDING_CREATE',
    operating_status: 'OFFLINE',
    created_at: timestamp(),
    updated_at: null,
  };
  await trx.insertInto('l7policy').values(row).execute();
  const written: L7RuleRow[] = [];
  for (const rule of rules) written.push(await writeL7Rule(trx, row, rule.attrs, rule.tags));
  await writeTags(trx, id, input.tags);
  return { policy: row, rules: written, order };
}

/** §5.2 for policy changes: LB ACTIVE→PENDING_UPDATE and the policy's listener PENDING_UPDATE. */
async function lockListenerForPolicyChange(trx: Trx, listener: ListenerRow): Promise<void> {
  await lockForChildChange(trx, listener.load_balancer_id);
  await markPending(trx, 'listener', [listener.id], 'PENDING_UPDATE');
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

/** POST /l7policies: the policy written (its checks first), then the listener locked and the job enqueued. */
export async function createL7Policy(deps: ApiDeps, trx: Trx, ctx: RequestContext, listener: ListenerRow, input: L7PolicyInput): Promise<NewL7Policy> {
  const created = await insertL7Policy(deps, trx, ctx, listener, input);
  await lockListenerForPolicyChange(trx, listener);
  await enqueue(trx, { loadBalancerId: listener.load_balancer_id, provider: await providerOf(trx, listener.load_balancer_id), operation: 'l7policy.create' });
  return created;
}

/** A PUT's outcome, checked against the policy and its listener as read before the transaction. */
export interface L7PolicyChange {
  attrs: { name: string; description: string; admin_state_up: boolean } & L7PolicyTarget;
  provider: string;
}

export async function checkL7PolicyUpdate(deps: ApiDeps, stored: L7PolicyRow, listener: ListenerRow, b: UpdateInput): Promise<L7PolicyChange> {
  const target = resolveL7PolicyTargetUpdate(targetOf(stored), b);
  const db = deps.db.kysely;
  if (b.redirect_pool_id) await checkRedirectPool(db, listener, b.redirect_pool_id);
  const pick = <T>(v: T | null | undefined, old: T, reset: T): T => (v === undefined ? old : v === null ? reset : v);
  const attrs = {
    name: pick(b.name, stored.name, ''),
    description: pick(b.description, stored.description, ''),
    admin_state_up: pick(b.admin_state_up, l7PolicyCodec.decode(stored).admin_state_up, false),
    ...target,
  };
  const provider = await providerOf(db, listener.load_balancer_id);
  deps.providers.forLoadBalancer(provider).checks.l7policy?.(attrs, listenerCodec.decode(listener));
  return { attrs, provider };
}

/** Writes a checked change under the listener's lock; returns the policy as it now stands. */
export async function updateL7Policy(trx: Trx, stored: L7PolicyRow, listener: ListenerRow, change: L7PolicyChange, b: UpdateInput): Promise<L7PolicyRow> {
  const { attrs } = change;
  await lockListenerForPolicyChange(trx, listener);
  const position = b.position === undefined ? stored.position : positionIn(await placeL7Policy(trx, listener.id, stored.id, b.position), stored.id);
  await trx
    .updateTable('l7policy')
    .set({ ...l7PolicyCodec.encode(attrs), position, provisioning_status: 'PENDING_UPDATE', updated_at: timestamp() })
    .where('id', '=', stored.id)
    .execute();
  await writeTags(trx, stored.id, b.tags);
  await enqueue(trx, { loadBalancerId: listener.load_balancer_id, provider: change.provider, operation: 'l7policy.update' });
  return trx.selectFrom('l7policy').selectAll().where('id', '=', stored.id).executeTakeFirstOrThrow();
}

export async function deleteL7Policy(trx: Trx, stored: L7PolicyRow): Promise<void> {
  const listener = await parentListener(trx, stored.listener_id);
  await lockListenerForPolicyChange(trx, listener);
  await markPending(trx, 'l7policy', [stored.id], 'PENDING_DELETE');
  await enqueue(trx, { loadBalancerId: listener.load_balancer_id, provider: await providerOf(trx, listener.load_balancer_id), operation: 'l7policy.delete' });
}

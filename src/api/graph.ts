/**
 * The single-call ("fully populated") load balancer create of §4: children given inline are
 * validated by the same insert functions as their own endpoints and written in the LB's
 * transaction, so the whole tree is created or nothing is.
 */
import type { Transaction } from 'kysely';
import type { BaseLogger } from 'pino';
import type { ApiDeps } from './context.js';
import type { Database } from '../db/schema.js';
import { apiError } from '../domain/errors.js';
import type { RequestContext } from '../domain/context.js';
import type { Static } from '../domain/schema-kit.js';
import type { LoadBalancerCreate } from '../domain/schemas/loadbalancer.js';
import type { PoolSingleCreate } from '../domain/schemas/pool.js';
import type { LoadBalancerRow } from './views/loadbalancer.js';
import { listenerRelations, listenerView } from './views/listener.js';
import { poolRelations, poolView } from './views/pool.js';
import { memberRelations, memberView } from './views/member.js';
import { healthMonitorFullView, healthMonitorRelations } from './views/healthmonitor.js';
import { renderL7PoliciesFull } from './views/l7policy.js';
import { checkQuota } from './quota.js';
import { renderLoadBalancers } from './resources/loadbalancers.js';
import { insertPool, type PoolInput } from './resources/pools.js';
import { insertListener } from './resources/listeners.js';
import { insertL7Policy } from './resources/l7policies.js';
import { forCreate, listenerTlsRefs, poolTlsRefs, verifyTlsRefs } from './tls-refs.js';
import type { Caller } from '../keymanager/index.js';
import { consumerOf, listenerRefsInUse, poolRefsInUse, syncConsumers } from '../certificate-use/consumers.js';

type Trx = Transaction<Database>;
type GraphBody = Static<typeof LoadBalancerCreate>;
type GraphPool = Static<typeof PoolSingleCreate>;
type GraphListener = NonNullable<GraphBody['listeners']>[number];

const invalid = (detail: string) => apiError('VALIDATION', detail);

/** A nested pool carrying anything besides its name is a full definition, not a reference. */
const isReference = (pool: GraphPool) => Object.keys(pool).every((k) => k === 'name');

function requireName(pool: GraphPool): string {
  if (!pool.name) throw invalid('Pools must be named when creating a fully populated loadbalancer.');
  return pool.name;
}

/** The pools given inline in listeners and their policies: definitions and name-only references. */
function nestedPools(body: Pick<GraphBody, 'listeners'>): GraphPool[] {
  return (body.listeners ?? []).flatMap((l) => [l.default_pool, ...(l.l7policies ?? []).map((p) => p.redirect_pool)]).filter((p): p is GraphPool => !!p);
}

/**
 * Every full pool definition of the request (top-level ones first, then those given inline
 * in listeners and policies, hoisted), after checking that names are present and unique and
 * that every name-only reference has a definition.
 */
export function collectGraphPools(body: Pick<GraphBody, 'pools' | 'listeners'>): GraphPool[] {
  const definitions = [...(body.pools ?? [])];
  const references = new Set<string>();
  definitions.forEach(requireName);
  for (const pool of nestedPools(body)) {
    const name = requireName(pool);
    if (isReference(pool)) references.add(name);
    else definitions.push(pool);
  }
  const names = definitions.map((p) => p.name);
  if (new Set(names).size !== names.length) throw invalid('Pool names must be unique when creating a fully populated loadbalancer.');
  for (const name of references) if (!names.includes(name)) throw invalid(`Pool '${name}' was referenced but no full definition was found.`);
  return definitions;
}

/** Graph pools bypass the schema's required attributes (a reference has none); full ones need them. */
function asPoolInput(pool: GraphPool): PoolInput {
  for (const attr of ['protocol', 'lb_algorithm'] as const)
    if (!pool[attr]) throw invalid(`Pool definition for '${pool.name}' missing required attribute: ${attr}`);
  return { ...pool, protocol: pool.protocol!, lb_algorithm: pool.lb_algorithm! };
}

/** Pools with their monitors and members; returns the new pool ids by name. */
async function insertGraphPools(deps: ApiDeps, trx: Trx, ctx: RequestContext, lb: LoadBalancerRow, pools: GraphPool[]): Promise<Map<string, string>> {
  if (pools.length) await checkQuota(trx, deps.config, lb.project_id, { pool: pools.length }, deps.db.dialect);
  const ids = new Map<string, string>();
  for (const pool of pools) {
    const input = asPoolInput(pool);
    if (input.members?.length) await checkQuota(trx, deps.config, lb.project_id, { member: input.members.length }, deps.db.dialect);
    const row = await insertPool(deps, trx, ctx, lb, input);
    ids.set(row.name, row.id);
  }
  return ids;
}

async function insertGraphListener(deps: ApiDeps, trx: Trx, ctx: RequestContext, lb: LoadBalancerRow, listener: GraphListener, poolIds: Map<string, string>): Promise<void> {
  const { default_pool: defaultPool, l7policies, ...input } = listener;
  const row = await insertListener(deps, trx, ctx, lb, { ...input, default_pool_id: defaultPool ? poolIds.get(defaultPool.name!) : input.default_pool_id });
  for (const policy of l7policies ?? []) {
    const { redirect_pool: redirectPool, ...policyInput } = policy;
    await insertL7Policy(deps, trx, ctx, row, { ...policyInput, redirect_pool_id: redirectPool ? poolIds.get(redirectPool.name!) : undefined });
  }
}

/**
 * Creates the children of a new load balancer in its transaction, in Octavia's order: all
 * pools (with monitors and members), then listeners resolving pool names, then their L7
 * policies and rules. The provider's checks run per object inside the insert functions.
 */
export async function insertGraphChildren(
  deps: ApiDeps,
  trx: Trx,
  ctx: RequestContext,
  lb: LoadBalancerRow,
  body: Pick<GraphBody, 'pools' | 'listeners'>,
): Promise<void> {
  const poolIds = await insertGraphPools(deps, trx, ctx, lb, collectGraphPools(body));
  const listeners = body.listeners ?? [];
  if (listeners.length) await checkQuota(trx, deps.config, lb.project_id, { listener: listeners.length }, deps.db.dialect);
  for (const listener of listeners) await insertGraphListener(deps, trx, ctx, lb, listener, poolIds);
}

/**
 * The certificate references of the whole tree, checked before its transaction: those of
 * the request together, so a refusal lists every unreadable one. Unlike the single-object
 * endpoints this runs before the objects' own rules, which need the load balancer's row.
 */
export async function verifyGraphTlsRefs(deps: ApiDeps, caller: Caller, body: Pick<GraphBody, 'pools' | 'listeners'>): Promise<void> {
  const pools = [...(body.pools ?? []), ...nestedPools(body)].map((pool) => forCreate(poolTlsRefs(pool)));
  const listeners = (body.listeners ?? []).map((listener) => forCreate(listenerTlsRefs(listener)));
  await verifyTlsRefs(deps.keyManager, caller, [...pools, ...listeners]);
}

/** After the tree's transaction: its listeners and pools become consumers of what they reference. */
export async function registerGraphConsumers(deps: ApiDeps, log: Pick<BaseLogger, 'warn'>, lbId: string): Promise<void> {
  const db = deps.db.kysely;
  const [listeners, pools] = await Promise.all([
    db.selectFrom('listener').selectAll().where('load_balancer_id', '=', lbId).execute(),
    db.selectFrom('pool').selectAll().where('load_balancer_id', '=', lbId).execute(),
  ]);
  await Promise.all([
    ...listeners.map((row) => syncConsumers(deps.keyManager, log, consumerOf('listener', row.id), [], listenerRefsInUse(row))),
    ...pools.map((row) => syncConsumers(deps.keyManager, log, consumerOf('pool', row.id), [], poolRefsInUse(row))),
  ]);
}

function groupBy<T, K>(items: readonly T[], key: (item: T) => K): Map<K, T[]> {
  const out = new Map<K, T[]>();
  for (const item of items) out.set(key(item), [...(out.get(key(item)) ?? []), item]);
  return out;
}

async function fullListeners(deps: ApiDeps, lbId: string) {
  const db = deps.db.kysely;
  const rows = await db.selectFrom('listener').selectAll().where('load_balancer_id', '=', lbId).orderBy('created_at').orderBy('id').execute();
  const ids = rows.map((r) => r.id);
  const policyRows = ids.length ? await db.selectFrom('l7policy').selectAll().where('listener_id', 'in', ids).orderBy('position').orderBy('id').execute() : [];
  const [rel, policies] = await Promise.all([listenerRelations(db, ids), renderL7PoliciesFull(db, policyRows)]);
  const policiesOf = groupBy(policies, (p) => p.listener_id);
  return rows.map((r) => {
    const { loadbalancers: _omitted, ...view } = listenerView(r, rel);
    return { ...view, l7policies: policiesOf.get(r.id) ?? [] };
  });
}

async function fullPools(deps: ApiDeps, lbId: string) {
  const db = deps.db.kysely;
  const rows = await db.selectFrom('pool').selectAll().where('load_balancer_id', '=', lbId).orderBy('created_at').orderBy('id').execute();
  const ids = rows.length ? rows.map((r) => r.id) : ['-'];
  const [members, monitors] = await Promise.all([
    db.selectFrom('member').selectAll().where('pool_id', 'in', ids).orderBy('created_at').orderBy('id').execute(),
    db.selectFrom('health_monitor').selectAll().where('pool_id', 'in', ids).execute(),
  ]);
  const [rel, memberRel, monitorRel] = await Promise.all([
    poolRelations(db, rows.map((r) => r.id)),
    memberRelations(db, members.map((m) => m.id)),
    healthMonitorRelations(db, monitors),
  ]);
  const membersOf = groupBy(members, (m) => m.pool_id);
  const monitorOf = new Map(monitors.map((m) => [m.pool_id, m]));
  return rows.map((r) => {
    const { loadbalancers: _lbs, healthmonitor_id: _hm, ...view } = poolView(r, rel);
    const monitor = monitorOf.get(r.id);
    return {
      ...view,
      members: (membersOf.get(r.id) ?? []).map((m) => memberView(m, memberRel)),
      healthmonitor: monitor ? healthMonitorFullView(monitor, monitorRel) : null,
    };
  });
}

/**
 * The LB in the full form POST returns: listeners with full policies and rules, pools with
 * full members and monitor. Nested objects drop their back-references (`loadbalancers`,
 * `healthmonitor_id`, a monitor's `pools`), as Octavia's fully populated types do.
 */
export async function renderFullLoadBalancer(deps: ApiDeps, lb: LoadBalancerRow) {
  const [[view], listeners, pools] = await Promise.all([renderLoadBalancers(deps, [lb]), fullListeners(deps, lb.id), fullPools(deps, lb.id)]);
  return { ...view!, listeners, pools };
}

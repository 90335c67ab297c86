/**
 * The single-call ("fully populated") load balancer create of §4: children given inline are
 * validated by the same insert functions as their own endpoints and written in the LB's
 * transaction, so the whole tree is created or nothing is.
 */
import type { Transaction } from 'kysely';
import type { BaseLogger } from 'pino';
import type { ApiDeps } from '../context.js';
import type { Database } from '../../db/schema.js';
import { apiError } from '../../domain/errors.js';
import type { RequestContext } from '../../domain/context.js';
import type { Static } from '../../domain/schema-kit.js';
import type { LoadBalancerCreate } from '../../domain/schemas/loadbalancer.js';
import type { PoolSingleCreate } from '../../domain/schemas/pool.js';
import type { LoadBalancerTree } from '../views/loadbalancer-tree.js';
import { enqueue } from '../../controller/jobs.js';
import { checkQuota } from '../quota.js';
import { insertLoadBalancer } from './loadbalancers.js';
import { insertPool, type PoolInput } from './pools.js';
import { insertListener } from './listeners.js';
import { insertL7Policy } from './l7policies.js';
import { forCreate, listenerTlsRefs, poolTlsRefs, verifyTlsRefs } from '../tls-refs.js';
import type { Caller } from '../../keymanager/index.js';
import { listenerUser, poolUser, registerRefs } from './tls-consumers.js';

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

/** Pools with their monitors and members, added to `tree`; returns the new pool ids by name. */
async function insertGraphPools(deps: ApiDeps, trx: Trx, ctx: RequestContext, tree: LoadBalancerTree, pools: GraphPool[]): Promise<Map<string, string>> {
  const { lb } = tree;
  if (pools.length) await checkQuota(trx, deps.config, lb.project_id, { pool: pools.length }, deps.db.dialect);
  const ids = new Map<string, string>();
  for (const pool of pools) {
    const input = asPoolInput(pool);
    if (input.members?.length) await checkQuota(trx, deps.config, lb.project_id, { member: input.members.length }, deps.db.dialect);
    const written = await insertPool(deps, trx, ctx, lb, input);
    tree.pools.push(written.pool);
    if (written.monitor) tree.monitors.push(written.monitor);
    tree.members.push(...written.members);
    ids.set(written.pool.name, written.pool.id);
  }
  return ids;
}

/** A listener and its policies, added to `tree`; a policy may renumber those before it. */
async function insertGraphListener(deps: ApiDeps, trx: Trx, ctx: RequestContext, tree: LoadBalancerTree, listener: GraphListener, poolIds: Map<string, string>): Promise<void> {
  const { default_pool: defaultPool, l7policies, ...input } = listener;
  const row = await insertListener(deps, trx, tree.lb, { ...input, default_pool_id: defaultPool ? poolIds.get(defaultPool.name!) : input.default_pool_id });
  tree.listeners.push(row);
  let policies: LoadBalancerTree['policies'] = [];
  for (const policy of l7policies ?? []) {
    const { redirect_pool: redirectPool, ...policyInput } = policy;
    const written = await insertL7Policy(deps, trx, ctx, row, { ...policyInput, redirect_pool_id: redirectPool ? poolIds.get(redirectPool.name!) : undefined });
    policies = [...policies, written.policy].map((p) => ({ ...p, position: written.order.indexOf(p.id) + 1 }));
    tree.rules.push(...written.rules);
  }
  tree.policies.push(...policies);
}

/**
 * Writes a new load balancer with its children in `trx`, in Octavia's order: the LB, all
 * pools (with monitors and members), then listeners resolving pool names, then their L7
 * policies and rules; then its job. The provider's checks run per object inside the insert
 * functions. Returns every row written, from which the answer renders.
 */
export async function createLoadBalancerTree(deps: ApiDeps, trx: Trx, ctx: RequestContext, body: GraphBody): Promise<LoadBalancerTree> {
  const lb = await insertLoadBalancer(deps, trx, ctx, body);
  const tree: LoadBalancerTree = { lb, listeners: [], pools: [], members: [], monitors: [], policies: [], rules: [] };
  const poolIds = await insertGraphPools(deps, trx, ctx, tree, collectGraphPools(body));
  const listeners = body.listeners ?? [];
  if (listeners.length) await checkQuota(trx, deps.config, lb.project_id, { listener: listeners.length }, deps.db.dialect);
  for (const listener of listeners) await insertGraphListener(deps, trx, ctx, tree, listener, poolIds);
  await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'loadbalancer.create' });
  return tree;
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
export async function registerGraphConsumers(deps: ApiDeps, log: Pick<BaseLogger, 'warn'>, tree: LoadBalancerTree): Promise<void> {
  await Promise.all([...tree.listeners.map((row) => registerRefs(deps, log, listenerUser, row)), ...tree.pools.map((row) => registerRefs(deps, log, poolUser, row))]);
}

/**
 * The single-call ("fully populated") load balancer create: children given inline are
 * validated with the same rules as their own endpoints and written in the LB's transaction.
 */
import type { Transaction } from 'kysely';
import type { ApiDeps } from './context.js';
import type { Database } from '../db/schema.js';
import type { RequestContext } from '../domain/context.js';
import type { ProviderDriver } from '../providers/driver.js';
import type { LoadBalancerRow } from './views/loadbalancer.js';
import { renderLoadBalancers } from './resources/loadbalancers.js';

export async function insertGraphChildren(
  _deps: ApiDeps,
  _trx: Transaction<Database>,
  _ctx: RequestContext,
  _lb: LoadBalancerRow,
  _driver: ProviderDriver,
  _body: Record<string, unknown>,
): Promise<void> {
  // Filled in with listeners/pools support.
}

/** The LB in the full form POST returns: listeners and pools as complete nested objects. */
export async function renderFullLoadBalancer(deps: ApiDeps, lb: LoadBalancerRow) {
  const [view] = await renderLoadBalancers(deps, [lb]);
  return { ...view!, listeners: [], pools: [] };
}

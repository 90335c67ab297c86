/**
 * `PUT /v2/lbaas/loadbalancers/{id}/migrate` (an Ostia extension): the load balancer moves to
 * another flavor, topology or provider (amphora ↔ ovn) with its VIP kept. The provider's migrate flow builds the new data
 * plane, moves the traffic and retires the old one; the load balancer keeps its old placement
 * until the new one serves.
 */
import type { Transaction } from 'kysely';
import type { ApiDeps } from '../context.js';
import type { Database } from '../../db/schema.js';
import { apiError } from '../../domain/errors.js';
import type { Static } from '../../domain/schema-kit.js';
import type { LoadBalancerMigrateBody } from '../../domain/schemas/loadbalancer.js';
import { describePlacement, effectiveTopology, flavorTopology, type Migration, type Placement } from '../../domain/placement.js';
import { loadBalancerCodec, type LoadBalancerRow } from '../../db/records/load-balancer.js';
import { lockLoadBalancer } from '../../db/lb-lock.js';
import { enqueue } from '../../controller/jobs.js';
import { misfits } from './provider-fit.js';
import type { ProviderDriver } from '../../provider-contract/provider.js';
import { MOVABLE, whyNoMoves } from '../../providers/movable.js';

type Trx = Transaction<Database>;
type MigrateInput = Static<typeof LoadBalancerMigrateBody>['migration'];

async function flavorRow(trx: Trx, id: string) {
  return trx
    .selectFrom('flavor')
    .innerJoin('flavor_profile', 'flavor_profile.id', 'flavor.flavor_profile_id')
    .select(['flavor.enabled', 'flavor_profile.provider_name', 'flavor_profile.flavor_data'])
    .where('flavor.id', '=', id)
    .executeTakeFirst();
}

/** The topology a placement builds: its own, else its flavor's (from the flavor's data), else SINGLE. */
function builtTopology(p: Placement, flavorData: string | null) {
  return effectiveTopology(p.topology, flavorTopology(flavorData));
}

interface Target {
  placement: Placement;
  /** The target provider's driver, and whether it is the load balancer's own. */
  driver: ProviderDriver;
  staying: boolean;
  /** The data of the flavor the target has, read once for the checks and its topology. */
  flavorData: string | null;
}

/** Where the request moves the load balancer to, checked as a create there would be (Octavia's texts where it has them). */
async function target(deps: ApiDeps, trx: Trx, row: LoadBalancerRow, b: MigrateInput): Promise<Target> {
  const current = deps.providers.forLoadBalancer(row.provider);
  const flavor = b.flavor_id ? await flavorRow(trx, b.flavor_id) : undefined;
  if (b.flavor_id && !flavor) throw apiError('VALIDATION', 'Invalid flavor_id.');
  if (flavor && !flavor.enabled) throw apiError('DISABLED_OPTION', 'flavor', b.flavor_id!);
  const provider = b.provider ?? flavor?.provider_name ?? row.provider;
  const driver = deps.providers.get(provider);
  if (flavor && deps.providers.get(flavor.provider_name) !== driver) throw apiError('FLAVOR_PROVIDER_MISMATCH', b.flavor_id!, provider);
  const staying = driver === current;
  const topology = b.topology ?? (staying ? row.topology : null);
  if (topology) {
    if (!driver.checks.topology) throw apiError('VALIDATION', `provider '${provider}' builds no amphorae, so a topology does not apply to it; leave topology out.`);
    driver.checks.topology(topology);
  }
  if (flavor) driver.validateFlavorData(JSON.parse(flavor.flavor_data) as Record<string, unknown>);
  const flavorId = b.flavor_id !== undefined ? b.flavor_id : staying ? row.flavor_id : null;
  // A flavor left as it is was not read above.
  const flavorData = flavor?.flavor_data ?? (flavorId ? ((await flavorRow(trx, flavorId))?.flavor_data ?? null) : null);
  return { placement: { provider: staying ? row.provider : provider, flavor_id: flavorId, topology }, driver, staying, flavorData };
}

/** Locks the load balancer (PENDING_UPDATE) and enqueues its move; refuses a move to where it already is, or one its tree does not fit. */
export async function migrateLoadBalancer(deps: ApiDeps, trx: Trx, row: LoadBalancerRow, b: MigrateInput): Promise<Migration> {
  if (b.provider === undefined && b.flavor_id === undefined && b.topology === undefined)
    throw apiError('VALIDATION', 'a migration names at least one of provider, flavor_id and topology.');
  const from: Placement = { provider: row.provider, flavor_id: row.flavor_id, topology: row.topology };
  const current = deps.providers.forLoadBalancer(row.provider);
  const { placement: to, driver, staying, flavorData } = await target(deps, trx, row, b);
  if (!staying) {
    const lb = { ...loadBalancerCodec.decode(row), provider: to.provider, flavor_id: to.flavor_id };
    const refused = await misfits(trx, lb, driver);
    if (refused.length) throw apiError('VALIDATION', `load balancer ${row.id} does not fit provider '${to.provider}': ${refused.join('; ')}`);
    const why = MOVABLE.has(current.name) && MOVABLE.has(driver.name) ? whyNoMoves(deps.config) : 'moves go between the amphora and ovn providers';
    if (why) throw apiError('PROVIDER_NOT_IMPLEMENTED', to.provider, `taking over a load balancer of provider '${row.provider}': ${why}`);
  } else {
    // The same flavor both sides: nothing moves unless the topology it builds changes.
    const before = builtTopology(from, flavorData);
    if (from.flavor_id === to.flavor_id && before === builtTopology(to, flavorData))
      throw apiError('VALIDATION', `load balancer ${row.id} is already built with ${describePlacement(from, before)}: nothing to move.`);
  }
  driver.checks.operation?.('loadbalancer.migrate');
  await lockLoadBalancer(trx, row.id, ['ACTIVE'], 'PENDING_UPDATE');
  const migration = { from, to };
  await enqueue(trx, { loadBalancerId: row.id, provider: row.provider, operation: 'loadbalancer.migrate', payload: { migration } });
  return migration;
}

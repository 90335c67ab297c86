/** One load balancer's wanted Northbound state, and the clean-up of shared health-check ports, for flows and reconciliation alike. */
import type { Db } from '../../db/database.js';
import type { OvnDeps } from './deps.js';
import { loadTrees } from '../../health/status.js';
import { desiredState, type Desired } from './desired.js';
import { ovnMemberStatuses, type OvnHealthFacts } from './statuses.js';
import { forgetHealthPorts, probedSubnets, reserveHealthPorts, unusedHealthPorts } from './health-ports.js';
import { loadOvnTree } from './tree.js';

export interface PlannedState {
  desired: Desired;
  /** What OVN will probe, for the statuses the tree settles to (derived as the health watcher derives them). */
  facts: OvnHealthFacts;
}

/**
 * What load balancer `lbId` should be in the Northbound database (health-check sources reserved
 * first), with the member statuses it records there and the tree's statuses after the change.
 */
export async function plannedState(db: Db, deps: OvnDeps, lbId: string): Promise<PlannedState> {
  const [tree, observed] = await Promise.all([loadOvnTree(db.kysely, lbId), loadTrees(db.kysely, [lbId])]);
  const healthPorts = await reserveHealthPorts(db, deps.catalog, probedSubnets(tree));
  const facts = (unreachable: ReadonlySet<string>): OvnHealthFacts => ({ monitoredPools: new Set(tree.monitors.map((m) => m.poolId)), unreachable });
  const observation = observed.get(lbId);
  const desired = desiredState(tree, deps.nb.topology, deps.network, healthPorts, (unreachable) => (observation ? ovnMemberStatuses(observation, facts(unreachable)) : {}));
  return { desired, facts: facts(new Set(desired.unreachableMembers)) };
}

/**
 * Switch ports of health-check sources no member needs any more go, then their reservations:
 * among `candidates` (what a change stopped using), or all of them.
 */
export async function releaseHealthPorts(db: Db, deps: OvnDeps, candidates?: readonly string[]): Promise<void> {
  const unused = await unusedHealthPorts(db, deps.providerNames, candidates);
  if (!unused.length) return;
  await deps.nb.removePorts(unused.map((p) => p.name));
  await forgetHealthPorts(db, unused.map((p) => p.id));
}

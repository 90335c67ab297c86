/** One load balancer's wanted Northbound state, and the clean-up of shared health-check ports, for flows and reconciliation alike. */
import type { Db } from '../../db/database.js';
import type { OvnDeps } from './deps.js';
import { desiredState, type Desired, type HealthPortAddress } from './desired.js';
import type { Condition, Row } from '../../ovn/ovsdb/index.js';
import { SB_DB } from '../../ovn/connection.js';
import { memberKey, ovnMemberStatuses, SERVICE_MONITOR, verdictsOf, type OvnHealthFacts, type ServiceMonitorStatus } from './statuses.js';
import { forgetHealthPorts, probedSubnets, reserveHealthPorts, unusedHealthPorts } from './health-ports.js';
import { loadOvnTree, loadOvnTrees, probedMembers, type OvnTree } from './tree.js';
import type { ProvisioningStatus } from '../../domain/enums.js';

export interface PlannedState {
  desired: Desired;
  /** What OVN will probe, for the statuses the tree settles to (derived as the health watcher derives them). */
  facts: OvnHealthFacts;
}

/**
 * The probes' current verdicts on the members OVN probes in `lbId`, asked of the Southbound
 * (none when it cannot be reached: the health role's watcher catches up).
 */
async function currentVerdicts(deps: OvnDeps, tree: OvnTree): Promise<Map<string, ServiceMonitorStatus>> {
  const members = probedMembers(tree);
  const sb = members.length ? await deps.southbound() : undefined;
  if (!sb) return new Map();
  const ports = [...new Set(members.map((m) => m.port))];
  const { table, columns } = SERVICE_MONITOR;
  try {
    const results = await sb.transact(SB_DB, ports.map((port) => ({ op: 'select' as const, table, where: [['port', '==', port] as Condition], columns })));
    const verdicts = verdictsOf(results.flatMap((r) => (r.op === 'select' ? r.rows : [])));
    return new Map(members.flatMap((m) => {
      const verdict = verdicts.get(memberKey(m) ?? '');
      return verdict === undefined ? [] : [[m.id, verdict] as const];
    }));
  } catch {
    return new Map();
  }
}

/** What `tree` should be in the Northbound database, given its health-check sources and the probes' verdicts (if asked). */
function planned(deps: OvnDeps, tree: OvnTree, healthPorts: ReadonlyMap<string, HealthPortAddress>, serviceMonitors?: Map<string, ServiceMonitorStatus>): PlannedState {
  const facts = (unreachable: ReadonlySet<string>): OvnHealthFacts => ({ monitoredPools: new Set(tree.monitors.map((m) => m.poolId)), unreachable, ...(serviceMonitors && { serviceMonitors }) });
  const desired = desiredState(tree, deps.nb.topology, deps.network, healthPorts, (unreachable) => ovnMemberStatuses(tree.observed, facts(unreachable)));
  return { desired, facts: facts(new Set(desired.unreachableMembers)) };
}

/**
 * What load balancer `lbId` should be in the Northbound database (health-check sources reserved
 * first), with the member statuses it records there and the facts its statuses settle from.
 * `verdicts` asks the Southbound what the probes say now (a change that settles needs it: a
 * member may join a backend OVN already knows to be down); otherwise stored statuses stand.
 */
export async function plannedState(db: Db, deps: OvnDeps, lbId: string, verdicts = false): Promise<PlannedState> {
  const tree = await loadOvnTree(db.kysely, lbId);
  const [serviceMonitors, healthPorts] = await Promise.all([verdicts ? currentVerdicts(deps, tree) : undefined, reserveHealthPorts(db, deps.catalog, probedSubnets(tree))]);
  return planned(deps, tree, healthPorts, serviceMonitors);
}

/**
 * Switch ports of health-check sources no member needs any more go, then their reservations:
 * among `candidates` (what a change stopped using), or all of them.
 */
export async function releaseHealthPorts(db: Db, deps: OvnDeps, candidates?: readonly string[]): Promise<void> {
  const unused = await unusedHealthPorts(db, candidates);
  if (!unused.length) return;
  await deps.nb.removePorts(unused.map((p) => p.name));
  await forgetHealthPorts(db, unused.map((p) => p.id));
}

/** Provisioning states in which no job owns a load balancer, so its rows may be rewritten from the database. */
export const SETTLED: readonly ProvisioningStatus[] = ['ACTIVE', 'ERROR'];

type NbRows = ReadonlyArray<{ uuid: string; row: Row }>;

/** The monitor replaces a row on every change, so the same row objects are the same rows. */
const sameRows = (a: NbRows, b: NbRows) => a.length === b.length && a.every((x) => b.some((y) => y.uuid === x.uuid && y.row === x.row));

/**
 * Rewrites the rows of those of `lbIds` that are settled (a job in flight writes its own), e.g.
 * after the health watcher changed member statuses (`neutron:member_status`); returns the ids
 * whose rows changed and those that failed, with the reason. Their trees and health-check
 * sources are read together, in the queries of one; a load balancer whose rows change meanwhile
 * (or whose write loses to another writer) is read again on its own.
 */
export async function syncSettled(db: Db, deps: OvnDeps, lbIds: readonly string[], verify = false): Promise<{ rewritten: string[]; failed: Array<{ id: string; error: string }> }> {
  const out = { rewritten: [] as string[], failed: [] as Array<{ id: string; error: string }> };
  if (!lbIds.length) return out;
  // Each load balancer's rows as they are before its tree is read: the tree is only planned against those.
  const before = new Map(lbIds.map((id) => [id, deps.nb.rowsNamed(id)]));
  const settled = (await db.kysely.selectFrom('load_balancer').select('id').where('id', 'in', [...lbIds]).where('provisioning_status', 'in', SETTLED).execute()).map((r) => r.id);
  const trees = await loadOvnTrees(db.kysely, settled);
  // When a subnet cannot be reserved, each load balancer is read on its own: only those on that subnet fail.
  const healthPorts = await reserveHealthPorts(db, deps.catalog, [...new Set([...trees.values()].flatMap(probedSubnets))]).catch(() => undefined);
  for (const id of settled) {
    const tree = trees.get(id);
    let attempt = 0;
    const desired = async (current: NbRows) =>
      attempt++ === 0 && tree && healthPorts && sameRows(current, before.get(id)!) ? planned(deps, tree, healthPorts).desired : (await plannedState(db, deps, id)).desired;
    try {
      if ((await deps.nb.sync(id, desired, verify)).operations) out.rewritten.push(id);
    } catch (e) {
      out.failed.push({ id, error: (e as Error).message });
    }
  }
  return out;
}

/**
 * Operating status as Octavia's health manager derives it (octavia-internals §3.2, octavia-api
 * §5.1), from whatever observes the data plane: an amphora's heartbeat, or OVN's own probes
 * (providers/ovn/statuses.ts). Each source builds an Observation; one pure derivation turns the
 * stored tree and an observation into changes, and a thin writer touches only the rows whose
 * status changed.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import { treeObjectCodec, type TreeObject } from '../db/records/tree-object.js';
import type { Heartbeat } from '../domain/amphora-config.js';
import { PendingStatuses, type OperatingStatus } from '../domain/enums.js';

type Q = Kysely<Database> | Transaction<Database>;

type Row = Pick<TreeObject, 'id' | 'admin_state_up' | 'provisioning_status' | 'operating_status'>;

export interface ObservedTree {
  lb: Row & { config_version: number };
  listeners: Row[];
  pools: Row[];
  members: Array<Row & { pool_id: string }>;
}

export type StatusTable = 'load_balancer' | 'listener' | 'pool' | 'member';

export interface StatusChange {
  table: StatusTable;
  id: string;
  operating_status: OperatingStatus;
}

/**
 * A served listener: OPEN, FULL (at its connection limit), or OTHER, a state Octavia does not
 * judge (HAProxy's STOP), which leaves the stored status as it is.
 */
export type ListenerState = 'OPEN' | 'FULL' | 'OTHER';

export interface PoolObservation {
  /** The pool as a whole serves; false is Octavia's pool DOWN, i.e. ERROR. */
  up: boolean;
  /** Member id → API operating status (ONLINE, ERROR, DRAINING, OFFLINE, NO_MONITOR). */
  members: ReadonlyMap<string, OperatingStatus>;
}

/** What a data plane reports of one load balancer. Ids it does not know are ignored. */
export interface Observation {
  /** The listeners it serves; an enabled listener absent here is not being served. */
  listeners: ReadonlyMap<string, ListenerState>;
  /** The pools it serves; a member absent from its pool's report is not being served. */
  pools: ReadonlyMap<string, PoolObservation>;
  /**
   * It runs the load balancer's current configuration: only then does an absent listener, pool
   * or member mean something is missing rather than not configured there yet.
   */
  current: boolean;
}

export interface Derivation {
  changes: StatusChange[];
  /**
   * False when the configuration is current but an enabled listener is missing from the
   * observation (HAProxy is not serving it): an amphora's heartbeat then does not count as a
   * sign of life, so a broken data plane is eventually failed over.
   */
  listenersComplete: boolean;
}

/** Higher is worse: when several reports or children disagree, the worst wins. */
const severity: Record<OperatingStatus, number> = { ONLINE: 0, NO_MONITOR: 1, DRAINING: 2, DEGRADED: 3, OFFLINE: 4, ERROR: 5 };
const worst = (a: OperatingStatus, b: OperatingStatus): OperatingStatus => (severity[b] > severity[a] ? b : a);

const pending = (row: { provisioning_status: string }) => row.provisioning_status.startsWith('PENDING_');

/** HAProxy's server states (`show stat` status column) as API member operating statuses. */
export function memberStatus(reported: string): OperatingStatus | undefined {
  const s = reported.trim().toUpperCase();
  if (s === 'NO CHECK') return 'NO_MONITOR';
  if (s.startsWith('UP')) return 'ONLINE';
  if (s.startsWith('DOWN')) return 'ERROR';
  if (s.startsWith('DRAIN') || s === 'NOLB') return 'DRAINING';
  if (s.startsWith('MAINT')) return 'OFFLINE';
  return undefined;
}

const listenerState = (reported: string): ListenerState => (reported === 'OPEN' || reported === 'FULL' ? reported : 'OTHER');

/**
 * An amphora's heartbeat as an observation, current when the amphora runs `configVersion` (the
 * load balancer's) or newer. Backends are reported per pool id, or per `<pool>:<listener>` when
 * a pool serves several listeners (Octavia's format): one view per pool, the worst of its reports.
 */
export function heartbeatObservation(hb: Heartbeat, configVersion: number): Observation {
  const listeners = new Map(Object.entries(hb.listeners).map(([id, report]) => [id, listenerState(report.status)] as const));
  const pools = new Map<string, { up: boolean; members: Map<string, OperatingStatus> }>();
  for (const [key, report] of Object.entries(hb.pools)) {
    const poolId = key.split(':')[0]!;
    const seen = pools.get(poolId) ?? { up: true, members: new Map<string, OperatingStatus>() };
    if (report.status.trim().toUpperCase() !== 'UP') seen.up = false;
    for (const [memberId, state] of Object.entries(report.members)) {
      const derived = memberStatus(state);
      if (derived) seen.members.set(memberId, worst(seen.members.get(memberId) ?? derived, derived));
    }
    pools.set(poolId, seen);
  }
  return { listeners, pools, current: hb.configVersion >= configVersion };
}

export function deriveStatuses(tree: ObservedTree, observed: Observation): Derivation {
  const { lb } = tree;
  // Absence means something only when the data plane runs the newest config of a settled, enabled LB.
  const judgeAbsence = !pending(lb) && lb.admin_state_up && observed.current;
  const derived: StatusChange[] = [];
  let lbStatus: OperatingStatus = 'ONLINE';

  let listenersComplete = true;
  for (const l of tree.listeners) {
    const state = observed.listeners.get(l.id);
    let status: OperatingStatus | undefined;
    if (!l.admin_state_up) status = 'OFFLINE';
    else if (state === 'OPEN') status = 'ONLINE';
    else if (state === 'FULL') {
      status = 'DEGRADED';
      lbStatus = worst(lbStatus, 'DEGRADED');
    } else if (!state && judgeAbsence && !pending(l)) {
      status = 'ERROR';
      listenersComplete = false;
    }
    if (status) derived.push({ table: 'listener', id: l.id, operating_status: status });
  }

  for (const p of tree.pools) {
    const report = observed.pools.get(p.id);
    let status: OperatingStatus | undefined;
    if (!p.admin_state_up) status = 'OFFLINE';
    else if (report?.up) status = 'ONLINE';
    else if (report) {
      status = 'ERROR';
      lbStatus = worst(lbStatus, 'ERROR');
    } else if (judgeAbsence) status = 'OFFLINE';
    for (const m of tree.members.filter((x) => x.pool_id === p.id)) {
      const memberStatus = memberOperatingStatus(m, report, judgeAbsence);
      if (!memberStatus) continue;
      derived.push({ table: 'member', id: m.id, operating_status: memberStatus });
      if (memberStatus === 'ERROR' && status === 'ONLINE') status = 'DEGRADED';
    }
    if (status === 'DEGRADED') lbStatus = worst(lbStatus, 'DEGRADED');
    if (status) derived.push({ table: 'pool', id: p.id, operating_status: status });
  }

  derived.push({ table: 'load_balancer', id: lb.id, operating_status: lb.admin_state_up ? lbStatus : 'OFFLINE' });
  return { changes: onlyChanges(tree, derived), listenersComplete };
}

function memberOperatingStatus(m: Row, report: PoolObservation | undefined, judgeAbsence: boolean): OperatingStatus | undefined {
  if (!m.admin_state_up) return 'OFFLINE';
  const reported = report?.members.get(m.id);
  if (reported) return reported;
  // A member the data plane does not report is not being served; one never checked stays NO_MONITOR.
  if ((report || judgeAbsence) && m.operating_status !== 'NO_MONITOR') return 'OFFLINE';
  return undefined;
}

/** Objects in PENDING_* have an operation in flight that will settle them: leave them be. */
function onlyChanges(tree: ObservedTree, derived: StatusChange[]): StatusChange[] {
  const rows = new Map<string, Row>([[tree.lb.id, tree.lb], ...[...tree.listeners, ...tree.pools, ...tree.members].map((r) => [r.id, r] as const)]);
  return derived.filter((c) => {
    const row = rows.get(c.id)!;
    return !pending(row) && row.operating_status !== c.operating_status;
  });
}

/** The trees of several load balancers, in four queries whatever their number. */
export async function loadTrees(db: Q, lbIds: readonly string[]): Promise<Map<string, ObservedTree>> {
  const trees = new Map<string, ObservedTree>();
  if (!lbIds.length) return trees;
  const columns = ['id', 'admin_state_up', 'provisioning_status', 'operating_status'] as const;
  const lbs = await db.selectFrom('load_balancer').select([...columns, 'config_version']).where('id', 'in', [...lbIds]).execute();
  for (const lb of lbs) trees.set(lb.id, { lb: treeObjectCodec.decode(lb), listeners: [], pools: [], members: [] });
  if (!lbs.length) return trees;
  const ids = lbs.map((lb) => lb.id);
  const [listeners, pools] = await Promise.all([
    db.selectFrom('listener').select([...columns, 'load_balancer_id']).where('load_balancer_id', 'in', ids).execute(),
    db.selectFrom('pool').select([...columns, 'load_balancer_id']).where('load_balancer_id', 'in', ids).execute(),
  ]);
  const poolIds = pools.length ? pools.map((p) => p.id) : ['-'];
  const members = await db.selectFrom('member').select([...columns, 'pool_id']).where('pool_id', 'in', poolIds).execute();
  const poolLb = new Map(pools.map((p) => [p.id, p.load_balancer_id]));
  for (const { load_balancer_id, ...l } of listeners) trees.get(load_balancer_id)!.listeners.push(treeObjectCodec.decode(l));
  for (const { load_balancer_id, ...p } of pools) trees.get(load_balancer_id)!.pools.push(treeObjectCodec.decode(p));
  for (const m of members) trees.get(poolLb.get(m.pool_id)!)!.members.push(treeObjectCodec.decode(m));
  return trees;
}

/** One UPDATE per table and status, never per row; re-checks PENDING_* in case an operation began meanwhile. */
export async function writeStatusChanges(db: Q, changes: readonly StatusChange[]): Promise<void> {
  const groups = new Map<string, { table: StatusTable; status: OperatingStatus; ids: string[] }>();
  for (const c of changes) {
    const key = `${c.table}/${c.operating_status}`;
    const group = groups.get(key) ?? { table: c.table, status: c.operating_status, ids: [] };
    group.ids.push(c.id);
    groups.set(key, group);
  }
  for (const { table, status, ids } of groups.values())
    await db.updateTable(table).set({ operating_status: status }).where('id', 'in', ids).where('provisioning_status', 'not in', PendingStatuses).execute();
}

/**
 * The fully populated load balancer a single-call create answers with, rendered from the rows
 * it wrote: listeners with full policies and rules, pools with full members and monitor.
 * Nested objects drop their back-references (`loadbalancers`, `healthmonitor_id`, a
 * monitor's `pools`), as Octavia's fully populated types do.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { poolListenerIds } from '../../db/pool-listeners.js';
import { readTags } from '../tags.js';
import type { LoadBalancerRow } from '../../db/records/load-balancer.js';
import type { ListenerRow } from '../../db/records/listener.js';
import type { PoolRow } from '../../db/records/pool.js';
import type { MemberRow } from '../../db/records/member.js';
import type { HealthMonitorRow } from '../../db/records/health-monitor.js';
import type { L7PolicyRow } from '../../db/records/l7policy.js';
import type { L7RuleRow } from '../../db/records/l7rule.js';
import { loadBalancerView } from './loadbalancer.js';
import { listenerView } from './listener.js';
import { poolView } from './pool.js';
import { memberView } from './member.js';
import { healthMonitorFullView } from './healthmonitor.js';
import { l7PolicyFullView } from './l7policy.js';

type Q = Kysely<Database> | Transaction<Database>;

/** Every row of a new load balancer's tree, as written. */
export interface LoadBalancerTree {
  lb: LoadBalancerRow;
  listeners: ListenerRow[];
  pools: PoolRow[];
  members: MemberRow[];
  monitors: HealthMonitorRow[];
  policies: L7PolicyRow[];
  rules: L7RuleRow[];
}

const compare = (a: string | number, b: string | number) => (a < b ? -1 : a > b ? 1 : 0);
/** The order the stored views list children in: `created_at, id` (policies: `position, id`). */
const byCreation = (a: { created_at: string; id: string }, b: { created_at: string; id: string }) => compare(a.created_at, b.created_at) || compare(a.id, b.id);
const byPosition = (a: L7PolicyRow, b: L7PolicyRow) => compare(a.position, b.position) || compare(a.id, b.id);

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) out.set(key(item), [...(out.get(key(item)) ?? []), item]);
  return out;
}

/**
 * Tags and the listeners each pool serves are read (their order is the database's, and a
 * pool's listeners follow Octavia's rule in db/pool-listeners.ts); no row is read back.
 */
export async function renderLoadBalancerTree(db: Q, tree: LoadBalancerTree) {
  const listeners = [...tree.listeners].sort(byCreation);
  const pools = [...tree.pools].sort(byCreation);
  const all = [tree.lb, ...listeners, ...pools, ...tree.members, ...tree.monitors, ...tree.policies, ...tree.rules];
  const [tags, servedBy] = await Promise.all([readTags(db, all.map((r) => r.id)), poolListenerIds(db, pools.map((p) => p.id))]);
  const policiesOf = groupBy([...tree.policies].sort(byPosition), (p) => p.listener_id);
  const rulesOf = groupBy([...tree.rules].sort(byCreation), (r) => r.l7policy_id);
  const membersOf = groupBy([...tree.members].sort(byCreation), (m) => m.pool_id);
  const monitorOf = new Map(tree.monitors.map((m) => [m.pool_id, m]));
  const ids = (rows: readonly { id: string }[] | undefined) => (rows ?? []).map((r) => r.id);
  const lb = loadBalancerView(tree.lb, { tags, listeners: new Map([[tree.lb.id, ids(listeners)]]), pools: new Map([[tree.lb.id, ids(pools)]]) });
  return {
    ...lb,
    listeners: listeners.map((l) => {
      const policies = policiesOf.get(l.id) ?? [];
      const { loadbalancers: _omitted, ...view } = listenerView(l, { tags, l7policies: new Map() });
      return { ...view, l7policies: policies.map((p) => l7PolicyFullView(p, rulesOf.get(p.id) ?? [], tags)) };
    }),
    pools: pools.map((p) => {
      const rel = { tags, listeners: servedBy, members: new Map(), healthMonitors: new Map() };
      const { loadbalancers: _lbs, healthmonitor_id: _hm, ...view } = poolView(p, rel);
      const monitor = monitorOf.get(p.id);
      return {
        ...view,
        members: (membersOf.get(p.id) ?? []).map((m) => memberView(m, { tags })),
        healthmonitor: monitor ? healthMonitorFullView(monitor, { tags }) : null,
      };
    }),
  };
}

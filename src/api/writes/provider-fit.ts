/**
 * Whether a load balancer's whole tree fits another provider: every object put through that
 * provider's own checks, as a create there would, and each refusal kept in its words.
 */
import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { ApiError } from '../../domain/errors.js';
import type { ProviderDriver } from '../../provider-contract/provider.js';
import type { LoadBalancerRecord } from '../../db/records/load-balancer.js';
import { listenerCodec } from '../../db/records/listener.js';
import { poolCodec } from '../../db/records/pool.js';
import { memberCodec } from '../../db/records/member.js';
import { healthMonitorCodec } from '../../db/records/health-monitor.js';
import { l7PolicyCodec } from '../../db/records/l7policy.js';
import { l7RuleCodec } from '../../db/records/l7rule.js';
import { treeIds } from '../../db/lb-tree.js';

const NONE = ['-'];
const orNone = (ids: string[]) => (ids.length ? ids : NONE);

/** `listener 3f… (web): Provider 'ovn' does not support …` for each object the provider refuses; [] when all fit. */
export async function misfits(trx: Transaction<Database>, lb: LoadBalancerRecord, driver: ProviderDriver): Promise<string[]> {
  const ids = await treeIds(trx, lb.id);
  const [listeners, pools, members, monitors, policies, rules] = await Promise.all([
    trx.selectFrom('listener').selectAll().where('id', 'in', orNone(ids.listeners)).orderBy('id').execute(),
    trx.selectFrom('pool').selectAll().where('id', 'in', orNone(ids.pools)).orderBy('id').execute(),
    trx.selectFrom('member').selectAll().where('id', 'in', orNone(ids.members)).orderBy('id').execute(),
    trx.selectFrom('health_monitor').selectAll().where('id', 'in', orNone(ids.healthMonitors)).orderBy('id').execute(),
    trx.selectFrom('l7policy').selectAll().where('id', 'in', orNone(ids.l7policies)).orderBy('id').execute(),
    trx.selectFrom('l7rule').selectAll().where('id', 'in', orNone(ids.l7rules)).orderBy('id').execute(),
  ]);
  const found: string[] = [];
  const judge = (what: string, obj: { id: string; name?: string | null }, check: () => void) => {
    try {
      check();
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      found.push(`${what} ${obj.id}${obj.name ? ` (${obj.name})` : ''}: ${e.message}`);
    }
  };
  const { checks } = driver;
  judge('load balancer', lb, () => checks.loadBalancer?.(lb));
  const listenerById = new Map(listeners.map((r) => [r.id, listenerCodec.decode(r)]));
  const poolById = new Map(pools.map((r) => [r.id, poolCodec.decode(r)]));
  for (const listener of listenerById.values()) judge('listener', listener, () => checks.listener?.(listener));
  for (const pool of poolById.values()) judge('pool', pool, () => checks.pool?.(pool));
  for (const member of members.map((r) => memberCodec.decode(r))) judge('member', member, () => checks.member?.(member, lb));
  for (const monitor of monitors.map((r) => healthMonitorCodec.decode(r))) judge('health monitor', monitor, () => checks.healthMonitor?.(monitor, poolById.get(monitor.pool_id)!));
  for (const policy of policies.map((r) => l7PolicyCodec.decode(r))) judge('L7 policy', policy, () => checks.l7policy?.(policy, listenerById.get(policy.listener_id)!));
  for (const rule of rules.map((r) => l7RuleCodec.decode(r))) judge('L7 rule', rule, () => checks.l7rule?.(rule));
  return found;
}

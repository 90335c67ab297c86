/**
 * Provider advice on the live load balancers (`ostia advise --from-live`, the API's `GET /v2/ostia/advice`):
 * the load balancers this service holds, each amphora one's objects put to the OVN provider's own checks
 * (what the API would run if it were created on OVN), so each says whether it could move to OVN, and if
 * not, in the provider's words, why; and the amphorae that frees.
 */
import type { Db } from '../../db/database.js';
import { healthMonitorCodec } from '../../db/records/health-monitor.js';
import { l7PolicyCodec } from '../../db/records/l7policy.js';
import { listenerCodec } from '../../db/records/listener.js';
import { loadBalancerCodec, type LoadBalancerRecord } from '../../db/records/load-balancer.js';
import { memberCodec } from '../../db/records/member.js';
import { poolCodec } from '../../db/records/pool.js';
import { ovnChecks, presence, PROVIDER as OVN } from '../../providers/ovn/capabilities.js';
import { ProviderAliases } from '../../providers/registry.js';
import { askOvn, ovnRefusal } from './ovn-verdict.js';
import type { LiveAdvice, LiveRefusal, LiveSummary } from './summary.js';

/** CPO's description of a Service's load balancer: `Kubernetes external service <ns>/<name> from cluster <cluster>`. */
const CPO_DESCRIPTION = /^Kubernetes external service \S+ from cluster (\S+)$/;
const GONE = 'DELETED';

/** Every load balancer (of `project`, if given) with its tree and amphorae: one query per table. */
async function loadTrees(db: Db, project: string | undefined) {
  const k = db.kysely;
  const lbs = (await k.selectFrom('load_balancer').selectAll().$if(project !== undefined, (q) => q.where('project_id', '=', project!)).orderBy('created_at').orderBy('id').execute()).map(
    loadBalancerCodec.decode,
  );
  const [listeners, pools, members, monitors, policies, amphorae] = await Promise.all([
    k.selectFrom('listener').innerJoin('load_balancer as lb', 'lb.id', 'listener.load_balancer_id').selectAll('listener').$if(project !== undefined, (q) => q.where('lb.project_id', '=', project!)).orderBy('listener.protocol_port').orderBy('listener.id').execute(),
    k.selectFrom('pool').innerJoin('load_balancer as lb', 'lb.id', 'pool.load_balancer_id').selectAll('pool').$if(project !== undefined, (q) => q.where('lb.project_id', '=', project!)).orderBy('pool.created_at').orderBy('pool.id').execute(),
    k
      .selectFrom('member')
      .innerJoin('pool', 'pool.id', 'member.pool_id')
      .innerJoin('load_balancer as lb', 'lb.id', 'pool.load_balancer_id')
      .selectAll('member')
      .select('pool.load_balancer_id as lb_id')
      .$if(project !== undefined, (q) => q.where('lb.project_id', '=', project!))
      .orderBy('member.created_at').orderBy('member.id')
      .execute(),
    k
      .selectFrom('health_monitor')
      .innerJoin('pool', 'pool.id', 'health_monitor.pool_id')
      .innerJoin('load_balancer as lb', 'lb.id', 'pool.load_balancer_id')
      .selectAll('health_monitor')
      .$if(project !== undefined, (q) => q.where('lb.project_id', '=', project!))
      .execute(),
    k
      .selectFrom('l7policy')
      .innerJoin('listener', 'listener.id', 'l7policy.listener_id')
      .innerJoin('load_balancer as lb', 'lb.id', 'listener.load_balancer_id')
      .selectAll('l7policy')
      .select('listener.load_balancer_id as lb_id')
      .$if(project !== undefined, (q) => q.where('lb.project_id', '=', project!))
      .execute(),
    k
      .selectFrom('amphora')
      .innerJoin('load_balancer as lb', 'lb.id', 'amphora.load_balancer_id')
      .select('amphora.load_balancer_id as lb_id')
      .where('amphora.status', '!=', GONE)
      .$if(project !== undefined, (q) => q.where('lb.project_id', '=', project!))
      .execute(),
  ]);
  return {
    lbs,
    listeners: listeners.map(listenerCodec.decode),
    pools: pools.map(poolCodec.decode),
    members: members.map((m) => ({ lbId: m.lb_id, member: memberCodec.decode(m) })),
    monitors: monitors.map(healthMonitorCodec.decode),
    policies: policies.map((p) => ({ lbId: p.lb_id, policy: l7PolicyCodec.decode(p) })),
    amphorae: amphorae.map((a) => a.lb_id as string),
  };
}

type Trees = Awaited<ReturnType<typeof loadTrees>>;

/**
 * Every refusal the OVN provider would make of one load balancer's objects. Its checks stop at an
 * object's first refusal, so each field is put to the table on its own; the member's family rule is
 * the provider's own check, run with the monitor fields (asked separately) left out.
 */
function refusalsOf(lb: LoadBalancerRecord, trees: Trees): LiveRefusal[] {
  const found: LiveRefusal[] = [];
  const put = (object: string, refused: ReturnType<typeof askOvn>) => {
    if (refused) found.push({ object, feature: refused.feature, value: refused.value, reason: refused.reason });
  };
  if (lb.flavor_id) put(`load balancer flavor ${lb.flavor_id}`, askOvn('flavor', 'validate'));
  if (lb.availability_zone) put(`load balancer availability zone ${lb.availability_zone}`, askOvn('availability_zone', 'validate'));
  for (const l of trees.listeners.filter((x) => x.load_balancer_id === lb.id)) {
    const object = `listener ${l.id} (${l.protocol} :${l.protocol_port})`;
    put(object, askOvn('listener.protocol', l.protocol));
    put(object, askOvn('listener.allowed_cidrs', presence(l.allowed_cidrs)));
  }
  for (const { policy } of trees.policies.filter((p) => p.lbId === lb.id)) put(`l7policy ${policy.id} (${policy.action})`, askOvn('l7policy', 'create'));
  const pools = new Set(trees.pools.filter((p) => p.load_balancer_id === lb.id).map((p) => p.id));
  for (const p of trees.pools.filter((x) => pools.has(x.id))) {
    const object = `pool ${p.id} (${p.protocol} ${p.lb_algorithm})`;
    put(object, askOvn('pool.protocol', p.protocol));
    put(object, askOvn('pool.lb_algorithm', p.lb_algorithm));
    if (p.session_persistence?.type) put(object, askOvn('pool.session_persistence', p.session_persistence.type));
  }
  for (const hm of trees.monitors.filter((m) => pools.has(m.pool_id))) put(`health monitor ${hm.id} (${hm.type})`, askOvn('healthmonitor.type', hm.type));
  for (const { member } of trees.members.filter((m) => m.lbId === lb.id)) {
    const object = `member ${member.id} (${member.address}:${member.protocol_port})`;
    put(object, askOvn('member.monitor_address_or_port', member.monitor_address || member.monitor_port ? 'present' : 'absent'));
    put(object, ovnRefusal('member', () => ovnChecks.member!({ ...member, monitor_address: null, monitor_port: null }, lb)));
  }
  return found;
}

function adviseOne(lb: LoadBalancerRecord, trees: Trees): LiveAdvice {
  const amphorae = trees.amphorae.filter((id) => id === lb.id).length;
  const base = { id: lb.id, name: lb.name, project_id: lb.project_id, provider: lb.provider, cluster: CPO_DESCRIPTION.exec(lb.description)?.[1] ?? null, amphorae };
  if (lb.provider === OVN) return { ...base, verdict: 'on-ovn', refusals: [], explanation: 'On OVN already: no amphora.' };
  if ((ProviderAliases[lb.provider] ?? lb.provider) !== 'amphora') return { ...base, verdict: 'no-data-plane', refusals: [], explanation: `Provider ${lb.provider}: no amphorae to save.` };
  const refusals = refusalsOf(lb, trees);
  if (!refusals.length) return { ...base, verdict: 'fits-ovn', refusals, explanation: `Fits OVN: the OVN provider's checks take every object of it; moving it frees ${amphorae} amphora(e), with its VIP kept: ostia migrate ${lb.id} --provider ovn --wait.` };
  const reasons = [...new Set(refusals.map((r) => r.reason))];
  // An object may be refused more than once (an HTTP pool balanced ROUND_ROBIN): the objects are counted.
  const objects = new Set(refusals.map((r) => r.object)).size;
  return { ...base, verdict: 'needs-amphora', refusals, explanation: `Needs amphora: the OVN provider refuses ${objects} of its objects: ${reasons.map((r) => `"${r}"`).join('; ')}.` };
}

export async function adviseLive(db: Db, project: string | undefined): Promise<LiveSummary> {
  const trees = await loadTrees(db, project);
  const loadBalancers = trees.lbs.filter((lb) => lb.provisioning_status !== 'PENDING_DELETE').map((lb) => adviseOne(lb, trees));
  const onAmphora = loadBalancers.filter((a) => a.verdict === 'fits-ovn' || a.verdict === 'needs-amphora');
  const movable = onAmphora.filter((a) => a.verdict === 'fits-ovn');
  const amphoraeToday = onAmphora.reduce((n, a) => n + a.amphorae, 0);
  const amphoraeSaved = movable.reduce((n, a) => n + a.amphorae, 0);
  const explanation = onAmphora.length
    ? `${movable.length} of ${onAmphora.length} amphora load balancer(s) could move to OVN, freeing ${amphoraeSaved} of ${amphoraeToday} amphora(e); the others ask for what the OVN provider refuses (each says what).`
    : 'No amphora load balancer here: nothing to move.';
  return { loadBalancers, amphoraLoadBalancers: onAmphora.length, movable: movable.length, amphoraeToday, amphoraeAfter: amphoraeToday - amphoraeSaved, amphoraeSaved, explanation };
}

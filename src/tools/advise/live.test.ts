/**
 * `adviseLive` on a real migrated database (SQLite in memory; PostgreSQL in the second pass): load
 * balancers made through the API of an in-process service (amphora provider, noop compute and
 * network), each test in a project of its own, so each reads only what it made. Where the API cannot
 * make what a test needs (what the amphora provider refuses but OVN takes, such as SOURCE_IP_PORT or
 * UDP under noop compute; an OVN load balancer without a running OVN), the one column is written
 * around it. Every refusal is checked against the OVN table's own words.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import type { HealthMonitorType } from '../../domain/enums.js';
import { ovnCapabilities } from '../../providers/ovn/capabilities.js';
import { memberA, startHarness, type Caller, type Harness } from '../../../test/support/harness.js';
import { adviseLive } from './live.js';
import type { LiveAdvice } from './summary.js';

type Obj = Record<string, any>;

/** The table's own words for (feature, value): what every refusal must carry. */
const said = (feature: string, value: string) => ovnCapabilities.unsupported().find((u) => u.feature === feature && u.value === value)!.reason;

let h: Harness;

before(async () => {
  h = await startHarness({ api: { enabledProviders: ['amphora', 'octavia', 'noop'], defaultProvider: 'amphora' }, compute: { driver: 'noop' }, network: { driver: 'noop' } });
});
after(() => h?.close());

/** A project of its own for one test: adviseLive(db, project) then reads only what that test made. */
const project = (): Caller => ({ ...memberA, project: randomBytes(16).toString('hex') });

const VIP_SUBNET = randomUUID();

/** A load balancer (with its listeners, pools, monitors, members, policies) made by one graph create, settled ACTIVE. */
async function made(as: Caller, body: Obj): Promise<Obj> {
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { as, body: { loadbalancer: { vip_subnet_id: VIP_SUBNET, ...body } } });
  assert.equal(r.statusCode, 201, r.body);
  const lb = r.json().loadbalancer;
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  return lb;
}

async function asAdmin(path: string, body: Obj): Promise<Obj> {
  const r = await h.request('POST', `/v2/lbaas/${path}`, { body });
  assert.equal(r.statusCode, 201, r.body);
  return Object.values(r.json())[0] as Obj;
}

/** A pool OVN takes as it is (SOURCE_IP: the amphora provider refuses SOURCE_IP_PORT at its API). */
const pool = (extra: Obj = {}) => ({ name: `pool-${randomUUID()}`, protocol: 'TCP', lb_algorithm: 'SOURCE_IP', ...extra });
const tcp = (port: number, extra: Obj = {}) => ({ protocol: 'TCP', protocol_port: port, ...extra });

const advise = (as: Caller) => adviseLive(h.runtime.db, as.project);
async function only(as: Caller): Promise<LiveAdvice> {
  const { loadBalancers } = await advise(as);
  assert.equal(loadBalancers.length, 1);
  return loadBalancers[0]!;
}
const refused = (a: LiveAdvice) => a.refusals.map((r) => [r.feature, r.value, r.reason]);
const expected = (...pairs: Array<[string, string]>) => pairs.map(([f, v]) => [f, v, said(f, v)]);

test('an amphora load balancer whose every object OVN takes fits, and moving it frees its one amphora', async () => {
  const as = project();
  const lb = await made(as, { name: 'plain', listeners: [tcp(80, { default_pool: pool({ healthmonitor: { type: 'TCP', delay: 5, timeout: 3, max_retries: 2 }, members: [{ address: '198.51.100.50', protocol_port: 8080 }] }) })] });
  const summary = await advise(as);
  const [a] = summary.loadBalancers;
  assert.deepEqual([a!.id, a!.provider, a!.verdict, a!.amphorae, a!.refusals], [lb.id, 'amphora', 'fits-ovn', 1, []]);
  assert.match(a!.explanation, /^Fits OVN: .* frees 1 amphora/);
  assert.ok(a!.explanation.endsWith(`with its VIP kept: ostia migrate ${lb.id} --provider ovn --wait.`), a!.explanation);
  assert.deepEqual([summary.amphoraLoadBalancers, summary.movable, summary.amphoraeToday, summary.amphoraeAfter, summary.amphoraeSaved], [1, 1, 1, 0, 1]);
  assert.match(summary.explanation, /^1 of 1 amphora load balancer\(s\) could move to OVN, freeing 1 of 1 amphora/);
});

test('a load balancer already on the ovn provider is reported as on OVN, and saves nothing', async () => {
  const as = project();
  const lb = await made(as, { name: 'native', provider: 'noop', listeners: [tcp(80, { default_pool: pool({ lb_algorithm: 'ROUND_ROBIN' }) })] });
  // The ovn provider cannot be enabled here without a running OVN: the stored row is given its name.
  await h.runtime.db.kysely.updateTable('load_balancer').set({ provider: 'ovn' }).where('id', '=', lb.id).execute();
  const summary = await advise(as);
  const [a] = summary.loadBalancers;
  assert.deepEqual([a!.provider, a!.verdict, a!.refusals, a!.amphorae], ['ovn', 'on-ovn', [], 0]);
  assert.match(a!.explanation, /On OVN already/);
  assert.deepEqual([summary.amphoraLoadBalancers, summary.movable, summary.amphoraeToday, summary.amphoraeSaved], [0, 0, 0, 0]);
  assert.match(summary.explanation, /No amphora load balancer here/);
});

test('a noop-provider load balancer has no data plane: not put to the checks, not counted, even with what OVN refuses', async () => {
  const as = project();
  await made(as, { name: 'noop', provider: 'noop', listeners: [{ protocol: 'HTTP', protocol_port: 80, default_pool: pool({ protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' }) }] });
  const summary = await advise(as);
  const [a] = summary.loadBalancers;
  assert.deepEqual([a!.provider, a!.verdict, a!.refusals, a!.amphorae], ['noop', 'no-data-plane', [], 0]);
  assert.match(a!.explanation, /^Provider noop: no amphorae to save/);
  assert.deepEqual([summary.amphoraLoadBalancers, summary.amphoraeToday], [0, 0]);
});

test("the amphora provider's alias octavia is an amphora load balancer: put to the checks", async () => {
  const as = project();
  await made(as, { name: 'aliased', provider: 'octavia', listeners: [tcp(80, { default_pool: pool({ lb_algorithm: 'LEAST_CONNECTIONS' }) })] });
  const a = await only(as);
  assert.deepEqual([a.provider, a.verdict, a.amphorae], ['octavia', 'needs-amphora', 1]);
  assert.deepEqual(refused(a), expected(['pool.lb_algorithm', 'LEAST_CONNECTIONS']));
});

test('a load balancer with a flavor: OVN validates no flavor', async () => {
  const as = project();
  const profile = await asAdmin('flavorprofiles', { flavorprofile: { name: `single-${as.project}`, provider_name: 'amphora', flavor_data: '{"loadbalancer_topology": "SINGLE"}' } });
  const flavor = await asAdmin('flavors', { flavor: { name: `single-${as.project}`, flavor_profile_id: profile.id, enabled: true } });
  await made(as, { flavor_id: flavor.id, listeners: [tcp(80, { default_pool: pool() })] });
  const a = await only(as);
  assert.equal(a.verdict, 'needs-amphora');
  assert.deepEqual(refused(a), expected(['flavor', 'validate']));
  assert.equal(a.refusals[0]!.object, `load balancer flavor ${flavor.id}`);
  assert.equal(a.explanation, `Needs amphora: the OVN provider refuses 1 of its objects: "${said('flavor', 'validate')}".`);
});

test('a load balancer in an availability zone: OVN validates no availability zone', async () => {
  const as = project();
  const profile = await asAdmin('availabilityzoneprofiles', { availability_zone_profile: { name: `z-${as.project}`, provider_name: 'amphora', availability_zone_data: '{"compute_zone": "z1"}' } });
  await asAdmin('availabilityzones', { availability_zone: { name: `z-${as.project}`, availability_zone_profile_id: profile.id } });
  await made(as, { availability_zone: `z-${as.project}`, listeners: [tcp(80, { default_pool: pool() })] });
  const a = await only(as);
  assert.deepEqual(refused(a), expected(['availability_zone', 'validate']));
  assert.equal(a.refusals[0]!.object, `load balancer availability zone z-${as.project}`);
});

test('an L7 policy on a listener: OVN creates no l7policies', async () => {
  const as = project();
  await made(as, { listeners: [{ protocol: 'HTTP', protocol_port: 80, l7policies: [{ action: 'REJECT' }] }] });
  const a = await only(as);
  assert.deepEqual(refused(a), expected(['listener.protocol', 'HTTP'], ['l7policy', 'create']));
  assert.match(a.refusals[1]!.object, /^l7policy \S+ \(REJECT\)$/);
});

test('the explanation counts the objects refused (one may be refused twice) and gives each reason once', async () => {
  const as = project();
  await made(as, { listeners: [{ protocol: 'HTTP', protocol_port: 80, default_pool: pool({ protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' }) }] });
  const a = await only(as);
  assert.deepEqual(refused(a), expected(['listener.protocol', 'HTTP'], ['pool.protocol', 'HTTP'], ['pool.lb_algorithm', 'ROUND_ROBIN']));
  assert.equal(a.explanation, `Needs amphora: the OVN provider refuses 2 of its objects: "${said('listener.protocol', 'HTTP')}"; "${said('pool.lb_algorithm', 'ROUND_ROBIN')}".`);
});

test('allowed_cidrs on a listener is refused; an empty list is no allowed_cidrs, as the API stores it (null) or a row holds it ([])', async () => {
  const as = project();
  const lb = await made(as, { listeners: [tcp(80, { allowed_cidrs: ['203.0.113.0/24'], default_pool: pool() }), tcp(81, { allowed_cidrs: [] }), tcp(82)] });
  await h.runtime.db.kysely.updateTable('listener').set({ allowed_cidrs: '[]' }).where('load_balancer_id', '=', lb.id).where('protocol_port', '=', 82).execute();
  const stored = await h.runtime.db.kysely.selectFrom('listener').select('allowed_cidrs').where('load_balancer_id', '=', lb.id).orderBy('protocol_port').execute();
  assert.deepEqual(stored.map((l) => l.allowed_cidrs), ['["203.0.113.0/24"]', null, '[]']);
  const a = await only(as);
  assert.deepEqual(refused(a), expected(['listener.allowed_cidrs', 'present']));
  assert.match(a.refusals[0]!.object, /^listener \S+ \(TCP :80\)$/);
});

test('session persistence: SOURCE_IP fits; HTTP_COOKIE and APP_COOKIE are refused', async () => {
  const as = project();
  const persisted = (port: number, session_persistence: Obj) => tcp(port, { default_pool: pool({ session_persistence }) });
  await made(as, { listeners: [persisted(80, { type: 'SOURCE_IP' }), persisted(81, { type: 'HTTP_COOKIE' }), persisted(82, { type: 'APP_COOKIE', cookie_name: 'sid' })] });
  const a = await only(as);
  assert.deepEqual(refused(a).sort(), expected(['pool.session_persistence', 'APP_COOKIE'], ['pool.session_persistence', 'HTTP_COOKIE']).sort());
});

test('algorithms: ROUND_ROBIN and LEAST_CONNECTIONS are refused; SOURCE_IP and SOURCE_IP_PORT fit', async () => {
  const as = project();
  const lb = await made(as, { listeners: ['ROUND_ROBIN', 'LEAST_CONNECTIONS', 'SOURCE_IP', 'SOURCE_IP'].map((lb_algorithm, i) => tcp(80 + i, { default_pool: pool({ lb_algorithm }) })) });
  // The amphora provider refuses SOURCE_IP_PORT at its API (HAProxy has no such balance): one pool is given it in the row.
  const last = await h.runtime.db.kysely.selectFrom('pool').innerJoin('listener', 'listener.default_pool_id', 'pool.id').select('pool.id').where('listener.load_balancer_id', '=', lb.id).where('listener.protocol_port', '=', 83).executeTakeFirstOrThrow();
  await h.runtime.db.kysely.updateTable('pool').set({ lb_algorithm: 'SOURCE_IP_PORT' }).where('id', '=', last.id).execute();
  const a = await only(as);
  assert.deepEqual(refused(a).sort(), expected(['pool.lb_algorithm', 'LEAST_CONNECTIONS'], ['pool.lb_algorithm', 'ROUND_ROBIN']).sort());
});

test('protocols: HTTP and HTTPS listeners and pools are refused; TCP and UDP fit', async () => {
  const as = project();
  const lb = await made(as, {
    listeners: [
      { protocol: 'HTTP', protocol_port: 80, default_pool: pool({ protocol: 'HTTP' }) },
      { protocol: 'HTTPS', protocol_port: 443, default_pool: pool({ protocol: 'HTTPS' }) },
      tcp(53, { default_pool: pool() }),
      tcp(54, { default_pool: pool() }),
    ],
  });
  // Under compute.driver noop the amphora provider refuses UDP at its API: one TCP pair is made UDP in its rows.
  const udp = await h.runtime.db.kysely.selectFrom('listener').select(['id', 'default_pool_id']).where('load_balancer_id', '=', lb.id).where('protocol_port', '=', 54).executeTakeFirstOrThrow();
  await h.runtime.db.kysely.updateTable('listener').set({ protocol: 'UDP' }).where('id', '=', udp.id).execute();
  await h.runtime.db.kysely.updateTable('pool').set({ protocol: 'UDP' }).where('id', '=', udp.default_pool_id!).execute();
  const a = await only(as);
  assert.deepEqual(refused(a).sort(), expected(['listener.protocol', 'HTTP'], ['listener.protocol', 'HTTPS'], ['pool.protocol', 'HTTP'], ['pool.protocol', 'HTTPS']).sort());
  assert.deepEqual(a.refusals.map((r) => r.object.replace(/ \S+ /, ' ID ')).sort(), ['listener ID (HTTP :80)', 'listener ID (HTTPS :443)', 'pool ID (HTTP SOURCE_IP)', 'pool ID (HTTPS SOURCE_IP)']);
});

test('health monitors: TCP and UDP-CONNECT fit; HTTP, HTTPS, PING, TLS-HELLO and SCTP are refused', async () => {
  const as = project();
  const types: HealthMonitorType[] = ['HTTP', 'HTTPS', 'PING', 'TCP', 'TLS-HELLO', 'UDP-CONNECT', 'SCTP'];
  // UDP-CONNECT and SCTP monitor pools the amphora provider refuses here (UDP under noop compute, SCTP anywhere): made TCP, then given the type in the row.
  const viaApi = (type: string) => (type === 'UDP-CONNECT' || type === 'SCTP' ? 'TCP' : type);
  const lb = await made(as, { listeners: types.map((type, i) => tcp(80 + i, { default_pool: pool({ healthmonitor: { type: viaApi(type), delay: 5, timeout: 3, max_retries: 2 } }) })) });
  for (const [i, type] of types.entries()) {
    if (viaApi(type) === type) continue;
    const { default_pool_id } = await h.runtime.db.kysely.selectFrom('listener').select('default_pool_id').where('load_balancer_id', '=', lb.id).where('protocol_port', '=', 80 + i).executeTakeFirstOrThrow();
    await h.runtime.db.kysely.updateTable('health_monitor').set({ type }).where('pool_id', '=', default_pool_id!).execute();
  }
  const a = await only(as);
  assert.deepEqual(refused(a).sort(), expected(...['HTTP', 'HTTPS', 'PING', 'SCTP', 'TLS-HELLO'].map((t): [string, string] => ['healthmonitor.type', t])).sort());
  for (const r of a.refusals) assert.match(r.object, new RegExp(`^health monitor \\S+ \\(${r.value}\\)$`));
});

test('members: a monitor address or port is refused; one of another IP family than the VIP is refused, unless the VIPs are of both', async () => {
  const as = project();
  const members = [
    { address: '198.51.100.60', protocol_port: 80, monitor_port: 9000 },
    { address: '198.51.100.61', protocol_port: 80, monitor_address: '198.51.100.99' },
    { address: '2001:db8::61', protocol_port: 80 },
    { address: '198.51.100.62', protocol_port: 80 },
  ];
  await made(as, { name: 'v4', listeners: [tcp(80, { default_pool: pool({ members }) })] });
  const a = await only(as);
  // Members made together share a created_at: their order is the database's.
  assert.deepEqual(refused(a).sort(), expected(['member.ip_version', 'mixed'], ['member.monitor_address_or_port', 'present'], ['member.monitor_address_or_port', 'present']).sort());
  assert.deepEqual(a.refusals.map((r) => `${r.object.replace(/ \S+ /, ' ID ')} ${r.feature}`).sort(), [
    'member ID (198.51.100.60:80) member.monitor_address_or_port',
    'member ID (198.51.100.61:80) member.monitor_address_or_port',
    'member ID (2001:db8::61:80) member.ip_version',
  ]);

  const dual = project();
  await made(dual, { name: 'dual', additional_vips: [{ subnet_id: randomUUID(), ip_address: '2001:db8:5::1' }], listeners: [tcp(80, { default_pool: pool({ members: members.slice(2) }) })] });
  assert.deepEqual((await only(dual)).refusals, []);
});

test('--project: only that project\'s load balancers; without it, every project\'s', async () => {
  const [a, b] = [project(), project()];
  const lbA = await made(a, { listeners: [tcp(80, { default_pool: pool() })] });
  const lbB = await made(b, { listeners: [{ protocol: 'HTTP', protocol_port: 80, default_pool: pool({ protocol: 'HTTP' }) }] });
  assert.deepEqual((await advise(a)).loadBalancers.map((x) => [x.id, x.project_id, x.verdict]), [[lbA.id, a.project, 'fits-ovn']]);
  assert.deepEqual((await advise(b)).loadBalancers.map((x) => [x.id, x.project_id, x.verdict]), [[lbB.id, b.project, 'needs-amphora']]);
  assert.deepEqual((await advise(project())).loadBalancers, []);
  const all = await adviseLive(h.runtime.db, undefined);
  const ids = all.loadBalancers.map((x) => x.id);
  assert.ok(ids.includes(lbA.id) && ids.includes(lbB.id));
});

test("the cluster is CPO's name from the description; any other description names none", async () => {
  const as = project();
  const described = ['Kubernetes external service shop/web from cluster kube-prod', 'Kubernetes external service shop/web from cluster kube prod', 'made by hand', ''];
  for (const [i, description] of described.entries()) await made(as, { name: `d${i}`, description });
  const byName = Object.fromEntries((await advise(as)).loadBalancers.map((x) => [x.name, x.cluster]));
  assert.deepEqual(byName, { d0: 'kube-prod', d1: null, d2: null, d3: null });
});

test('amphorae are counted per topology (SINGLE 1, ACTIVE_STANDBY 2), deleted amphorae and load balancers being deleted are not', async () => {
  const as = project();
  const profile = await asAdmin('flavorprofiles', { flavorprofile: { name: `ha-${as.project}`, provider_name: 'amphora', flavor_data: '{"loadbalancer_topology": "ACTIVE_STANDBY"}' } });
  const flavor = await asAdmin('flavors', { flavor: { name: `ha-${as.project}`, flavor_profile_id: profile.id, enabled: true } });
  const single = await made(as, { name: 'single', listeners: [tcp(80, { default_pool: pool() })] });
  const pair = await made(as, { name: 'pair', flavor_id: flavor.id, listeners: [tcp(80, { default_pool: pool() })] });
  const byName = (s: Awaited<ReturnType<typeof advise>>) => Object.fromEntries(s.loadBalancers.map((x) => [x.name, x]));
  let summary = await advise(as);
  assert.deepEqual([byName(summary).single!.amphorae, byName(summary).pair!.amphorae], [1, 2]);
  // The pair needs amphora (its flavor), the single one fits: 3 today, 1 saved.
  assert.deepEqual([summary.amphoraLoadBalancers, summary.movable, summary.amphoraeToday, summary.amphoraeAfter, summary.amphoraeSaved], [2, 1, 3, 2, 1]);
  assert.match(summary.explanation, /^1 of 2 amphora load balancer\(s\) could move to OVN, freeing 1 of 3 amphora/);

  const backup = await h.runtime.db.kysely.selectFrom('amphora').select('id').where('load_balancer_id', '=', pair.id).where('role', '=', 'BACKUP').executeTakeFirstOrThrow();
  await h.runtime.db.kysely.updateTable('amphora').set({ status: 'DELETED' }).where('id', '=', backup.id).execute();
  await h.runtime.db.kysely.updateTable('load_balancer').set({ provisioning_status: 'PENDING_DELETE' }).where('id', '=', single.id).execute();
  summary = await advise(as);
  assert.deepEqual(summary.loadBalancers.map((x) => [x.name, x.amphorae]), [['pair', 1]]);
  assert.deepEqual([summary.amphoraLoadBalancers, summary.movable, summary.amphoraeToday, summary.amphoraeSaved], [1, 0, 1, 0]);
});

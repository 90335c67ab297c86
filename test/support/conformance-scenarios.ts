/**
 * The lifecycle scenarios every provider is held to, as data: what each needs, in the vocabulary
 * of the OVN capability table, and a body that drives the API and checks real outcomes (statuses
 * through GET and the status tree, and traffic through the VIP). A provider that refuses a need
 * skips the scenario; PROBES shows through the API that it does refuse it.
 */
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { treeStatuses, until, type Api, type MemberSpec, type Need, type Obj, type ProviderEnv } from './conformance-api.js';

export interface ScenarioContext {
  api: Api;
  env: ProviderEnv;
  /** The scenario's name, which its load balancers carry. */
  name: string;
  /** Load balancers to cascade-delete after the scenario, whatever its outcome. */
  track(lbId: string): void;
}

export interface Scenario {
  name: string;
  needs: readonly Need[];
  run(c: ScenarioContext): Promise<void>;
}

const need = (feature: string, value: string): Need => ({ feature, value });
const TCP = [need('listener.protocol', 'TCP'), need('pool.protocol', 'TCP')];
const HTTP = [need('listener.protocol', 'HTTP'), need('pool.protocol', 'HTTP')];
const SOURCE_IP = need('pool.lb_algorithm', 'SOURCE_IP');
const TCP_MONITOR = need('healthmonitor.type', 'TCP');
const TCP_MONITOR_BODY = { type: 'TCP', delay: 1, timeout: 1, max_retries: 1, max_retries_down: 1 };

interface LbSpec {
  protocol: 'TCP' | 'HTTP' | 'HTTPS' | 'UDP' | 'SCTP';
  algorithm: string;
  members: readonly MemberSpec[];
  /** Extra attributes per member name. */
  memberExtras?: Record<string, Obj>;
  listener?: Obj;
  pool?: Obj;
  healthmonitor?: Obj;
}

interface Built {
  lbId: string;
  vip: string;
  port: number;
  listenerId: string;
  poolId: string;
  /** Member name → id. */
  members: Record<string, string>;
}

const memberBody = (m: MemberSpec, extra: Obj = {}) => ({ name: m.name, address: m.address, protocol_port: m.port, ...(m.subnetId ? { subnet_id: m.subnetId } : {}), ...extra });

/** One load balancer with listener `l`, default pool `p` and its members, created in one call and ACTIVE. */
async function build(c: ScenarioContext, spec: LbSpec): Promise<Built> {
  const port = c.env.listenerPort();
  const vipAddress = c.env.vipAddress();
  const created = await c.api.ok('POST', '/loadbalancers', {
    loadbalancer: {
      name: c.name.slice(0, 255),
      provider: c.env.provider,
      vip_subnet_id: c.env.vipSubnetId,
      ...(vipAddress ? { vip_address: vipAddress } : {}),
      listeners: [
        {
          name: 'l',
          protocol: spec.protocol,
          protocol_port: port,
          ...spec.listener,
          default_pool: {
            name: 'p',
            protocol: spec.protocol,
            lb_algorithm: spec.algorithm,
            ...spec.pool,
            ...(spec.healthmonitor ? { healthmonitor: spec.healthmonitor } : {}),
            members: spec.members.map((m) => memberBody(m, spec.memberExtras?.[m.name])),
          },
        },
      ],
    },
  });
  const lb = created.loadbalancer as Obj;
  c.track(lb.id);
  await c.api.active(lb.id);
  const tree = await c.api.tree(lb.id);
  const listener = tree.listeners[0]!;
  const pool = listener.pools[0]!;
  return { lbId: lb.id, vip: lb.vip_address, port, listenerId: listener.id, poolId: pool.id, members: Object.fromEntries(pool.members.map((m) => [m.name, m.id])) };
}

/** Waits until `count` requests through the VIP get answers that satisfy `ok`; returns them. */
function answersUntil(c: ScenarioContext, b: Built, what: string, ok: (answers: string[]) => boolean, count = 6, path = '/'): Promise<string[]> {
  return until(what, () => c.env.http(b.vip, b.port, count, path), ok);
}

const all = (name: string) => (answers: string[]) => answers.every((a) => a === name);
const names = (members: readonly MemberSpec[]) => members.map((m) => m.name);
/** Every request answered, all by the same member: what a source-IP hash gives one client. */
const oneOf = (members: readonly MemberSpec[]) => (answers: string[]) => names(members).includes(answers[0]!) && all(answers[0]!)(answers);
const spread = (members: readonly MemberSpec[]) => (answers: string[]) => answers.every((a) => names(members).includes(a)) && new Set(answers).size === members.length;
/** Nothing a member says gets through (refused, reset, timed out, or an error page of the proxy). */
const noneOf = (members: readonly MemberSpec[]) => (answers: string[]) => answers.every((a) => !names(members).includes(a));

async function update(c: ScenarioContext, b: Built, path: string, body: Obj): Promise<void> {
  await c.api.ok('PUT', path, body);
  await c.api.active(b.lbId);
}

async function statuses(c: ScenarioContext, b: Built): Promise<Record<string, string>> {
  return treeStatuses(await c.api.tree(b.lbId));
}

/** Waits until the status tree shows every `expected` entry (others may be anything). */
function statusesUntil(c: ScenarioContext, b: Built, expected: Record<string, string>, timeoutMs = 20_000): Promise<Record<string, string>> {
  const shown = (now: Record<string, string>) => Object.entries(expected).every(([k, v]) => now[k] === v);
  return until(`statuses ${JSON.stringify(expected)}`, () => statuses(c, b), shown, timeoutMs, 500);
}

/** The tree of a load balancer built with both TCP members and no health monitor, once ACTIVE. */
const SERVING_UNMONITORED = {
  loadbalancer: 'ACTIVE/ONLINE',
  'listener:l': 'ACTIVE/ONLINE',
  'pool:p': 'ACTIVE/ONLINE',
  'member:be1': 'ACTIVE/NO_MONITOR',
  'member:be2': 'ACTIVE/NO_MONITOR',
};

export const SCENARIOS: readonly Scenario[] = [
  {
    name: 'TCP load balancer, listener, pool and two members go ACTIVE and serve traffic',
    needs: [...TCP, SOURCE_IP],
    async run(c) {
      const b = await build(c, { protocol: 'TCP', algorithm: 'SOURCE_IP', members: c.env.tcpMembers });
      assert.deepEqual(await statuses(c, b), SERVING_UNMONITORED);
      for (const path of [`/loadbalancers/${b.lbId}`, `/listeners/${b.listenerId}`, `/pools/${b.poolId}`, ...Object.values(b.members).map((id) => `/pools/${b.poolId}/members/${id}`)]) {
        const [body] = Object.values(await c.api.ok('GET', path)) as Obj[];
        assert.equal(body!.provisioning_status, 'ACTIVE', path);
      }
      await answersUntil(c, b, 'one member to answer every request', oneOf(c.env.tcpMembers));
    },
  },
  {
    name: 'member, pool and listener admin state turn off and back on',
    needs: [...TCP, SOURCE_IP],
    async run(c) {
      const b = await build(c, { protocol: 'TCP', algorithm: 'SOURCE_IP', members: c.env.tcpMembers });
      const [serving] = await answersUntil(c, b, 'one member to answer', oneOf(c.env.tcpMembers));
      const other = c.env.tcpMembers.find((m) => m.name !== serving)!.name;
      const memberPath = `/pools/${b.poolId}/members/${b.members[serving!]}`;

      await update(c, b, memberPath, { member: { admin_state_up: false } });
      assert.equal((await statuses(c, b))[`member:${serving}`], 'ACTIVE/OFFLINE');
      await answersUntil(c, b, `only ${other} to answer once ${serving} is disabled`, all(other));
      await update(c, b, memberPath, { member: { admin_state_up: true } });
      assert.equal((await statuses(c, b))[`member:${serving}`], 'ACTIVE/NO_MONITOR');

      await update(c, b, `/pools/${b.poolId}`, { pool: { admin_state_up: false } });
      assert.equal((await c.api.ok('GET', `/pools/${b.poolId}`)).pool.operating_status, 'OFFLINE');
      await answersUntil(c, b, 'no member to answer while the pool is disabled', noneOf(c.env.tcpMembers), 2);
      await update(c, b, `/pools/${b.poolId}`, { pool: { admin_state_up: true } });
      await answersUntil(c, b, 'the pool to serve again', oneOf(c.env.tcpMembers));

      await update(c, b, `/listeners/${b.listenerId}`, { listener: { admin_state_up: false } });
      assert.equal((await c.api.ok('GET', `/listeners/${b.listenerId}`)).listener.operating_status, 'OFFLINE');
      await answersUntil(c, b, 'no answer while the listener is disabled', noneOf(c.env.tcpMembers), 2);
      await update(c, b, `/listeners/${b.listenerId}`, { listener: { admin_state_up: true } });
      await answersUntil(c, b, 'the listener to serve again', oneOf(c.env.tcpMembers));
      // The pool's status under a re-enabled listener is the health manager's to report: the next heartbeat, not the job, brings it.
      assert.deepEqual(await statusesUntil(c, b, SERVING_UNMONITORED), SERVING_UNMONITORED);
    },
  },
  {
    name: 'a member is added and another removed',
    needs: [...TCP, SOURCE_IP],
    async run(c) {
      const [first, second] = c.env.tcpMembers;
      const b = await build(c, { protocol: 'TCP', algorithm: 'SOURCE_IP', members: [first] });
      await answersUntil(c, b, `${first.name} to answer`, all(first.name));
      await c.api.ok('POST', `/pools/${b.poolId}/members`, { member: memberBody(second) });
      await c.api.active(b.lbId);
      assert.equal((await c.api.ok('GET', `/pools/${b.poolId}/members`)).members.length, 2);
      await c.api.ok('DELETE', `/pools/${b.poolId}/members/${b.members[first.name]}`);
      await c.api.active(b.lbId);
      await c.api.gone(`/pools/${b.poolId}/members/${b.members[first.name]}`);
      await answersUntil(c, b, `only ${second.name} to answer once ${first.name} is removed`, all(second.name));
    },
  },
  {
    name: 'TCP health monitor: created, members ONLINE, deleted',
    needs: [...TCP, SOURCE_IP, TCP_MONITOR],
    async run(c) {
      const b = await build(c, { protocol: 'TCP', algorithm: 'SOURCE_IP', members: c.env.tcpMembers });
      const hm = (await c.api.ok('POST', '/healthmonitors', { healthmonitor: { pool_id: b.poolId, name: 'hm', ...TCP_MONITOR_BODY } })).healthmonitor as Obj;
      await c.api.active(b.lbId);
      assert.equal((await c.api.ok('GET', `/healthmonitors/${hm.id}`)).healthmonitor.provisioning_status, 'ACTIVE');
      await statusesUntil(c, b, { 'pool:p': 'ACTIVE/ONLINE', 'healthmonitor:p': 'ACTIVE/ONLINE', 'member:be1': 'ACTIVE/ONLINE', 'member:be2': 'ACTIVE/ONLINE' });
      await c.api.ok('DELETE', `/healthmonitors/${hm.id}`);
      await c.api.active(b.lbId);
      await c.api.gone(`/healthmonitors/${hm.id}`);
      await statusesUntil(c, b, { 'member:be1': 'ACTIVE/NO_MONITOR', 'member:be2': 'ACTIVE/NO_MONITOR' });
      await answersUntil(c, b, 'the members to serve', oneOf(c.env.tcpMembers));
    },
  },
  {
    name: 'a TCP health monitor marks a member nothing answers for ERROR and the pool DEGRADED',
    needs: [...TCP, SOURCE_IP, TCP_MONITOR],
    async run(c) {
      const [live] = c.env.tcpMembers;
      const dead = c.env.closedMember;
      const b = await build(c, { protocol: 'TCP', algorithm: 'SOURCE_IP', members: [live, dead], healthmonitor: { name: 'hm', ...TCP_MONITOR_BODY } });
      await statusesUntil(c, b, { 'pool:p': 'ACTIVE/DEGRADED', [`member:${live.name}`]: 'ACTIVE/ONLINE', [`member:${dead.name}`]: 'ACTIVE/ERROR' });
      await answersUntil(c, b, `only ${live.name} to answer`, all(live.name));
    },
  },
  {
    name: 'UDP listener and pool spread datagrams over both members',
    needs: [need('listener.protocol', 'UDP'), need('pool.protocol', 'UDP'), need('pool.lb_algorithm', 'SOURCE_IP_PORT')],
    async run(c) {
      const udp = c.env.udp;
      assert.ok(udp, `the ${c.env.provider} environment has no UDP backends`);
      const b = await build(c, { protocol: 'UDP', algorithm: 'SOURCE_IP_PORT', members: udp.members });
      assert.equal((await statuses(c, b))['listener:l'], 'ACTIVE/ONLINE');
      await until('both UDP members to answer', () => udp.ask(b.vip, b.port, 12), spread(udp.members));
    },
  },
  {
    name: 'SOURCE_IP_PORT spreads TCP connections over both members',
    needs: [...TCP, need('pool.lb_algorithm', 'SOURCE_IP_PORT')],
    async run(c) {
      const b = await build(c, { protocol: 'TCP', algorithm: 'SOURCE_IP_PORT', members: c.env.tcpMembers });
      await answersUntil(c, b, 'both members to answer', spread(c.env.tcpMembers), 12);
    },
  },
  {
    name: 'SOURCE_IP session persistence keeps a client on one member',
    needs: [...TCP, SOURCE_IP, need('pool.session_persistence', 'SOURCE_IP')],
    async run(c) {
      const b = await build(c, { protocol: 'TCP', algorithm: 'SOURCE_IP', members: c.env.tcpMembers, pool: { session_persistence: { type: 'SOURCE_IP' } } });
      assert.equal((await c.api.ok('GET', `/pools/${b.poolId}`)).pool.session_persistence?.type, 'SOURCE_IP');
      await answersUntil(c, b, 'one member to answer every request', oneOf(c.env.tcpMembers), 8);
      await update(c, b, `/pools/${b.poolId}`, { pool: { session_persistence: null } });
      assert.equal((await c.api.ok('GET', `/pools/${b.poolId}`)).pool.session_persistence, null);
    },
  },
  {
    name: 'cascade delete removes the load balancer and everything under it',
    needs: [...TCP, SOURCE_IP, TCP_MONITOR],
    async run(c) {
      const b = await build(c, { protocol: 'TCP', algorithm: 'SOURCE_IP', members: c.env.tcpMembers, healthmonitor: { name: 'hm', ...TCP_MONITOR_BODY } });
      const hmId = (await c.api.tree(b.lbId)).listeners[0]!.pools[0]!.health_monitor!.id;
      await answersUntil(c, b, 'the members to serve', oneOf(c.env.tcpMembers));
      const r = await c.api.request('DELETE', `/loadbalancers/${b.lbId}?cascade=true`);
      assert.equal(r.statusCode, 204, r.body);
      assert.equal(await c.api.settled(b.lbId), 'DELETED');
      for (const path of [`/loadbalancers/${b.lbId}`, `/listeners/${b.listenerId}`, `/pools/${b.poolId}`, `/healthmonitors/${hmId}`]) await c.api.gone(path);
      await answersUntil(c, b, 'the VIP to stop answering', noneOf(c.env.tcpMembers), 2);
    },
  },
  {
    name: 'HTTP listener and pool serve requests',
    needs: [...HTTP, SOURCE_IP],
    async run(c) {
      const b = await build(c, { protocol: 'HTTP', algorithm: 'SOURCE_IP', members: c.env.tcpMembers });
      assert.equal((await statuses(c, b))['listener:l'], 'ACTIVE/ONLINE');
      await answersUntil(c, b, 'one member to answer every request', oneOf(c.env.tcpMembers));
    },
  },
  {
    name: 'ROUND_ROBIN alternates between both members',
    needs: [...TCP, need('pool.lb_algorithm', 'ROUND_ROBIN')],
    async run(c) {
      const b = await build(c, { protocol: 'TCP', algorithm: 'ROUND_ROBIN', members: c.env.tcpMembers });
      await answersUntil(c, b, 'both members to answer', spread(c.env.tcpMembers));
    },
  },
  {
    name: 'LEAST_CONNECTIONS serves through both members',
    needs: [...TCP, need('pool.lb_algorithm', 'LEAST_CONNECTIONS')],
    async run(c) {
      const b = await build(c, { protocol: 'TCP', algorithm: 'LEAST_CONNECTIONS', members: c.env.tcpMembers });
      assert.equal((await c.api.ok('GET', `/pools/${b.poolId}`)).pool.lb_algorithm, 'LEAST_CONNECTIONS');
      // One connection at a time: every member has none open, so each is chosen in turn.
      await answersUntil(c, b, 'both members to answer', spread(c.env.tcpMembers));
    },
  },
  {
    name: 'an HTTP health monitor marks a serving member ONLINE and a silent one ERROR',
    needs: [...HTTP, SOURCE_IP, need('healthmonitor.type', 'HTTP')],
    async run(c) {
      const [live] = c.env.tcpMembers;
      const dead = c.env.closedMember;
      const healthmonitor = { name: 'hm', type: 'HTTP', delay: 1, timeout: 1, max_retries: 1, max_retries_down: 1, url_path: '/', expected_codes: '200' };
      const b = await build(c, { protocol: 'HTTP', algorithm: 'SOURCE_IP', members: [live, dead], healthmonitor });
      await statusesUntil(c, b, { 'pool:p': 'ACTIVE/DEGRADED', [`member:${live.name}`]: 'ACTIVE/ONLINE', [`member:${dead.name}`]: 'ACTIVE/ERROR' });
      await answersUntil(c, b, `only ${live.name} to answer`, all(live.name));
    },
  },
  ...(['HTTP_COOKIE', 'APP_COOKIE'] as const).map(
    (type): Scenario => ({
      name: `${type} session persistence is configured and serves`,
      needs: [...HTTP, SOURCE_IP, need('pool.session_persistence', type)],
      async run(c) {
        const persistence = { type, ...(type === 'APP_COOKIE' ? { cookie_name: 'session' } : {}) };
        const b = await build(c, { protocol: 'HTTP', algorithm: 'SOURCE_IP', members: c.env.tcpMembers, pool: { session_persistence: persistence } });
        const shown = (await c.api.ok('GET', `/pools/${b.poolId}`)).pool.session_persistence as Obj;
        assert.deepEqual([shown.type, shown.cookie_name ?? undefined], [type, persistence.cookie_name]);
        await answersUntil(c, b, 'one member to answer every request', oneOf(c.env.tcpMembers));
      },
    }),
  ),
  {
    name: 'a TLS-terminating (TERMINATED_HTTPS) listener goes ACTIVE',
    needs: [need('listener.protocol', 'TERMINATED_HTTPS'), need('pool.protocol', 'HTTP'), SOURCE_IP],
    async run(c) {
      const listener = { protocol: 'TERMINATED_HTTPS', default_tls_container_ref: await c.env.tlsContainer() };
      const b = await build(c, { protocol: 'HTTP', algorithm: 'SOURCE_IP', members: c.env.tcpMembers, listener });
      assert.equal((await statuses(c, b))['listener:l'], 'ACTIVE/ONLINE');
      assert.equal((await c.api.ok('GET', `/listeners/${b.listenerId}`)).listener.protocol, 'TERMINATED_HTTPS');
    },
  },
  {
    name: 'an HTTPS (TLS passthrough) listener and pool go ACTIVE',
    needs: [need('listener.protocol', 'HTTPS'), need('pool.protocol', 'HTTPS'), SOURCE_IP],
    async run(c) {
      const b = await build(c, { protocol: 'HTTPS', algorithm: 'SOURCE_IP', members: c.env.tcpMembers });
      assert.deepEqual(await statuses(c, b), SERVING_UNMONITORED);
    },
  },
  ...(['PROXY', 'PROXYV2'] as const).map(
    (protocol): Scenario => ({
      name: `a ${protocol} pool behind a TCP listener goes ACTIVE`,
      needs: [need('listener.protocol', 'TCP'), need('pool.protocol', protocol), SOURCE_IP],
      async run(c) {
        const b = await build(c, { protocol: 'TCP', algorithm: 'SOURCE_IP', members: c.env.tcpMembers, pool: { protocol } });
        assert.equal((await c.api.ok('GET', `/pools/${b.poolId}`)).pool.protocol, protocol);
        assert.equal((await statuses(c, b))['pool:p'], 'ACTIVE/ONLINE');
      },
    }),
  ),
  {
    name: 'a PROMETHEUS listener goes ACTIVE',
    needs: [...TCP, SOURCE_IP, need('listener.protocol', 'PROMETHEUS')],
    async run(c) {
      const b = await build(c, { protocol: 'TCP', algorithm: 'SOURCE_IP', members: c.env.tcpMembers });
      await c.api.ok('POST', '/listeners', { listener: { name: 'metrics', loadbalancer_id: b.lbId, protocol: 'PROMETHEUS', protocol_port: c.env.listenerPort() } });
      await c.api.active(b.lbId);
      assert.equal((await statuses(c, b))['listener:metrics'], 'ACTIVE/ONLINE');
    },
  },
  ...(['HTTPS', 'PING', 'TLS-HELLO'] as const).map(
    (type): Scenario => ({
      name: `a ${type} health monitor is created and deleted`,
      needs: [...TCP, SOURCE_IP, need('healthmonitor.type', type)],
      async run(c) {
        const b = await build(c, { protocol: 'TCP', algorithm: 'SOURCE_IP', members: c.env.tcpMembers });
        const hm = (await c.api.ok('POST', '/healthmonitors', { healthmonitor: { pool_id: b.poolId, name: 'hm', ...TCP_MONITOR_BODY, type } })).healthmonitor as Obj;
        await c.api.active(b.lbId);
        const shown = (await c.api.ok('GET', `/healthmonitors/${hm.id}`)).healthmonitor as Obj;
        assert.deepEqual([shown.type, shown.provisioning_status], [type, 'ACTIVE']);
        await c.api.ok('DELETE', `/healthmonitors/${hm.id}`);
        await c.api.active(b.lbId);
        await c.api.gone(`/healthmonitors/${hm.id}`);
      },
    }),
  ),
  {
    name: 'an SCTP health monitor on an SCTP pool is created and deleted',
    needs: [need('listener.protocol', 'SCTP'), need('pool.protocol', 'SCTP'), SOURCE_IP, need('healthmonitor.type', 'SCTP')],
    async run(c) {
      const b = await build(c, { protocol: 'SCTP', algorithm: 'SOURCE_IP', members: c.env.tcpMembers });
      const hm = (await c.api.ok('POST', '/healthmonitors', { healthmonitor: { pool_id: b.poolId, name: 'hm', ...TCP_MONITOR_BODY, delay: 5, type: 'SCTP' } })).healthmonitor as Obj;
      await c.api.active(b.lbId);
      assert.equal((await c.api.ok('GET', `/healthmonitors/${hm.id}`)).healthmonitor.provisioning_status, 'ACTIVE');
      await c.api.ok('DELETE', `/healthmonitors/${hm.id}`);
      await c.api.active(b.lbId);
      await c.api.gone(`/healthmonitors/${hm.id}`);
    },
  },
  {
    name: 'an L7 policy and its rule route a path to another pool, through update and delete',
    needs: [...HTTP, SOURCE_IP, ...['create', 'update', 'delete'].flatMap((v) => [need('l7policy', v), need('l7rule', v)])],
    async run(c) {
      const [first, second] = c.env.tcpMembers;
      const b = await build(c, { protocol: 'HTTP', algorithm: 'SOURCE_IP', members: [first] });
      const other = (await c.api.ok('POST', '/pools', { pool: { name: 'p2', loadbalancer_id: b.lbId, protocol: 'HTTP', lb_algorithm: 'SOURCE_IP' } })).pool as Obj;
      await c.api.active(b.lbId);
      await c.api.ok('POST', `/pools/${other.id}/members`, { member: memberBody(second) });
      await c.api.active(b.lbId);
      const policy = (await c.api.ok('POST', '/l7policies', { l7policy: { listener_id: b.listenerId, action: 'REDIRECT_TO_POOL', redirect_pool_id: other.id } })).l7policy as Obj;
      await c.api.active(b.lbId);
      const rule = (await c.api.ok('POST', `/l7policies/${policy.id}/rules`, { rule: { type: 'PATH', compare_type: 'STARTS_WITH', value: '/two' } })).rule as Obj;
      await c.api.active(b.lbId);
      await answersUntil(c, b, `/two to reach ${second.name}`, all(second.name), 3, '/two');
      await answersUntil(c, b, `/ to reach ${first.name}`, all(first.name), 3, '/');

      await update(c, b, `/l7policies/${policy.id}/rules/${rule.id}`, { rule: { value: '/deux' } });
      await answersUntil(c, b, `/deux to reach ${second.name}`, all(second.name), 3, '/deux');
      await answersUntil(c, b, `/two to reach ${first.name} again`, all(first.name), 3, '/two');
      await update(c, b, `/l7policies/${policy.id}`, { l7policy: { admin_state_up: false } });
      await answersUntil(c, b, `/deux to reach ${first.name} with the policy disabled`, all(first.name), 3, '/deux');

      await c.api.ok('DELETE', `/l7policies/${policy.id}/rules/${rule.id}`);
      await c.api.active(b.lbId);
      await c.api.gone(`/l7policies/${policy.id}/rules/${rule.id}`);
      await c.api.ok('DELETE', `/l7policies/${policy.id}`);
      await c.api.active(b.lbId);
      await c.api.gone(`/l7policies/${policy.id}`);
    },
  },
  {
    name: 'allowed_cidrs admit the client, then refuse it',
    needs: [...TCP, SOURCE_IP, need('listener.allowed_cidrs', 'present')],
    async run(c) {
      const b = await build(c, { protocol: 'TCP', algorithm: 'SOURCE_IP', members: c.env.tcpMembers, listener: { allowed_cidrs: [c.env.clientCidr] } });
      await answersUntil(c, b, 'the client to be served', oneOf(c.env.tcpMembers));
      await update(c, b, `/listeners/${b.listenerId}`, { listener: { allowed_cidrs: ['192.0.2.0/24'] } });
      assert.deepEqual((await c.api.ok('GET', `/listeners/${b.listenerId}`)).listener.allowed_cidrs, ['192.0.2.0/24']);
      await answersUntil(c, b, 'the client to be refused', noneOf(c.env.tcpMembers), 2);
    },
  },
  {
    name: 'a member monitored on another address and port follows that monitor',
    needs: [...TCP, SOURCE_IP, TCP_MONITOR, need('member.monitor_address_or_port', 'present')],
    async run(c) {
      const [watched, plain] = c.env.tcpMembers;
      const dead = c.env.closedMember;
      const b = await build(c, {
        protocol: 'TCP',
        algorithm: 'SOURCE_IP',
        members: c.env.tcpMembers,
        memberExtras: { [watched.name]: { monitor_address: dead.address, monitor_port: dead.port } },
        healthmonitor: { name: 'hm', ...TCP_MONITOR_BODY },
      });
      await statusesUntil(c, b, { [`member:${watched.name}`]: 'ACTIVE/ERROR', [`member:${plain.name}`]: 'ACTIVE/ONLINE', 'pool:p': 'ACTIVE/DEGRADED' });
      await answersUntil(c, b, `only ${plain.name} to answer`, all(plain.name));
    },
  },
  {
    name: 'load balancer failover keeps it serving',
    needs: [...TCP, SOURCE_IP, need('loadbalancer.failover', 'failover')],
    async run(c) {
      const b = await build(c, { protocol: 'TCP', algorithm: 'SOURCE_IP', members: c.env.tcpMembers });
      await answersUntil(c, b, 'the members to serve', oneOf(c.env.tcpMembers));
      const r = await c.api.request('PUT', `/loadbalancers/${b.lbId}/failover`);
      assert.equal(r.statusCode, 202, r.body);
      await c.api.active(b.lbId);
      await answersUntil(c, b, 'the members to serve after the failover', oneOf(c.env.tcpMembers));
    },
  },
  {
    name: 'a member batch update with monitor options replaces the members',
    needs: [...TCP, SOURCE_IP, need('member.batch_monitor_options', 'present')],
    async run(c) {
      const [first, second] = c.env.tcpMembers;
      const b = await build(c, { protocol: 'TCP', algorithm: 'SOURCE_IP', members: [first] });
      const r = await c.api.request('PUT', `/pools/${b.poolId}/members`, { members: [memberBody(first), memberBody(second, { monitor_port: second.port })] });
      assert.equal(r.statusCode, 202, r.body);
      await c.api.active(b.lbId);
      const members = (await c.api.ok('GET', `/pools/${b.poolId}/members`)).members as Obj[];
      assert.deepEqual(members.map((m) => [m.name, m.monitor_port]).sort(), [[first.name, null], [second.name, second.port]]);
      await answersUntil(c, b, 'the members to serve', oneOf(c.env.tcpMembers));
    },
  },
  {
    name: 'a member of the other IP family than the VIP serves',
    needs: [...TCP, SOURCE_IP, need('member.ip_version', 'mixed')],
    async run(c) {
      const v6 = c.env.ipv6Member;
      assert.ok(v6, `the ${c.env.provider} environment has no IPv6 backend`);
      const b = await build(c, { protocol: 'TCP', algorithm: 'SOURCE_IP', members: [v6] });
      await answersUntil(c, b, `${v6.name} to answer`, all(v6.name));
    },
  },
  {
    name: 'flavor capabilities are listed',
    needs: [need('flavor', 'capabilities')],
    async run(c) {
      const caps = (await c.api.ok('GET', `/providers/${c.env.provider}/flavor_capabilities`)).flavor_capabilities as Obj[];
      assert.ok(Array.isArray(caps) && caps.every((x) => typeof x.name === 'string'), JSON.stringify(caps));
    },
  },
  {
    name: 'a flavor profile is validated',
    needs: [need('flavor', 'validate')],
    async run(c) {
      const profile = (await c.api.ok('POST', '/flavorprofiles', { flavorprofile: { name: c.name, provider_name: c.env.provider, flavor_data: '{}' } })).flavorprofile as Obj;
      await c.api.ok('DELETE', `/flavorprofiles/${profile.id}`);
    },
  },
  {
    name: 'availability zone capabilities are listed',
    needs: [need('availability_zone', 'capabilities')],
    async run(c) {
      const caps = (await c.api.ok('GET', `/providers/${c.env.provider}/availability_zone_capabilities`)).availability_zone_capabilities as Obj[];
      assert.ok(Array.isArray(caps) && caps.every((x) => typeof x.name === 'string'), JSON.stringify(caps));
    },
  },
  {
    name: 'an availability zone profile is validated',
    needs: [need('availability_zone', 'validate')],
    async run(c) {
      const body = { availability_zone_profile: { name: c.name, provider_name: c.env.provider, availability_zone_data: '{}' } };
      const profile = (await c.api.ok('POST', '/availabilityzoneprofiles', body)).availability_zone_profile as Obj;
      await c.api.ok('DELETE', `/availabilityzoneprofiles/${profile.id}`);
    },
  },
];

/** A load balancer of the provider with a TCP listener and pool and one member: what probes refer to. */
export interface ProbeBase {
  lbId: string;
  listenerId: string;
  poolId: string;
  member: MemberSpec;
  env: ProviderEnv;
  /** A UDP pool on the load balancer, for monitor types only such pools take (made on first use). */
  udpPool(): Promise<string>;
}

export async function buildProbeBase(c: ScenarioContext): Promise<ProbeBase> {
  const b = await build(c, { protocol: 'TCP', algorithm: 'SOURCE_IP', members: [c.env.tcpMembers[0]] });
  let udpPool: Promise<string> | undefined;
  const makeUdpPool = async () => {
    const pool = (await c.api.ok('POST', '/pools', { pool: { name: 'udp', loadbalancer_id: b.lbId, protocol: 'UDP', lb_algorithm: 'SOURCE_IP' } })).pool as Obj;
    await c.api.active(b.lbId);
    return pool.id as string;
  };
  return { lbId: b.lbId, listenerId: b.listenerId, poolId: b.poolId, member: c.env.tcpMembers[0], env: c.env, udpPool: () => (udpPool ??= makeUdpPool()) };
}

type Probe = (api: Api, base: ProbeBase, value: string, port: number) => Promise<LightMyRequestResponse>;

/** Monitor types the API takes for UDP and SCTP pools only. */
const UDP_POOL_ONLY_MONITORS: readonly string[] = ['UDP-CONNECT', 'SCTP'];
const PATH_RULE = { type: 'PATH', compare_type: 'STARTS_WITH', value: '/probe' };

/**
 * For each feature, the smallest API call that asks for `value` of it, on the probe base: what a
 * provider that refuses (feature, value) must answer with its 501. Updates and deletes of L7
 * objects have none: they need an L7 policy, which such a provider does not let exist.
 */
export const PROBES: Readonly<Record<string, Probe>> = {
  'listener.protocol': async (api, base, value, port) => {
    const tls = value === 'TERMINATED_HTTPS' ? { default_tls_container_ref: await base.env.tlsContainer() } : {};
    return api.request('POST', '/listeners', { listener: { loadbalancer_id: base.lbId, protocol: value, protocol_port: port, ...tls } });
  },
  'pool.protocol': (api, base, value) => api.request('POST', '/pools', { pool: { loadbalancer_id: base.lbId, protocol: value, lb_algorithm: 'SOURCE_IP' } }),
  'pool.lb_algorithm': (api, base, value) => api.request('POST', '/pools', { pool: { loadbalancer_id: base.lbId, protocol: 'TCP', lb_algorithm: value } }),
  'pool.session_persistence': (api, base, value) =>
    api.request('POST', '/pools', { pool: { loadbalancer_id: base.lbId, protocol: 'TCP', lb_algorithm: 'SOURCE_IP', session_persistence: { type: value, ...(value === 'APP_COOKIE' ? { cookie_name: 'c' } : {}) } } }),
  'healthmonitor.type': async (api, base, value) => {
    const poolId = UDP_POOL_ONLY_MONITORS.includes(value) ? await base.udpPool() : base.poolId;
    return api.request('POST', '/healthmonitors', { healthmonitor: { pool_id: poolId, ...TCP_MONITOR_BODY, delay: 5, type: value } });
  },
  'listener.allowed_cidrs': (api, base, _value, port) => api.request('POST', '/listeners', { listener: { loadbalancer_id: base.lbId, protocol: 'TCP', protocol_port: port, allowed_cidrs: ['192.0.2.0/24'] } }),
  'member.monitor_address_or_port': (api, base, _value, port) =>
    api.request('POST', `/pools/${base.poolId}/members`, { member: { ...memberBody(base.member), name: 'probe', protocol_port: port, monitor_port: base.member.port } }),
  'member.ip_version': (api, base) => api.request('POST', `/pools/${base.poolId}/members`, { member: { name: 'probe', address: '2001:db8::5', protocol_port: 80 } }),
  'member.batch_monitor_options': (api, base) => api.request('PUT', `/pools/${base.poolId}/members`, { members: [{ ...memberBody(base.member), monitor_port: base.member.port }] }),
  'loadbalancer.failover': (api, base) => api.request('PUT', `/loadbalancers/${base.lbId}/failover`),
  l7policy: (api, base, value) => {
    assert.equal(value, 'create', 'only creating an L7 policy can be probed');
    return api.request('POST', '/l7policies', { l7policy: { listener_id: base.listenerId, action: 'REJECT' } });
  },
  // A rule given with its policy is checked before the policy is.
  l7rule: (api, base, value) => {
    assert.equal(value, 'create', 'only creating an L7 rule can be probed');
    return api.request('POST', '/l7policies', { l7policy: { listener_id: base.listenerId, action: 'REJECT', rules: [PATH_RULE] } });
  },
  flavor: (api, base, value) =>
    value === 'capabilities'
      ? api.request('GET', `/providers/${base.env.provider}/flavor_capabilities`)
      : api.request('POST', '/flavorprofiles', { flavorprofile: { name: 'probe', provider_name: base.env.provider, flavor_data: '{}' } }),
  availability_zone: (api, base, value) =>
    value === 'capabilities'
      ? api.request('GET', `/providers/${base.env.provider}/availability_zone_capabilities`)
      : api.request('POST', '/availabilityzoneprofiles', { availability_zone_profile: { name: 'probe', provider_name: base.env.provider, availability_zone_data: '{}' } }),
};

/** Whether PROBES can ask for (feature, value) through the API. */
export const probeable = (n: Need) => n.feature in PROBES && !(['l7policy', 'l7rule'].includes(n.feature) && n.value !== 'create');

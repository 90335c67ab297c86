/**
 * End to end with the real `openstack` CLI (python-openstackclient 6 + octaviaclient 3.1)
 * against a real `ostia up`: every resource type through create/list/show/set/unset/delete,
 * as admin, as members of two projects and as a reader. Independent lifecycles run side by
 * side (each CLI call is a ~1 s Python start-up); steps within one lifecycle run in order, each
 * awaiting the resources it uses (made once, by whichever step asks first), so a step that fails
 * leaves the next ones their setup.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startOstia, type OstiaProcess } from './support/ostia-process.js';
import { unmet } from './support/requirements.js';
import { OpenstackCli, waitActive } from './support/openstack-cli.js';
import { madeOnce } from './support/made-once.js';

const ADMIN = 'ostia';
const DEMO = 'ostia-demo';
const ALT = 'ostia-alt';
const READER = 'ostia-reader';

type Obj = Record<string, unknown>;

/** octaviaclient prints lists of ids/tags as one newline-joined string. */
function lines(value: unknown): string[] {
  return typeof value === 'string' && value !== '' ? value.split('\n').sort() : [];
}

/** octaviaclient prints dicts (session_persistence, insert_headers) as `k=v` lines. */
function keyValues(value: unknown): Record<string, string> {
  return Object.fromEntries(lines(value).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
}

const FORBIDDEN = /Policy does not allow this request to be performed\. \(HTTP 403\)/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/;

describe('openstack CLI against ostia up', { skip: unmet('openstack-cli'), concurrency: 4 }, () => {
  let ostia: OstiaProcess;
  let cli: OpenstackCli;
  const subnets: Record<string, string> = {};

  const show = (cloud: string, args: string[]) => cli.json<Obj>(cloud, args);
  const list = (cloud: string, args: string[]) => cli.json<Obj[]>(cloud, args);

  /** Straight to the API with the cloud's token, for what the CLI cannot express or hides. */
  const tokens = new Map<string, Promise<string>>();
  async function api(cloud: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: Obj }> {
    if (!tokens.has(cloud)) tokens.set(cloud, ostia.token(cloud));
    const res = await fetch(`${ostia.url}${path}`, {
      method,
      headers: { 'x-auth-token': await tokens.get(cloud)!, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Obj) : {} };
  }

  before(async () => {
    ostia = await startOstia();
    cli = new OpenstackCli(ostia.cloudsYaml, { concurrency: 4 });
    for (const name of ['public-subnet', 'private-subnet']) subnets[name] = await ostia.subnetId(name);
  });

  after(async () => {
    if (cli) {
      const slowest = [...cli.calls].sort((a, b) => b.ms - a.ms).slice(0, 5);
      const total = cli.calls.reduce((s, c) => s + c.ms, 0);
      console.log(`# ${cli.calls.length} openstack calls, ${(total / 1000).toFixed(1)} s of CLI time; slowest: ${slowest.map((c) => `${c.ms} ms ${c.command}`).join(' | ')}`);
    }
    await ostia?.stop();
  });

  describe('load balancer lifecycle as admin', { concurrency: 1 }, () => {
    const created = madeOnce(async () => {
      const a = await show(ADMIN, ['loadbalancer', 'create', '--name', 'cli-lb-a', '--description', 'first', '--vip-subnet-id', 'public-subnet', '--tag', 'blue', '--tag', 'red', '--wait']);
      const b = await show(ADMIN, ['loadbalancer', 'create', '--name', 'cli-lb-b', '--vip-subnet-id', subnets['public-subnet']!, '--disable', '--wait']);
      return { a, b };
    });

    it('creates with --wait by subnet name and by subnet id', async () => {
      const { a, b } = await created();
      assert.equal(a.name, 'cli-lb-a');
      assert.equal(a.description, 'first');
      assert.equal(a.provisioning_status, 'ACTIVE');
      assert.equal(a.admin_state_up, true);
      assert.equal(a.provider, 'noop');
      assert.equal(a.vip_subnet_id, subnets['public-subnet']);
      assert.match(String(a.vip_address), /^127\.16\./);
      assert.match(String(a.id), UUID);
      assert.match(String(a.vip_port_id), UUID);
      assert.match(String(a.created_at), TIMESTAMP);
      assert.deepEqual(lines(a.tags), ['blue', 'red']);
      assert.deepEqual(lines(a.listeners), []);
      assert.equal(a.flavor_id, null);
      assert.equal(a.availability_zone, null);

      assert.equal(b.provisioning_status, 'ACTIVE');
      assert.equal(b.admin_state_up, false);
      assert.equal(b.vip_subnet_id, subnets['public-subnet']);
      assert.equal(b.description, '');
      assert.deepEqual(lines(b.tags), []);
      assert.notEqual(b.vip_address, a.vip_address);
    });

    it('lists with --name, --provisioning-status, --enable/--disable and tag filters', async () => {
      const { a, b } = await created();
      const byName = await list(ADMIN, ['loadbalancer', 'list', '--name', 'cli-lb-a']);
      assert.equal(byName.length, 1);
      assert.deepEqual(Object.keys(byName[0]!).sort(), ['id', 'name', 'operating_status', 'project_id', 'provider', 'provisioning_status', 'vip_address']);
      assert.equal(byName[0]!.id, a.id);
      assert.equal(byName[0]!.vip_address, a.vip_address);

      const ids = (rows: Obj[]) => rows.map((r) => r.id);
      const active = await list(ADMIN, ['loadbalancer', 'list', '--provisioning-status', 'ACTIVE']);
      assert.ok(ids(active).includes(a.id) && ids(active).includes(b.id));
      assert.ok(active.every((r) => r.provisioning_status === 'ACTIVE'));

      const disabled = ids(await list(ADMIN, ['loadbalancer', 'list', '--disable']));
      assert.ok(disabled.includes(b.id) && !disabled.includes(a.id));

      assert.deepEqual(ids(await list(ADMIN, ['loadbalancer', 'list', '--tags', 'blue,red'])), [a.id]);
      assert.deepEqual(ids(await list(ADMIN, ['loadbalancer', 'list', '--any-tags', 'green,red'])), [a.id]);
      const notBlue = ids(await list(ADMIN, ['loadbalancer', 'list', '--not-tags', 'blue']));
      assert.ok(notBlue.includes(b.id) && !notBlue.includes(a.id));
      const noneOf = ids(await list(ADMIN, ['loadbalancer', 'list', '--not-any-tags', 'red,green']));
      assert.ok(noneOf.includes(b.id) && !noneOf.includes(a.id));
    });

    it('shows by name and by id with the same fields', async () => {
      const { a } = await created();
      const byName = await show(ADMIN, ['loadbalancer', 'show', 'cli-lb-a']);
      const byId = await show(ADMIN, ['loadbalancer', 'show', String(a.id)]);
      assert.deepEqual(byName, byId);
      assert.equal(byId.id, a.id);
      assert.equal(byId.vip_address, a.vip_address);
      assert.deepEqual(lines(byId.tags), ['blue', 'red']);
    });

    it('the installed openstack binary, run as a user runs it, prints what the in-process runner prints, success and failure', async () => {
      const { a } = await created();
      const args = ['loadbalancer', 'show', String(a.id), '-f', 'json'];
      const [own, inRunner] = await Promise.all([cli.binary(ADMIN, args), cli.run(ADMIN, args)]);
      assert.equal(own.code, 0, own.stderr);
      assert.deepEqual(JSON.parse(own.stdout), JSON.parse(inRunner.stdout));
      const missing = ['loadbalancer', 'show', 'no-such-lb'];
      const [ownMiss, runnerMiss] = await Promise.all([cli.binary(ADMIN, missing), cli.run(ADMIN, missing)]);
      assert.equal(ownMiss.code, 1);
      assert.equal(runnerMiss.code, ownMiss.code);
      assert.equal(runnerMiss.stderr.trim(), ownMiss.stderr.trim());
      const usage = ['loadbalancer', 'create', '--no-such-flag'];
      const [ownUsage, runnerUsage] = await Promise.all([cli.binary(ADMIN, usage), cli.run(ADMIN, usage)]);
      assert.equal(runnerUsage.code, ownUsage.code);
      assert.notEqual(ownUsage.code, 0);
    });

    it('sets and unsets name, description, admin state and tags', async () => {
      // A load balancer of its own, so the filters and names the other steps check stay as they made them.
      const c = await show(ADMIN, ['loadbalancer', 'create', '--name', 'cli-lb-c', '--description', 'first', '--vip-subnet-id', 'public-subnet', '--tag', 'cyan', '--tag', 'magenta', '--wait']);
      await cli.ok(ADMIN, ['loadbalancer', 'set', 'cli-lb-c', '--name', 'cli-lb-c2', '--description', 'changed', '--tag', 'yellow', '--disable', '--wait']);
      let lb = await show(ADMIN, ['loadbalancer', 'show', String(c.id)]);
      assert.equal(lb.name, 'cli-lb-c2');
      assert.equal(lb.description, 'changed');
      assert.equal(lb.admin_state_up, false);
      assert.equal(lb.provisioning_status, 'ACTIVE');
      assert.deepEqual(lines(lb.tags), ['cyan', 'magenta', 'yellow']);
      assert.match(String(lb.updated_at), TIMESTAMP);

      await cli.ok(ADMIN, ['loadbalancer', 'set', 'cli-lb-c2', '--no-tag', '--tag', 'only', '--enable', '--wait']);
      lb = await show(ADMIN, ['loadbalancer', 'show', 'cli-lb-c2']);
      assert.deepEqual(lines(lb.tags), ['only']);
      assert.equal(lb.admin_state_up, true);

      await cli.ok(ADMIN, ['loadbalancer', 'unset', 'cli-lb-c2', '--description', '--all-tag', '--wait']);
      lb = await show(ADMIN, ['loadbalancer', 'show', 'cli-lb-c2']);
      assert.equal(lb.description, '');
      assert.deepEqual(lines(lb.tags), []);
      assert.equal(lb.name, 'cli-lb-c2');
    });

    it('shows stats and the status tree', async () => {
      const { a } = await created();
      const stats = await show(ADMIN, ['loadbalancer', 'stats', 'show', 'cli-lb-a']);
      assert.deepEqual(stats, { active_connections: 0, bytes_in: 0, bytes_out: 0, request_errors: 0, total_connections: 0 });
      // `status show` is not a formatter command: it always prints the tree as JSON.
      const tree = JSON.parse((await cli.ok(ADMIN, ['loadbalancer', 'status', 'show', 'cli-lb-a'])).stdout) as { loadbalancer: Obj };
      assert.equal(tree.loadbalancer.id, a.id);
      assert.equal(tree.loadbalancer.name, 'cli-lb-a');
      assert.equal(tree.loadbalancer.provisioning_status, 'ACTIVE');
      assert.deepEqual(tree.loadbalancer.listeners, []);
    });

    it('deletes with --wait, after which show reports it missing', async () => {
      const { a, b } = await created();
      await cli.ok(ADMIN, ['loadbalancer', 'delete', 'cli-lb-b', '--wait']);
      assert.match(await cli.fails(ADMIN, ['loadbalancer', 'show', String(b.id)]), /Unable to locate|not found/i);
      await cli.ok(ADMIN, ['loadbalancer', 'delete', String(a.id), '--wait']);
      const left = (await list(ADMIN, ['loadbalancer', 'list'])).map((r) => r.id);
      assert.ok(!left.includes(a.id) && !left.includes(b.id));
    });
  });

  describe('listener, pool, member, health monitor, L7 lifecycle as a project member', { concurrency: 1 }, () => {
    const treeLb = madeOnce(async () => {
      const lb = await show(DEMO, ['loadbalancer', 'create', '--name', 'cli-tree', '--vip-subnet-id', 'public-subnet', '--wait']);
      const listener = await show(DEMO, ['loadbalancer', 'listener', 'create', 'cli-tree', '--name', 'web', '--protocol', 'HTTP', '--protocol-port', '80', '--insert-headers', 'X-Forwarded-For=true', '--tag', 'edge', '--wait']);
      return { lb, listener };
    });
    const pool1 = madeOnce(async () => {
      await treeLb();
      return show(DEMO, ['loadbalancer', 'pool', 'create', '--listener', 'web', '--name', 'pool1', '--protocol', 'HTTP', '--lb-algorithm', 'ROUND_ROBIN', '--session-persistence', 'type=APP_COOKIE,cookie_name=sess', '--wait']);
    });
    const members = madeOnce(async () => {
      await pool1();
      const m1 = await show(DEMO, ['loadbalancer', 'member', 'create', 'pool1', '--name', 'm1', '--address', '127.32.0.21', '--protocol-port', '8080', '--subnet-id', 'private-subnet', '--weight', '5', '--wait']);
      const m2 = await show(DEMO, ['loadbalancer', 'member', 'create', 'pool1', '--name', 'm2', '--address', '127.32.0.22', '--protocol-port', '8080', '--wait']);
      return { m1, m2 };
    });
    const monitor = madeOnce(async () => {
      await pool1();
      return show(DEMO, ['loadbalancer', 'healthmonitor', 'create', 'pool1', '--name', 'hm1', '--delay', '5', '--timeout', '3', '--max-retries', '2', '--type', 'HTTP', '--url-path', '/healthz', '--expected-codes', '200,204', '--wait']);
    });
    const policy1 = madeOnce(async () => {
      await treeLb();
      return show(DEMO, ['loadbalancer', 'l7policy', 'create', 'web', '--name', 'pol1', '--action', 'REDIRECT_TO_URL', '--redirect-url', 'http://example.com/', '--wait']);
    });
    /** The rule as `l7rule create` printed it. */
    const rule1 = madeOnce(async () => {
      const { lb } = await treeLb();
      await policy1();
      // octaviaclient 3.1's `l7rule create --wait` re-reads the rule with policy and rule ids
      // swapped (GET /l7policies/<rule>/rules/<policy> → 404), so wait here instead.
      const rule = await show(DEMO, ['loadbalancer', 'l7rule', 'create', 'pol1', '--type', 'PATH', '--compare-type', 'STARTS_WITH', '--value', '/api']);
      await waitActive(cli, DEMO, String(lb.id));
      return rule;
    });

    it('creates the load balancer and an HTTP listener', async () => {
      const { lb, listener } = await treeLb();
      assert.equal(lb.provisioning_status, 'ACTIVE');
      assert.equal(listener.name, 'web');
      assert.equal(listener.protocol, 'HTTP');
      assert.equal(listener.protocol_port, 80);
      assert.equal(listener.provisioning_status, 'ACTIVE');
      assert.equal(listener.connection_limit, -1);
      assert.equal(listener.default_pool_id, null);
      assert.deepEqual(lines(listener.loadbalancers), [lb.id]);
      assert.deepEqual(keyValues(listener.insert_headers), { 'X-Forwarded-For': 'true' });
      assert.deepEqual(lines(listener.tags), ['edge']);
      assert.equal(listener.timeout_client_data, 50000);
      assert.equal(listener.timeout_member_connect, 5000);
      assert.equal(listener.timeout_member_data, 50000);
      assert.equal(listener.timeout_tcp_inspect, 0);
      assert.equal(listener.project_id, lb.project_id);
    });

    it('lists, shows, sets and unsets the listener', async () => {
      const { listener } = await treeLb();
      const rows = await list(DEMO, ['loadbalancer', 'listener', 'list', '--loadbalancer', 'cli-tree']);
      assert.deepEqual(rows.map((r) => [r.id, r.name, r.protocol, r.protocol_port, r.admin_state_up]), [[listener.id, 'web', 'HTTP', 80, true]]);
      assert.deepEqual(await list(DEMO, ['loadbalancer', 'listener', 'list', '--tags', 'nope']), []);
      assert.equal((await show(DEMO, ['loadbalancer', 'listener', 'show', 'web'])).id, listener.id);

      await cli.ok(DEMO, ['loadbalancer', 'listener', 'set', 'web', '--connection-limit', '100', '--description', 'front door', '--timeout-client-data', '1000', '--wait']);
      let l = await show(DEMO, ['loadbalancer', 'listener', 'show', String(listener.id)]);
      assert.equal(l.connection_limit, 100);
      assert.equal(l.description, 'front door');
      assert.equal(l.timeout_client_data, 1000);
      assert.equal(l.provisioning_status, 'ACTIVE');

      await cli.ok(DEMO, ['loadbalancer', 'listener', 'unset', 'web', '--connection-limit', '--description', '--timeout-client-data', '--wait']);
      l = await show(DEMO, ['loadbalancer', 'listener', 'show', 'web']);
      assert.equal(l.connection_limit, -1);
      assert.equal(l.description, '');
      assert.equal(l.timeout_client_data, 50000);
    });

    it('creates a pool as the listener default and changes it', async () => {
      const { lb, listener } = await treeLb();
      const pool = await pool1();
      assert.equal(pool.name, 'pool1');
      assert.equal(pool.protocol, 'HTTP');
      assert.equal(pool.lb_algorithm, 'ROUND_ROBIN');
      assert.equal(pool.provisioning_status, 'ACTIVE');
      assert.equal(pool.healthmonitor_id, null);
      assert.deepEqual(lines(pool.listeners), [listener.id]);
      assert.deepEqual(lines(pool.loadbalancers), [lb.id]);
      assert.deepEqual(lines(pool.members), []);
      const sp = keyValues(pool.session_persistence);
      assert.equal(sp.type, 'APP_COOKIE');
      assert.equal(sp.cookie_name, 'sess');
      assert.equal(pool.tls_enabled, false);

      assert.equal((await show(DEMO, ['loadbalancer', 'listener', 'show', 'web'])).default_pool_id, pool.id);
      const rows = await list(DEMO, ['loadbalancer', 'pool', 'list', '--loadbalancer', 'cli-tree']);
      assert.deepEqual(rows.map((r) => [r.id, r.name, r.protocol, r.lb_algorithm]), [[pool.id, 'pool1', 'HTTP', 'ROUND_ROBIN']]);

      await cli.ok(DEMO, ['loadbalancer', 'pool', 'set', 'pool1', '--lb-algorithm', 'LEAST_CONNECTIONS', '--description', 'app servers', '--tag', 'app', '--wait']);
      let p = await show(DEMO, ['loadbalancer', 'pool', 'show', 'pool1']);
      assert.equal(p.lb_algorithm, 'LEAST_CONNECTIONS');
      assert.equal(p.description, 'app servers');
      assert.deepEqual(lines(p.tags), ['app']);

      await cli.ok(DEMO, ['loadbalancer', 'pool', 'unset', 'pool1', '--description', '--session-persistence', '--all-tag', '--wait']);
      p = await show(DEMO, ['loadbalancer', 'pool', 'show', String(pool.id)]);
      assert.equal(p.description, '');
      assert.equal(p.session_persistence, null);
      assert.deepEqual(lines(p.tags), []);
    });

    it('creates, lists, sets and unsets members', async () => {
      const { m1, m2 } = await members();
      assert.equal(m1.name, 'm1');
      assert.equal(m1.address, '127.32.0.21');
      assert.equal(m1.protocol_port, 8080);
      assert.equal(m1.weight, 5);
      assert.equal(m1.backup, false);
      assert.equal(m1.subnet_id, subnets['private-subnet']);
      assert.equal(m1.operating_status, 'NO_MONITOR');
      assert.equal(m1.provisioning_status, 'ACTIVE');
      assert.equal(m1.monitor_address, null);
      assert.equal(m2.weight, 1);
      assert.equal(m2.subnet_id, null);

      const rows = await list(DEMO, ['loadbalancer', 'member', 'list', 'pool1']);
      assert.deepEqual(rows.map((r) => r.name).sort(), ['m1', 'm2']);
      assert.deepEqual(lines((await show(DEMO, ['loadbalancer', 'pool', 'show', 'pool1'])).members), [m1.id, m2.id].sort());
      assert.equal((await show(DEMO, ['loadbalancer', 'member', 'show', 'pool1', 'm1'])).id, m1.id);

      await cli.ok(DEMO, ['loadbalancer', 'member', 'set', 'pool1', 'm1', '--weight', '10', '--enable-backup', '--monitor-port', '9090', '--wait']);
      let m = await show(DEMO, ['loadbalancer', 'member', 'show', 'pool1', String(m1.id)]);
      assert.equal(m.weight, 10);
      assert.equal(m.backup, true);
      assert.equal(m.monitor_port, 9090);

      await cli.ok(DEMO, ['loadbalancer', 'member', 'unset', 'pool1', 'm1', '--weight', '--backup', '--monitor-port', '--wait']);
      m = await show(DEMO, ['loadbalancer', 'member', 'show', 'pool1', 'm1']);
      assert.equal(m.weight, 1);
      assert.equal(m.backup, false);
      assert.equal(m.monitor_port, null);
    });

    it('creates, sets and unsets a health monitor', async () => {
      const pool = await pool1();
      const hm = await monitor();
      assert.equal(hm.name, 'hm1');
      assert.equal(hm.type, 'HTTP');
      assert.equal(hm.delay, 5);
      assert.equal(hm.timeout, 3);
      assert.equal(hm.max_retries, 2);
      assert.equal(hm.max_retries_down, 3);
      assert.equal(hm.http_method, 'GET');
      assert.equal(hm.url_path, '/healthz');
      assert.equal(hm.expected_codes, '200,204');
      assert.equal(hm.provisioning_status, 'ACTIVE');
      assert.deepEqual(lines(hm.pools), [pool.id]);
      assert.equal((await show(DEMO, ['loadbalancer', 'pool', 'show', 'pool1'])).healthmonitor_id, hm.id);
      assert.deepEqual((await list(DEMO, ['loadbalancer', 'healthmonitor', 'list'])).map((r) => r.id), [hm.id]);

      await cli.ok(DEMO, ['loadbalancer', 'healthmonitor', 'set', 'hm1', '--delay', '10', '--http-method', 'HEAD', '--max-retries-down', '5', '--wait']);
      let h = await show(DEMO, ['loadbalancer', 'healthmonitor', 'show', 'hm1']);
      assert.equal(h.delay, 10);
      assert.equal(h.http_method, 'HEAD');
      assert.equal(h.max_retries_down, 5);

      await cli.ok(DEMO, ['loadbalancer', 'healthmonitor', 'unset', 'hm1', '--url-path', '--http-method', '--max-retries-down', '--wait']);
      h = await show(DEMO, ['loadbalancer', 'healthmonitor', 'show', String(hm.id)]);
      assert.equal(h.url_path, '/');
      assert.equal(h.http_method, 'GET');
      assert.equal(h.max_retries_down, 3);
      assert.equal(h.delay, 10);
    });

    it('creates, sets and unsets an L7 policy and rule', async () => {
      const { listener } = await treeLb();
      const pool = await pool1();
      const policy = await policy1();
      assert.equal(policy.action, 'REDIRECT_TO_URL');
      assert.equal(policy.redirect_url, 'http://example.com/');
      assert.equal(policy.redirect_http_code, 302);
      assert.equal(policy.redirect_pool_id, null);
      assert.equal(policy.position, 1);
      assert.equal(policy.listener_id, listener.id);
      assert.equal(policy.provisioning_status, 'ACTIVE');
      assert.deepEqual((await list(DEMO, ['loadbalancer', 'l7policy', 'list', '--listener', 'web'])).map((r) => r.id), [policy.id]);

      await cli.ok(DEMO, ['loadbalancer', 'l7policy', 'set', 'pol1', '--action', 'REDIRECT_TO_POOL', '--redirect-pool', 'pool1', '--description', 'to pool', '--wait']);
      let p = await show(DEMO, ['loadbalancer', 'l7policy', 'show', 'pol1']);
      assert.equal(p.action, 'REDIRECT_TO_POOL');
      assert.equal(p.redirect_pool_id, pool.id);
      assert.equal(p.redirect_url, null);
      assert.equal(p.redirect_http_code, null);
      assert.equal(p.description, 'to pool');
      await cli.ok(DEMO, ['loadbalancer', 'l7policy', 'unset', 'pol1', '--description', '--wait']);
      p = await show(DEMO, ['loadbalancer', 'l7policy', 'show', String(policy.id)]);
      assert.equal(p.description, '');

      const created = await rule1();
      assert.equal(created.provisioning_status, 'PENDING_CREATE');
      const rule = await show(DEMO, ['loadbalancer', 'l7rule', 'show', 'pol1', String(created.id)]);
      assert.equal(rule.type, 'PATH');
      assert.equal(rule.compare_type, 'STARTS_WITH');
      assert.equal(rule.value, '/api');
      assert.equal(rule.invert, false);
      assert.equal(rule.key, null);
      assert.equal(rule.provisioning_status, 'ACTIVE');
      assert.deepEqual((await list(DEMO, ['loadbalancer', 'l7rule', 'list', 'pol1'])).map((r) => r.id), [rule.id]);
      assert.deepEqual(lines((await show(DEMO, ['loadbalancer', 'l7policy', 'show', 'pol1'])).rules), [rule.id]);

      await cli.ok(DEMO, ['loadbalancer', 'l7rule', 'set', 'pol1', String(rule.id), '--value', '/v2', '--invert', '--wait']);
      let r = await show(DEMO, ['loadbalancer', 'l7rule', 'show', 'pol1', String(rule.id)]);
      assert.equal(r.value, '/v2');
      assert.equal(r.invert, true);
      await cli.ok(DEMO, ['loadbalancer', 'l7rule', 'unset', 'pol1', String(rule.id), '--invert', '--wait']);
      r = await show(DEMO, ['loadbalancer', 'l7rule', 'show', 'pol1', String(rule.id)]);
      assert.equal(r.invert, false);
    });

    it('shows the status tree and listener stats', async () => {
      const { lb, listener } = await treeLb();
      const pool = await pool1();
      await members();
      const hm = await monitor();
      const out = (await cli.ok(DEMO, ['loadbalancer', 'status', 'show', 'cli-tree'])).stdout;
      const tree = (JSON.parse(out) as { loadbalancer: { id: string; listeners: Array<Obj & { pools: Array<Obj & { members: Obj[]; health_monitor: Obj }> }> } }).loadbalancer;
      assert.equal(tree.id, lb.id);
      assert.equal(tree.listeners.length, 1);
      assert.equal(tree.listeners[0]!.id, listener.id);
      const treePool = tree.listeners[0]!.pools.find((p) => p.id === pool.id);
      assert.ok(treePool, 'default pool under the listener');
      assert.equal(treePool.health_monitor.id, hm.id);
      assert.equal(treePool.health_monitor.type, 'HTTP');
      assert.deepEqual(treePool.members.map((m) => m.address).sort(), ['127.32.0.21', '127.32.0.22']);

      const stats = await show(DEMO, ['loadbalancer', 'listener', 'stats', 'show', 'web']);
      assert.deepEqual(stats, { active_connections: 0, bytes_in: 0, bytes_out: 0, request_errors: 0, total_connections: 0 });
      const shown = await show(DEMO, ['loadbalancer', 'show', 'cli-tree']);
      assert.deepEqual(lines(shown.listeners), [listener.id]);
      assert.deepEqual(lines(shown.pools), [pool.id]);
    });

    it('deletes children one by one with --wait', async () => {
      const rule = await rule1();
      const { m1 } = await members();
      await monitor();
      await cli.ok(DEMO, ['loadbalancer', 'l7rule', 'delete', 'pol1', String(rule.id), '--wait']);
      assert.deepEqual(await list(DEMO, ['loadbalancer', 'l7rule', 'list', 'pol1']), []);
      await cli.ok(DEMO, ['loadbalancer', 'l7policy', 'delete', 'pol1', '--wait']);
      assert.deepEqual(await list(DEMO, ['loadbalancer', 'l7policy', 'list']), []);
      await cli.ok(DEMO, ['loadbalancer', 'member', 'delete', 'pool1', 'm2', '--wait']);
      assert.deepEqual((await list(DEMO, ['loadbalancer', 'member', 'list', 'pool1'])).map((r) => r.id), [m1.id]);
      await cli.ok(DEMO, ['loadbalancer', 'healthmonitor', 'delete', 'hm1', '--wait']);
      assert.equal((await show(DEMO, ['loadbalancer', 'pool', 'show', 'pool1'])).healthmonitor_id, null);
      assert.equal((await show(DEMO, ['loadbalancer', 'member', 'show', 'pool1', 'm1'])).operating_status, 'NO_MONITOR');
    });

    it('refuses a plain delete of a load balancer with children, then cascades', async () => {
      const { lb, listener } = await treeLb();
      await members();
      const refusal = await cli.fails(DEMO, ['loadbalancer', 'delete', 'cli-tree']);
      assert.match(refusal, new RegExp(`Validation failure: Cannot delete Load Balancer ${lb.id} - it has children \\(HTTP 400\\)`));
      await cli.ok(DEMO, ['loadbalancer', 'delete', 'cli-tree', '--cascade', '--wait']);
      assert.match(await cli.fails(DEMO, ['loadbalancer', 'listener', 'show', String(listener.id)]), /Unable to locate|not found/i);
      assert.deepEqual(await list(DEMO, ['loadbalancer', 'pool', 'list']), []);
      assert.ok(!(await list(DEMO, ['loadbalancer', 'list'])).some((r) => r.id === lb.id));
    });
  });

  describe('project isolation and quotas between demo, alt and a reader', { concurrency: 1 }, () => {
    const ownLbs = madeOnce(async () => {
      const [demoLb, altLb] = await Promise.all([
        show(DEMO, ['loadbalancer', 'create', '--name', 'demo-private', '--vip-subnet-id', 'public-subnet', '--wait']),
        show(ALT, ['loadbalancer', 'create', '--name', 'alt-own', '--vip-subnet-id', 'public-subnet', '--wait']),
      ]);
      return { demoLb: demoLb!, altLb: altLb! };
    });

    it('each member creates a load balancer in its own project', async () => {
      const { demoLb, altLb } = await ownLbs();
      assert.equal(demoLb.provisioning_status, 'ACTIVE');
      assert.equal(altLb.provisioning_status, 'ACTIVE');
      assert.notEqual(demoLb.project_id, altLb.project_id);
    });

    it('alt neither sees nor changes demo\'s load balancer', async () => {
      const { demoLb, altLb } = await ownLbs();
      const altSees = (await list(ALT, ['loadbalancer', 'list'])).map((r) => r.id);
      assert.ok(altSees.includes(altLb.id));
      assert.ok(!altSees.includes(demoLb.id));
      assert.match(await cli.fails(ALT, ['loadbalancer', 'show', String(demoLb.id)]), FORBIDDEN);
      // set/delete/stats first resolve the id through the (project-scoped) list, so the CLI
      // stops before the write; the API's own refusal is checked directly below.
      const unlocatable = new RegExp(`Unable to locate ${demoLb.id} in loadbalancers`);
      assert.match(await cli.fails(ALT, ['loadbalancer', 'set', String(demoLb.id), '--name', 'hijacked']), unlocatable);
      assert.match(await cli.fails(ALT, ['loadbalancer', 'delete', String(demoLb.id)]), unlocatable);
      assert.match(await cli.fails(ALT, ['loadbalancer', 'stats', 'show', String(demoLb.id)]), unlocatable);
      const policyDenied = { faultcode: 'Client', faultstring: 'Policy does not allow this request to be performed.', debuginfo: null };
      for (const [method, path, body] of [
        ['GET', `/v2/lbaas/loadbalancers?project_id=${demoLb.project_id}`, undefined],
        ['PUT', `/v2/lbaas/loadbalancers/${demoLb.id}`, { loadbalancer: { name: 'hijacked' } }],
        ['DELETE', `/v2/lbaas/loadbalancers/${demoLb.id}?cascade=true`, undefined],
        ['POST', '/v2/lbaas/listeners', { listener: { loadbalancer_id: demoLb.id, protocol: 'TCP', protocol_port: 81 } }],
      ] as const) {
        const r = await api(ALT, method, path, body);
        assert.equal(r.status, 403, `${method} ${path}`);
        assert.deepEqual(r.body, policyDenied);
      }
      const untouched = await show(DEMO, ['loadbalancer', 'show', String(demoLb.id)]);
      assert.equal(untouched.name, 'demo-private');
      assert.equal(untouched.provisioning_status, 'ACTIVE');
    });

    it('alt listing with --project demo gets the 403 it gets from a real cloud', async () => {
      const { demoLb } = await ownLbs();
      // osc resolves --project through Keystone first; real Keystone answers a member's look-up
      // of another project with 403, on which osc falls back to the literal id, so the request
      // reaches the load-balancer API and its 403 is what the user sees.
      assert.match(await cli.fails(ALT, ['loadbalancer', 'list', '--project', String(demoLb.project_id)]), FORBIDDEN);
    });

    it('the reader of demo reads but cannot create', async () => {
      const { demoLb, altLb } = await ownLbs();
      const readerSees = (await list(READER, ['loadbalancer', 'list'])).map((r) => r.id);
      assert.ok(readerSees.includes(demoLb.id) && !readerSees.includes(altLb.id));
      assert.equal((await show(READER, ['loadbalancer', 'show', 'demo-private'])).id, demoLb.id);
      assert.match(await cli.fails(READER, ['loadbalancer', 'create', '--name', 'nope', '--vip-subnet-id', 'public-subnet']), FORBIDDEN);
      assert.match(await cli.fails(READER, ['loadbalancer', 'set', 'demo-private', '--name', 'nope']), FORBIDDEN);
    });

    it('admin sees both projects', async () => {
      const { demoLb, altLb } = await ownLbs();
      const adminSees = (await list(ADMIN, ['loadbalancer', 'list'])).map((r) => r.id);
      assert.ok(adminSees.includes(demoLb.id) && adminSees.includes(altLb.id));
      const onlyAlt = (await list(ADMIN, ['loadbalancer', 'list', '--project', String(altLb.project_id)])).map((r) => r.id);
      assert.ok(onlyAlt.includes(altLb.id) && !onlyAlt.includes(demoLb.id));
    });

    it('a quota set by admin is enforced on alt and reset afterwards', async () => {
      const { altLb } = await ownLbs();
      // alt owns one load balancer already: the quota of one is met.
      const set = await show(ADMIN, ['loadbalancer', 'quota', 'set', '--loadbalancer', '1', '--listener', '7', 'alt']);
      assert.equal(set.load_balancer, 1);
      assert.equal(set.listener, 7);
      // Members name their project by id: only admins may look projects up by name in Keystone.
      const shown = await show(ALT, ['loadbalancer', 'quota', 'show', String(altLb.project_id)]);
      assert.equal(shown.load_balancer, 1);
      assert.equal(shown.listener, 7);
      assert.match(await cli.fails(ALT, ['loadbalancer', 'quota', 'set', '--loadbalancer', '50', String(altLb.project_id)]), FORBIDDEN);
      assert.match(
        await cli.fails(ALT, ['loadbalancer', 'create', '--name', 'alt-second', '--vip-subnet-id', 'public-subnet']),
        /Quota has been met for resources: Load Balancer \(HTTP 403\)/,
      );
      const rows = await list(ADMIN, ['loadbalancer', 'quota', 'list']);
      const altRow = rows.find((r) => r.project_id === altLb.project_id);
      assert.ok(altRow, 'quota list has a row for alt');
      assert.equal(altRow.load_balancer, 1);

      await cli.ok(ADMIN, ['loadbalancer', 'quota', 'reset', 'alt']);
      const defaults = await show(ADMIN, ['loadbalancer', 'quota', 'defaults', 'show']);
      assert.deepEqual(Object.keys(defaults).sort(), ['health_monitor', 'l7policy', 'l7rule', 'listener', 'load_balancer', 'member', 'pool']);
      assert.deepEqual(await show(ADMIN, ['loadbalancer', 'quota', 'show', 'alt']), defaults);
    });

    it('owners delete their own load balancers', async () => {
      const { demoLb, altLb } = await ownLbs();
      await Promise.all([
        cli.ok(DEMO, ['loadbalancer', 'delete', 'demo-private', '--wait']),
        cli.ok(ALT, ['loadbalancer', 'delete', 'alt-own', '--wait']),
      ]);
      const left = (await list(ADMIN, ['loadbalancer', 'list'])).map((r) => r.id);
      assert.ok(!left.includes(demoLb.id) && !left.includes(altLb.id));
    });
  });

  describe('providers, flavors, availability zones and amphorae as admin', { concurrency: 1 }, () => {
    it('lists providers and their capabilities', async () => {
      const providers = await list(DEMO, ['loadbalancer', 'provider', 'list']);
      const noop = providers.find((p) => p.name === 'noop');
      assert.ok(noop, 'noop provider listed');
      assert.equal(noop.description, 'NoOp driver.');
      // Octavia's no-op driver's lists, word for word.
      const caps = await list(ADMIN, ['loadbalancer', 'provider', 'capability', 'list', 'noop']);
      assert.deepEqual(
        caps.map((c) => [c.type, c.name, c.description]).sort(),
        [
          ['availability_zone', 'compute_zone', 'The compute availability zone to use for this loadbalancer.'],
          ['flavor', 'amp_image_tag', 'The glance image tag to use for this load balancer.'],
        ],
      );
      assert.match(await cli.fails(DEMO, ['loadbalancer', 'provider', 'capability', 'list', 'noop']), FORBIDDEN);
    });

    it('creates, lists, shows, sets, unsets and deletes a flavor profile and a flavor', async () => {
      const fp = await show(ADMIN, ['loadbalancer', 'flavorprofile', 'create', '--name', 'fp-cli', '--provider', 'noop', '--flavor-data', '{"loadbalancer_topology": "SINGLE"}']);
      assert.equal(fp.name, 'fp-cli');
      assert.equal(fp.provider_name, 'noop');
      assert.deepEqual(JSON.parse(String(fp.flavor_data)), { loadbalancer_topology: 'SINGLE' });
      assert.deepEqual((await list(ADMIN, ['loadbalancer', 'flavorprofile', 'list', '--provider', 'noop'])).map((r) => r.id), [fp.id]);
      await cli.ok(ADMIN, ['loadbalancer', 'flavorprofile', 'set', 'fp-cli', '--name', 'fp-cli2']);
      assert.equal((await show(ADMIN, ['loadbalancer', 'flavorprofile', 'show', String(fp.id)])).name, 'fp-cli2');
      assert.match(await cli.fails(DEMO, ['loadbalancer', 'flavorprofile', 'list']), FORBIDDEN);

      const flavor = await show(ADMIN, ['loadbalancer', 'flavor', 'create', '--name', 'f-cli', '--flavorprofile', 'fp-cli2', '--description', 'small', '--enable']);
      assert.equal(flavor.name, 'f-cli');
      assert.equal(flavor.flavor_profile_id, fp.id);
      assert.equal(flavor.enabled, true);
      assert.equal(flavor.description, 'small');
      // Flavors are readable by project members, writable by admin only.
      assert.deepEqual((await list(DEMO, ['loadbalancer', 'flavor', 'list'])).map((r) => r.id), [flavor.id]);
      assert.equal((await show(DEMO, ['loadbalancer', 'flavor', 'show', 'f-cli'])).id, flavor.id);
      assert.match(await cli.fails(DEMO, ['loadbalancer', 'flavor', 'set', 'f-cli', '--disable']), FORBIDDEN);

      await cli.ok(ADMIN, ['loadbalancer', 'flavor', 'set', 'f-cli', '--name', 'f-cli2', '--disable']);
      let f = await show(ADMIN, ['loadbalancer', 'flavor', 'show', 'f-cli2']);
      assert.equal(f.enabled, false);
      await cli.ok(ADMIN, ['loadbalancer', 'flavor', 'unset', 'f-cli2', '--description']);
      f = await show(ADMIN, ['loadbalancer', 'flavor', 'show', String(flavor.id)]);
      assert.equal(f.description, '');
      assert.deepEqual((await list(ADMIN, ['loadbalancer', 'flavor', 'list', '--disable'])).map((r) => r.id), [flavor.id]);

      await cli.ok(ADMIN, ['loadbalancer', 'flavor', 'delete', 'f-cli2']);
      assert.deepEqual(await list(ADMIN, ['loadbalancer', 'flavor', 'list']), []);
      await cli.ok(ADMIN, ['loadbalancer', 'flavorprofile', 'delete', 'fp-cli2']);
      assert.deepEqual(await list(ADMIN, ['loadbalancer', 'flavorprofile', 'list']), []);
    });

    it('creates, lists, shows, sets and deletes an availability zone profile and zone', async () => {
      const azp = await show(ADMIN, ['loadbalancer', 'availabilityzoneprofile', 'create', '--name', 'azp-cli', '--provider', 'noop', '--availability-zone-data', '{}']);
      assert.equal(azp.name, 'azp-cli');
      assert.equal(azp.provider_name, 'noop');
      assert.deepEqual(JSON.parse(String(azp.availability_zone_data)), {});
      assert.deepEqual((await list(ADMIN, ['loadbalancer', 'availabilityzoneprofile', 'list'])).map((r) => r.id), [azp.id]);
      assert.equal((await show(ADMIN, ['loadbalancer', 'availabilityzoneprofile', 'show', 'azp-cli'])).id, azp.id);

      const az = await show(ADMIN, ['loadbalancer', 'availabilityzone', 'create', '--name', 'az-cli', '--availabilityzoneprofile', 'azp-cli', '--description', 'zone one']);
      assert.equal(az.name, 'az-cli');
      assert.equal(az.availability_zone_profile_id, azp.id);
      assert.equal(az.enabled, true);
      assert.equal(az.description, 'zone one');
      assert.deepEqual((await list(DEMO, ['loadbalancer', 'availabilityzone', 'list'])).map((r) => r.name), ['az-cli']);

      await cli.ok(ADMIN, ['loadbalancer', 'availabilityzone', 'set', 'az-cli', '--description', 'zone two', '--disable']);
      let shown = await show(ADMIN, ['loadbalancer', 'availabilityzone', 'show', 'az-cli']);
      assert.equal(shown.description, 'zone two');
      assert.equal(shown.enabled, false);
      await cli.ok(ADMIN, ['loadbalancer', 'availabilityzone', 'unset', 'az-cli', '--description']);
      shown = await show(ADMIN, ['loadbalancer', 'availabilityzone', 'show', 'az-cli']);
      assert.equal(shown.description, '');

      await cli.ok(ADMIN, ['loadbalancer', 'availabilityzone', 'delete', 'az-cli']);
      assert.deepEqual(await list(ADMIN, ['loadbalancer', 'availabilityzone', 'list']), []);
      await cli.ok(ADMIN, ['loadbalancer', 'availabilityzoneprofile', 'delete', 'azp-cli']);
      assert.deepEqual(await list(ADMIN, ['loadbalancer', 'availabilityzoneprofile', 'list']), []);
    });

    it('lists amphorae as admin only', async () => {
      const amphorae = await list(ADMIN, ['loadbalancer', 'amphora', 'list']);
      assert.ok(Array.isArray(amphorae));
      for (const a of amphorae) assert.deepEqual(Object.keys(a).sort(), ['ha_ip', 'id', 'lb_network_ip', 'loadbalancer_id', 'role', 'status']);
      assert.match(await cli.fails(DEMO, ['loadbalancer', 'amphora', 'list']), FORBIDDEN);
    });
  });
});

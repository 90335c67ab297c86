import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, admin, memberA, PROJECT_A, type Harness } from '../../../test/support/harness.js';
import { MEMBER_SUBNET_ID, VIP_SUBNET_ID } from '../../config.js';
import { collectGraphPools } from './graph.js';
import { isApiError } from '../../domain/errors.js';

let h: Harness;
/** No worker: the 201 body and the rows stay exactly as the create left them. */
let quiet: Harness;
before(async () => {
  h = await startHarness();
  quiet = await startHarness();
  await quiet.runtime.worker?.close();
});
after(async () => {
  await h.close();
  await quiet.close();
});

/** Upstream's fully populated example, plus a UDP side and an inline default pool. */
function graph() {
  return {
    loadbalancer: {
      name: 'graph',
      vip_subnet_id: VIP_SUBNET_ID,
      listeners: [
        {
          name: 'http',
          protocol: 'HTTP',
          protocol_port: 80,
          default_pool: { name: 'web' },
          l7policies: [
            {
              name: 'api',
              action: 'REDIRECT_TO_POOL',
              redirect_pool: { name: 'api' },
              rules: [{ type: 'PATH', compare_type: 'STARTS_WITH', value: '/api' }],
            },
            { action: 'REDIRECT_TO_URL', redirect_url: 'https://example.com/', position: 1 },
          ],
        },
        {
          name: 'dns',
          protocol: 'UDP',
          protocol_port: 53,
          default_pool: { name: 'dns', protocol: 'UDP', lb_algorithm: 'SOURCE_IP', members: [{ address: '127.32.0.53', protocol_port: 53 }] },
        },
      ],
      pools: [
        {
          name: 'web',
          protocol: 'HTTP',
          lb_algorithm: 'ROUND_ROBIN',
          healthmonitor: { type: 'HTTP', delay: '3', timeout: 1, max_retries: 2, url_path: '/health' },
          members: [
            { address: '127.32.0.1', protocol_port: 8080, subnet_id: MEMBER_SUBNET_ID },
            { address: '127.32.0.2', protocol_port: 8080, weight: 5 },
          ],
        },
        { name: 'api', protocol: 'HTTP', lb_algorithm: 'LEAST_CONNECTIONS', session_persistence: { type: 'HTTP_COOKIE' } },
      ],
    },
  };
}

type Json = Record<string, any>;
const byName = (list: Json[], name: string): Json => {
  const found = list.find((x) => x.name === name);
  assert.ok(found, `no ${name}`);
  return found;
};

test('graph create: pools, monitors, members, listeners and policies in one call, in the full form', async () => {
  const r = await quiet.request('POST', '/v2/lbaas/loadbalancers', { body: graph(), as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  const lb = r.json().loadbalancer;
  assert.equal(lb.provisioning_status, 'PENDING_CREATE');
  assert.equal(lb.listeners.length, 2);
  assert.equal(lb.pools.length, 3);

  const web = byName(lb.pools, 'web');
  const api = byName(lb.pools, 'api');
  const dns = byName(lb.pools, 'dns');
  for (const p of lb.pools) {
    assert.ok(!('loadbalancers' in p) && !('healthmonitor_id' in p), 'no back-references in the full form');
    assert.equal(p.provisioning_status, 'PENDING_CREATE');
    assert.equal(p.operating_status, 'OFFLINE');
  }
  assert.equal(web.healthmonitor.type, 'HTTP');
  assert.equal(web.healthmonitor.delay, 3);
  assert.equal(web.healthmonitor.url_path, '/health');
  assert.ok(!('pools' in web.healthmonitor));
  assert.equal(api.healthmonitor, null);
  assert.deepEqual(api.session_persistence, { type: 'HTTP_COOKIE', cookie_name: null, persistence_timeout: null, persistence_granularity: null });
  assert.equal(web.members.length, 2);
  for (const m of web.members) {
    assert.equal(m.operating_status, 'OFFLINE', 'members of a monitored pool start OFFLINE');
    assert.equal(m.provisioning_status, 'PENDING_CREATE');
    assert.ok(!('pool_id' in m));
  }
  assert.equal(web.members.find((m: Json) => m.address === '127.32.0.2').weight, 5);
  assert.equal(dns.members[0].operating_status, 'NO_MONITOR');

  const http = byName(lb.listeners, 'http');
  const udp = byName(lb.listeners, 'dns');
  for (const l of lb.listeners) assert.ok(!('loadbalancers' in l));
  assert.equal(http.default_pool_id, web.id);
  assert.equal(udp.default_pool_id, dns.id);
  assert.equal(http.l7policies.length, 2);
  const [first, second] = http.l7policies;
  assert.equal(first.action, 'REDIRECT_TO_URL', 'policies come in position order');
  assert.equal(first.position, 1);
  assert.equal(second.redirect_pool_id, api.id);
  assert.equal(second.rules.length, 1);
  assert.equal(second.rules[0].value, '/api');
  assert.equal(second.rules[0].provisioning_status, 'PENDING_CREATE');

  // The api pool is served by the listener through its policy (enabled, with a rule).
  const apiShown = (await quiet.request('GET', `/v2/lbaas/pools/${api.id}`, { as: memberA })).json().pool;
  assert.deepEqual(apiShown.listeners, [{ id: http.id }]);
  assert.deepEqual(apiShown.loadbalancers, [{ id: lb.id }]);
  const jobs = await quiet.runtime.db.kysely.selectFrom('job').select('operation').where('load_balancer_id', '=', lb.id).execute();
  assert.deepEqual(jobs.map((j) => j.operation), ['loadbalancer.create']);
});

test('the worker settles the whole graph', async () => {
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: graph(), as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  const lbId = r.json().loadbalancer.id;
  assert.equal(await h.settled(lbId), 'ACTIVE');
  const status = (await h.request('GET', `/v2/lbaas/loadbalancers/${lbId}/status`, { as: memberA })).json().statuses.loadbalancer;
  const http = byName(status.listeners, 'http');
  assert.equal(http.provisioning_status, 'ACTIVE');
  assert.deepEqual(http.pools.map((p: Json) => p.name).sort(), ['api', 'web']);
  assert.equal(byName(http.pools, 'web').health_monitor.provisioning_status, 'ACTIVE');
});

test('graph errors are 400s and create nothing', async () => {
  const count = async () => Number((await quiet.runtime.db.kysely.selectFrom('load_balancer').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  const before = await count();
  const mutate = (f: (lb: ReturnType<typeof graph>['loadbalancer']) => void) => {
    const body = graph();
    f(body.loadbalancer);
    return body;
  };
  const cases: Array<[unknown, number, string]> = [
    [mutate((lb) => delete (lb.pools[1] as { name?: string }).name), 400, 'Validation failure: Pools must be named when creating a fully populated loadbalancer.'],
    [mutate((lb) => (lb.pools[1]!.name = 'web')), 400, 'Validation failure: Pool names must be unique when creating a fully populated loadbalancer.'],
    [mutate((lb) => (lb.listeners[0]!.default_pool = { name: 'nowhere' })), 400, "Validation failure: Pool 'nowhere' was referenced but no full definition was found."],
    [mutate((lb) => delete (lb.pools[1] as { protocol?: string }).protocol), 400, "Validation failure: Pool definition for 'api' missing required attribute: protocol"],
    [mutate((lb) => (lb.pools[0]!.protocol = 'TCP')), 400, "Validation failure: The pool protocol 'TCP' is invalid while the listener protocol is 'HTTP'."],
    [mutate((lb) => Object.assign(lb.listeners[1]!, { protocol: 'TCP', protocol_port: 80 })), 409, 'Another Listener on this Load Balancer is already using protocol HTTP and protocol_port 80'],
    [mutate((lb) => (lb.pools[0]!.members as unknown[]).push({ address: '169.254.169.254', protocol_port: 80 })), 400, '169.254.169.254 is not a valid option for member address'],
    [mutate((lb) => (lb.pools[0]!.members as unknown[]).push({ address: '127.80.0.10', protocol_port: 80 })), 400, "Member address 127.80.0.10 is not allowed: it is on the load balancing service's management network. Use the address of a server on a member subnet."],
    [mutate((lb) => (lb.listeners[1]!.default_pool.members as unknown[]).push({ address: '127.32.0.60', protocol_port: 53, monitor_address: '127.0.0.1' })), 400, 'Member monitor_address 127.0.0.1 is not allowed: the load balancing service itself listens on it. Use the address of a server on a member subnet.'],
    [mutate((lb) => ((lb.pools[0]!.healthmonitor as Record<string, unknown>).bogus = 1)), 400, 'Unknown attribute for argument load_balancer.loadbalancer.pools.healthmonitor: bogus'],
  ];
  for (const [body, code, message] of cases) {
    const r = await quiet.request('POST', '/v2/lbaas/loadbalancers', { body, as: memberA });
    assert.equal(r.statusCode, code, message);
    assert.equal(r.json().faultstring, message);
  }
  assert.equal(await count(), before);
  const orphans = await quiet.runtime.db.kysely.selectFrom('port').select('id').where('device_id', 'not in', (await quiet.runtime.db.kysely.selectFrom('load_balancer').select('id').execute()).map((l) => l.id).concat('-')).execute();
  assert.deepEqual(orphans, [], 'no VIP port survives a refused graph');
});

test('graph create checks pool, listener and member quotas', async () => {
  const limits = [
    [{ pool: 2 }, 'Pool'],
    [{ listener: 1 }, 'Listener'],
    [{ member: 2 }, 'Member'],
  ] as const;
  for (const [quota, label] of limits) {
    assert.equal((await quiet.request('PUT', `/v2/lbaas/quotas/${PROJECT_A}`, { body: { quota }, as: admin })).statusCode, 202);
    try {
      const r = await quiet.request('POST', '/v2/lbaas/loadbalancers', { body: graph(), as: memberA });
      assert.equal(r.statusCode, 403, label);
      assert.equal(r.json().faultstring, `Quota has been met for resources: ${label}`);
    } finally {
      await quiet.request('DELETE', `/v2/lbaas/quotas/${PROJECT_A}`, { as: admin });
    }
  }
});

test('collectGraphPools hoists inline definitions after the top-level ones', () => {
  const pools = collectGraphPools({
    pools: [{ name: 'a', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' }],
    listeners: [{ protocol: 'HTTP', protocol_port: 80, default_pool: { name: 'b', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' }, l7policies: [{ action: 'REDIRECT_TO_POOL', redirect_pool: { name: 'a' } }] }],
  });
  assert.deepEqual(pools.map((p) => p.name), ['a', 'b']);
  assert.throws(() => collectGraphPools({ listeners: [{ protocol: 'HTTP', protocol_port: 80, default_pool: {} }] }), (e: unknown) => isApiError(e) && e.status === 400);
});

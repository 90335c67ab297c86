/**
 * Property-based: random and hostile bodies on every create and update route. Whatever is
 * sent, the API answers without a 5xx, with an Octavia error body when it refuses, and a
 * refused request leaves every table exactly as it was.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { TObject } from '@sinclair/typebox';
import { startHarness, admin, memberA, PROJECT_A, type Harness } from '../../test/support/harness.js';
import { VIP_SUBNET_ID } from '../config.js';
import { LoadBalancerCreateBody, LoadBalancerUpdateBody } from '../domain/schemas/loadbalancer.js';
import { ListenerCreateBody, ListenerUpdateBody } from '../domain/schemas/listener.js';
import { PoolCreateBody, PoolUpdateBody } from '../domain/schemas/pool.js';
import { MemberBatchBody, MemberCreateBody, MemberUpdateBody } from '../domain/schemas/member.js';
import { HealthMonitorCreateBody, HealthMonitorUpdateBody } from '../domain/schemas/healthmonitor.js';
import { L7PolicyCreateBody, L7PolicyUpdateBody } from '../domain/schemas/l7policy.js';
import { L7RuleCreateBody, L7RuleUpdateBody } from '../domain/schemas/l7rule.js';
import { QuotaUpdateBody } from '../domain/schemas/quota.js';
import { FlavorCreateBody, FlavorProfileCreateBody, FlavorProfileUpdateBody, FlavorUpdateBody } from '../domain/schemas/flavor.js';
import { AvailabilityZoneCreateBody, AvailabilityZoneProfileCreateBody, AvailabilityZoneProfileUpdateBody, AvailabilityZoneUpdateBody } from '../domain/schemas/availabilityzone.js';
import type { TableName } from '../db/schema.js';

const RUNS = Number(process.env.OSTIA_FUZZ_RUNS ?? 40);

let h: Harness;
const ids: Record<string, string> = {};

async function ok(method: string, url: string, body: unknown, as = admin) {
  const r = await h.request(method, url, { body, as });
  assert.ok(r.statusCode < 300, `${method} ${url}: ${r.statusCode} ${r.body}`);
  if (ids.lb) await h.settled(ids.lb);
  return r.body ? r.json() : undefined;
}

before(async () => {
  h = await startHarness();
  ids.lb = (await ok('POST', '/v2/lbaas/loadbalancers', { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } }, memberA)).loadbalancer.id;
  await h.settled(ids.lb);
  ids.listener = (await ok('POST', '/v2/lbaas/listeners', { listener: { loadbalancer_id: ids.lb, protocol: 'HTTP', protocol_port: 80 } }, memberA)).listener.id;
  ids.pool = (await ok('POST', '/v2/lbaas/pools', { pool: { listener_id: ids.listener, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' } }, memberA)).pool.id;
  ids.member = (await ok('POST', `/v2/lbaas/pools/${ids.pool}/members`, { member: { address: '127.32.0.5', protocol_port: 8080 } }, memberA)).member.id;
  ids.hm = (await ok('POST', '/v2/lbaas/healthmonitors', { healthmonitor: { pool_id: ids.pool, type: 'HTTP', delay: 5, timeout: 3, max_retries: 2 } }, memberA)).healthmonitor.id;
  ids.policy = (await ok('POST', '/v2/lbaas/l7policies', { l7policy: { listener_id: ids.listener, action: 'REJECT' } }, memberA)).l7policy.id;
  ids.rule = (await ok('POST', `/v2/lbaas/l7policies/${ids.policy}/rules`, { rule: { type: 'PATH', compare_type: 'STARTS_WITH', value: '/api' } }, memberA)).rule.id;
  ids.flavorprofile = (await ok('POST', '/v2/lbaas/flavorprofiles', { flavorprofile: { name: 'fp', provider_name: 'noop', flavor_data: '{}' } })).flavorprofile.id;
  ids.flavor = (await ok('POST', '/v2/lbaas/flavors', { flavor: { name: 'f', flavor_profile_id: ids.flavorprofile } })).flavor.id;
  ids.azprofile = (await ok('POST', '/v2/lbaas/availabilityzoneprofiles', { availability_zone_profile: { name: 'azp', provider_name: 'noop', availability_zone_data: '{}' } })).availability_zone_profile.id;
  await ok('POST', '/v2/lbaas/availabilityzones', { availability_zone: { name: 'az1', availability_zone_profile_id: ids.azprofile } });
});
after(() => h.close());

const TABLES: TableName[] = ['load_balancer', 'listener', 'pool', 'member', 'health_monitor', 'l7policy', 'l7rule', 'tag', 'quota', 'flavor', 'flavor_profile', 'availability_zone', 'availability_zone_profile', 'port'];

/** Every row of every table that a request could touch, as one comparable value. */
async function snapshot(): Promise<string> {
  const parts = await Promise.all(TABLES.map((t) => h.runtime.db.kysely.selectFrom(t).selectAll().execute()));
  return JSON.stringify(parts.map((rows) => rows.map((r) => JSON.stringify(r)).sort()));
}

const controlChars = fc.string({ unit: fc.integer({ min: 0, max: 31 }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength: 8 });
const hostileScalar = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ minLength: 256, maxLength: 3000 }),
  controlChars.map((c) => `a${c}b`),
  fc.constantFrom('', ' ', 'None', 'null', '../../etc/passwd', '%s%n', '${x}', "';--", '\u202e', '💥', '0x10', '-1', '1e309', 'NaN', 'true', 'on'),
  fc.uuid(),
  fc.constantFrom('11111111-2222-3333-4444-55555555555', 'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz', VIP_SUBNET_ID),
  fc.integer(),
  fc.constantFrom(-1, 0, 1, 65535, 65536, 2 ** 31, Number.MAX_SAFE_INTEGER, -(2 ** 53)),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
);
const hostileValue = fc.oneof(
  { weight: 5, arbitrary: hostileScalar },
  { weight: 1, arbitrary: fc.array(hostileScalar, { maxLength: 5 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 10 }), hostileScalar, { maxKeys: 4 }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

/** Bodies shaped like the route's schema (its envelope and attribute names), with hostile values. */
function hostileBody(schema: TObject) {
  const [root] = Object.keys(schema.properties);
  const inner = schema.properties[root!] as TObject & { items?: TObject };
  const fields = Object.keys((inner.items ?? inner).properties ?? {});
  const attrs = fc.dictionary(fc.oneof({ weight: 9, arbitrary: fc.constantFrom(...fields) }, { weight: 1, arbitrary: fc.string({ maxLength: 12 }) }), hostileValue, { maxKeys: 6 });
  return fc.oneof(
    { weight: 8, arbitrary: (inner.items ? fc.array(attrs, { maxLength: 3 }) : attrs).map((a) => ({ [root!]: a })) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
    { weight: 1, arbitrary: hostileValue.map((v) => ({ [root!]: v })) },
  );
}

const routes: Array<[string, () => string, TObject]> = [
  ['POST', () => '/v2/lbaas/loadbalancers', LoadBalancerCreateBody],
  ['PUT', () => `/v2/lbaas/loadbalancers/${ids.lb}`, LoadBalancerUpdateBody],
  ['POST', () => '/v2/lbaas/listeners', ListenerCreateBody],
  ['PUT', () => `/v2/lbaas/listeners/${ids.listener}`, ListenerUpdateBody],
  ['POST', () => '/v2/lbaas/pools', PoolCreateBody],
  ['PUT', () => `/v2/lbaas/pools/${ids.pool}`, PoolUpdateBody],
  ['POST', () => `/v2/lbaas/pools/${ids.pool}/members`, MemberCreateBody],
  ['PUT', () => `/v2/lbaas/pools/${ids.pool}/members/${ids.member}`, MemberUpdateBody],
  ['PUT', () => `/v2/lbaas/pools/${ids.pool}/members`, MemberBatchBody],
  ['POST', () => '/v2/lbaas/healthmonitors', HealthMonitorCreateBody],
  ['PUT', () => `/v2/lbaas/healthmonitors/${ids.hm}`, HealthMonitorUpdateBody],
  ['POST', () => '/v2/lbaas/l7policies', L7PolicyCreateBody],
  ['PUT', () => `/v2/lbaas/l7policies/${ids.policy}`, L7PolicyUpdateBody],
  ['POST', () => `/v2/lbaas/l7policies/${ids.policy}/rules`, L7RuleCreateBody],
  ['PUT', () => `/v2/lbaas/l7policies/${ids.policy}/rules/${ids.rule}`, L7RuleUpdateBody],
  ['PUT', () => `/v2/lbaas/quotas/${PROJECT_A}`, QuotaUpdateBody],
  ['POST', () => '/v2/lbaas/flavors', FlavorCreateBody],
  ['PUT', () => `/v2/lbaas/flavors/${ids.flavor}`, FlavorUpdateBody],
  ['POST', () => '/v2/lbaas/flavorprofiles', FlavorProfileCreateBody],
  ['PUT', () => `/v2/lbaas/flavorprofiles/${ids.flavorprofile}`, FlavorProfileUpdateBody],
  ['POST', () => '/v2/lbaas/availabilityzones', AvailabilityZoneCreateBody],
  ['PUT', () => '/v2/lbaas/availabilityzones/az1', AvailabilityZoneUpdateBody],
  ['POST', () => '/v2/lbaas/availabilityzoneprofiles', AvailabilityZoneProfileCreateBody],
  ['PUT', () => `/v2/lbaas/availabilityzoneprofiles/${ids.azprofile}`, AvailabilityZoneProfileUpdateBody],
];

for (const [method, url, schema] of routes) {
  test(`${method} ${url().replace(/[0-9a-f-]{36}/g, '{id}')} survives hostile bodies`, async () => {
    await fc.assert(
      fc.asyncProperty(hostileBody(schema), fc.constantFrom(admin, memberA), async (body, as) => {
        const before = await snapshot();
        const r = await h.request(method, url(), { body, as });
        assert.ok(r.statusCode < 500, `${r.statusCode} ${r.body} for ${JSON.stringify(body).slice(0, 500)}`);
        if (r.statusCode >= 400) {
          const err = r.json();
          assert.ok(typeof err.faultstring === 'string' || typeof err.description === 'string', r.body);
          assert.equal(await snapshot(), before, `a refused request changed rows: ${r.body}`);
        } else {
          await h.settled(ids.lb!);
        }
      }),
      { numRuns: RUNS, seed: Number(process.env.OSTIA_FUZZ_SEED ?? 20261130) },
    );
    assert.equal((await h.request('GET', '/', { as: {} })).statusCode, 200);
  });
}

test('values the proxy config could not carry are refused at the API, before any renderer sees them', async () => {
  const cases: Array<[string, string, unknown]> = [
    ['POST', `/v2/lbaas/l7policies/${'{policy}'}/rules`, { rule: { type: 'PATH', compare_type: 'REGEX', value: 'a\tb' } }],
    ['POST', '/v2/lbaas/healthmonitors', { healthmonitor: { pool_id: '{pool}', type: 'HTTP', delay: 5, timeout: 3, max_retries: 2, expected_codes: '200\n,201' } }],
    ['PUT', '/v2/lbaas/pools/{pool}', { pool: { session_persistence: { type: 'APP_COOKIE', cookie_name: 'sess\u00e9' } } }],
  ];
  for (const [method, path, body] of cases) {
    const url = path.replace('{policy}', ids.policy!).replace('{pool}', ids.pool!);
    const json = JSON.stringify(body).replace('{pool}', ids.pool!);
    const before = await snapshot();
    const r = await h.request(method, url, { body: JSON.parse(json), as: memberA });
    assert.equal(r.statusCode, 400, `${method} ${url}: ${r.body}`);
    assert.equal(await snapshot(), before);
  }
});

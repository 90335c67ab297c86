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
import { MaxRequestBodyDepth } from '../domain/defaults.js';
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
import { octaviaArgumentName } from './argument-names.js';

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

/** The envelope key of a route's body and whether it holds a list (the member batch). */
function envelopeOf(schema: TObject): { root: string; list: boolean } {
  const [root] = Object.keys(schema.properties);
  return { root: root!, list: (schema.properties[root!] as { type?: string }).type === 'array' };
}

/** Sends `json` as it is: the client's own serialiser could neither build nor keep some of these bodies. */
function sendRaw(method: string, url: string, json: string, as = admin) {
  return h.request(method, url, { body: json, as, headers: { 'content-type': 'application/json' } });
}

async function assertRefused(method: string, url: string, json: string, message?: string | RegExp) {
  const before = await snapshot();
  const r = await sendRaw(method, url, json);
  assert.equal(r.statusCode, 400, `${method} ${url} ${json.slice(0, 80)}: ${r.statusCode} ${r.body.slice(0, 300)}`);
  const err = r.json();
  assert.deepEqual(Object.keys(err).sort(), ['debuginfo', 'faultcode', 'faultstring']);
  assert.equal(err.faultcode, 'Client');
  if (typeof message === 'string') assert.equal(err.faultstring, message);
  else if (message) assert.match(err.faultstring, message);
  assert.ok(err.faultstring.length < 2000, 'the refusal does not echo a whole deep value');
  assert.equal(await snapshot(), before);
}

const DEPTH = 10_000;
const deepArray = (leaf = '1') => `${'['.repeat(DEPTH)}${leaf}${']'.repeat(DEPTH)}`;
const deepObject = (leaf = '1') => `${'{"a":'.repeat(DEPTH)}${leaf}${'}'.repeat(DEPTH)}`;

test('a 10,000-level nested body is a 400 in Octavia words wherever the nesting sits, on every route', async () => {
  const fields = (schema: TObject) => {
    const { root } = envelopeOf(schema);
    const inner = schema.properties[root] as TObject & { items?: TObject };
    return Object.keys((inner.items ?? inner).properties ?? {});
  };
  for (const [method, url, schema] of routes) {
    const { root, list } = envelopeOf(schema);
    const wrap = (attrs: string) => `{"${root}": ${list ? `[${attrs}]` : attrs}}`;
    const bodies = [
      deepArray(),
      deepObject(),
      `{"${root}": ${deepObject()}}`,
      `{"${root}": ${deepArray()}}`,
      wrap(`{"unknown_key": ${deepObject()}}`),
      // Under every attribute the route knows: scalars, lists (tags) and maps (insert_headers) alike.
      ...fields(schema).flatMap((f) => [wrap(`{"${f}": ${deepObject()}}`), wrap(`{"${f}": ${deepArray()}}`)]),
    ];
    for (const json of bodies) await assertRefused(method, url(), json, `Request body nests deeper than ${MaxRequestBodyDepth} levels`);
  }
  assert.equal((await h.request('GET', '/', { as: {} })).statusCode, 200);
});

const PROTOTYPE_KEYS = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf', '__defineGetter__'];

test("keys inherited from Object.prototype are unknown attributes on every create and update body", async () => {
  for (const [method, url, schema] of routes) {
    const { root, list } = envelopeOf(schema);
    for (const key of PROTOTYPE_KEYS) {
      const attrs = `{"${key}": {"polluted": true}}`;
      await assertRefused(method, url(), `{"${root}": ${list ? `[${attrs}]` : attrs}}`, `Unknown attribute for argument ${octaviaArgumentName(root, method)}.${root}: ${key}`);
      await assertRefused(method, url(), `{"${key}": {}, "${root}": ${list ? '[]' : '{}'}}`, new RegExp(`^Unknown attribute for argument ${octaviaArgumentName(root, method)}: ${key.replace(/\$/g, '\\$')}$`));
    }
  }
});

test('a prototype key inside a free-form map (insert_headers) is refused, never merged into a prototype', async () => {
  for (const key of PROTOTYPE_KEYS) {
    await assertRefused('PUT', `/v2/lbaas/listeners/${ids.listener}`, `{"listener": {"insert_headers": {"${key}": "x"}}}`);
  }
});

test('list queries: prototype names are neither filters nor sort keys', async () => {
  for (const key of PROTOTYPE_KEYS) {
    for (const query of [`${key}=x`, `sort=${key}`, `sort_key=${key}`]) {
      const r = await h.request('GET', `/v2/lbaas/loadbalancers?${query}`, { as: admin });
      assert.equal(r.statusCode, 400, `${query}: ${r.body}`);
      assert.equal(typeof r.json().faultstring, 'string');
    }
    const fields = await h.request('GET', `/v2/lbaas/loadbalancers?fields=${key}&fields=id`, { as: admin });
    assert.equal(fields.statusCode, 200);
    for (const lb of fields.json().loadbalancers) assert.deepEqual(Object.keys(lb), ['id']);
  }
});

test('redirect URLs whose port is above 65535 are refused (create, update, graph create)', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom('redirect_url', 'redirect_prefix'),
      fc.oneof(fc.integer({ min: 65536, max: 99999 }).map(String), fc.bigInt({ min: 100000n, max: 10n ** 30n }).map(String), fc.constant('0'.repeat(5) + '65536')),
      fc.constantFrom('http', 'https'),
      async (field, port, scheme) => {
        const value = `${scheme}://example.com:${port}/x`;
        const action = field === 'redirect_url' ? 'REDIRECT_TO_URL' : 'REDIRECT_PREFIX';
        const message = `Invalid input for field/attribute ${field}. Value: '${value}'. Value must be a valid URL string`;
        await assertRefused('POST', '/v2/lbaas/l7policies', JSON.stringify({ l7policy: { listener_id: ids.listener, action, [field]: value } }), message);
        await assertRefused('PUT', `/v2/lbaas/l7policies/${ids.policy}`, JSON.stringify({ l7policy: { [field]: value } }), message);
        const graph = { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, listeners: [{ protocol: 'HTTP', protocol_port: 80, l7policies: [{ action, [field]: value }] }] } };
        await assertRefused('POST', '/v2/lbaas/loadbalancers', JSON.stringify(graph), message);
      },
    ),
    { numRuns: 15, seed: 20261130 },
  );
  const ok = await h.request('PUT', `/v2/lbaas/l7policies/${ids.policy}`, { body: { l7policy: { redirect_url: 'https://example.com:65535/x' } }, as: memberA });
  assert.equal(ok.statusCode, 200, ok.body);
  assert.equal(await h.settled(ids.lb!), 'ACTIVE');
});

test('?limit below 1 is unlimited, as in Octavia: past the cap, with no next link, and a previous link after a marker', async () => {
  const capped = await startHarness({ api: { paginationMaxLimit: 2 } });
  try {
    for (let i = 0; i < 3; i++) {
      const r = await capped.request('POST', '/v2/lbaas/flavorprofiles', { body: { flavorprofile: { name: `p${i}`, provider_name: 'noop', flavor_data: '{}' } } });
      assert.equal(r.statusCode, 201);
    }
    const list = async (query: string) => (await capped.request('GET', `/v2/lbaas/flavorprofiles?${query}`)).json();
    assert.equal((await list('')).flavorprofiles.length, 2, 'the cap applies by default');
    assert.equal((await list('')).flavorprofile_links.length, 1);
    for (const limit of ['-1', '0', 'infinite', '-99999999999']) {
      const page = await list(`limit=${limit}`);
      assert.equal(page.flavorprofiles.length, 3, limit);
      assert.deepEqual(page.flavorprofile_links, [], `${limit}: a page holding every row has no next`);
    }
    const first = (await list('limit=-1')).flavorprofiles[0].id;
    const after = await list(`limit=-1&marker=${first}`);
    assert.equal(after.flavorprofiles.length, 2);
    assert.deepEqual(after.flavorprofile_links.map((l: { rel: string }) => l.rel), ['previous']);
    const previous = new URL(after.flavorprofile_links[0].href);
    assert.equal(previous.searchParams.get('limit'), 'infinite', 'following the link keeps the page unlimited');
    assert.equal(previous.searchParams.get('page_reverse'), 'True');
  } finally {
    await capped.close();
  }
});

test('a NUL or a lone surrogate in any text (a name, a tag) is a 400 naming the field on every database, never a 500 or a changed value', async () => {
  for (const [body, field] of [
    [{ loadbalancer: { name: 'a\0b' } }, 'name'],
    [{ loadbalancer: { description: '\ud800' } }, 'description'],
    [{ loadbalancer: { tags: ['ok', 'x\0'] } }, 'tags'],
  ] as const) {
    const r = await h.request('PUT', `/v2/lbaas/loadbalancers/${ids.lb}`, { body, as: memberA });
    assert.equal(r.statusCode, 400, r.body);
    assert.match(r.json().faultstring, new RegExp(`field/attribute ${field}\\b.*(NUL|well-formed Unicode)`));
  }
});

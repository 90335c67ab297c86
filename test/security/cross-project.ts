/**
 * Isolation between projects through the real API: project B (a member) and A's own reader try
 * to read, list, change, build under and refer to project A's objects and secrets, and to use
 * the admin-only resources. Every attempt must be refused with the status Octavia answers
 * (403 for another project's object or an admin-only call, 404 for a reference to an object
 * that is not on the caller's own load balancer, 400 "Could not retrieve certificate" for a
 * secret the caller may not read), or, for a list, answer without any of A's objects; and no
 * row anywhere may change.
 */
import assert from 'node:assert/strict';
import { VIP_SUBNET_ID } from '../../src/config.js';
import { createTestPki } from '../support/test-pki.js';
import { admin, memberA, memberB, readerA, startHarness, PROJECT_A, type Caller, type Harness } from '../support/harness.js';
import { storeContainer, storeSecret, WITH_KEY_MANAGER } from '../support/tls-secrets.js';
import { rowsSnapshot } from './rows.js';
import type { Tally } from './tally.js';

const AREA = 'cross-project';
const L = '/v2/lbaas';
const KM = '/key-manager/v1';

type Json = Record<string, unknown>;
/** A status the attempt must end with, or `hidden`: a 200 list holding none of A's ids. */
type Expected = 403 | 404 | 400 | 'hidden';

interface Attempt {
  kind: 'read' | 'list' | 'write' | 'parent' | 'reference' | 'admin-only' | 'reader writes';
  method: string;
  url: string;
  body?: Json;
  as: Caller;
  expect: Expected;
}

interface World {
  h: Harness;
  a: Record<'lb' | 'listener' | 'pool' | 'member' | 'monitor' | 'policy' | 'rule' | 'amphora' | 'container' | 'ca' | 'caId' | 'containerId', string>;
  b: Record<'lb' | 'listener' | 'container', string>;
  admin: Record<'flavorProfile' | 'flavor' | 'azProfile' | 'az', string>;
}

async function ok(h: Harness, as: Caller, method: string, url: string, body?: unknown): Promise<Json> {
  const res = await h.request(method, url, { body, as });
  assert.ok(res.statusCode < 300, `${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.body ? (res.json() as Json) : {};
}

const idOf = (body: Json, root: string) => (body[root] as Json).id as string;
const lastSegment = (ref: string) => new URL(ref).pathname.split('/').pop()!;

async function world(h: Harness): Promise<World> {
  const pki = createTestPki();
  try {
    const leaf = pki.leaf({ cn: 'a.example.com', dnsNames: ['a.example.com'], key: 'ec-p256' });
    const parts = { certificate: leaf.certPem, private_key: leaf.keyPem, intermediates: pki.intermediate.certPem };
    const container = await storeContainer(h, memberA, parts);
    const ca = await storeSecret(h, memberA, pki.intermediate.certPem + pki.root.certPem, 'ca');
    const bContainer = await storeContainer(h, memberB, parts);
    const graph = {
      vip_subnet_id: VIP_SUBNET_ID,
      provider: 'amphora',
      name: 'a-lb',
      listeners: [{ name: 'a-listener', protocol: 'HTTP', protocol_port: 80, default_pool: { name: 'a-pool', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members: [{ address: '127.32.0.5', protocol_port: 8080 }], healthmonitor: { type: 'HTTP', delay: 5, timeout: 3, max_retries: 2 } }, l7policies: [{ action: 'REJECT', rules: [{ type: 'PATH', compare_type: 'STARTS_WITH', value: '/admin' }] }] }],
    };
    const lbA = idOf(await ok(h, memberA, 'POST', `${L}/loadbalancers`, { loadbalancer: graph }), 'loadbalancer');
    assert.equal(await h.settled(lbA), 'ACTIVE');
    const listener = ((await ok(h, memberA, 'GET', `${L}/listeners?loadbalancer_id=${lbA}`)).listeners as Json[])[0]!;
    const pool = listener.default_pool_id as string;
    const member = ((await ok(h, memberA, 'GET', `${L}/pools/${pool}/members`)).members as Json[])[0]!.id as string;
    const monitor = ((await ok(h, memberA, 'GET', `${L}/pools/${pool}`)).pool as Json).healthmonitor_id as string;
    const policy = ((listener.l7policies as Json[])[0]!).id as string;
    const rule = ((await ok(h, memberA, 'GET', `${L}/l7policies/${policy}/rules`)).rules as Json[])[0]!.id as string;
    const amphora = ((await ok(h, admin, 'GET', `/v2/octavia/amphorae?loadbalancer_id=${lbA}`)).amphorae as Json[])[0]!.id as string;

    const lbB = idOf(await ok(h, memberB, 'POST', `${L}/loadbalancers`, { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, provider: 'amphora', name: 'b-lb' } }), 'loadbalancer');
    assert.equal(await h.settled(lbB), 'ACTIVE');
    const listenerB = idOf(await ok(h, memberB, 'POST', `${L}/listeners`, { listener: { loadbalancer_id: lbB, protocol: 'HTTP', protocol_port: 80 } }), 'listener');
    assert.equal(await h.settled(lbB), 'ACTIVE');

    const flavorProfile = idOf(await ok(h, admin, 'POST', `${L}/flavorprofiles`, { flavorprofile: { name: 'fp', provider_name: 'amphora', flavor_data: '{}' } }), 'flavorprofile');
    const flavor = idOf(await ok(h, admin, 'POST', `${L}/flavors`, { flavor: { name: 'f', flavor_profile_id: flavorProfile } }), 'flavor');
    const azProfile = idOf(await ok(h, admin, 'POST', `${L}/availabilityzoneprofiles`, { availability_zone_profile: { name: 'azp', provider_name: 'amphora', availability_zone_data: '{}' } }), 'availability_zone_profile');
    await ok(h, admin, 'POST', `${L}/availabilityzones`, { availability_zone: { name: 'az1', availability_zone_profile_id: azProfile } });
    return {
      h,
      a: { lb: lbA, listener: listener.id as string, pool, member, monitor, policy, rule, amphora, container, ca, caId: lastSegment(ca), containerId: lastSegment(container) },
      b: { lb: lbB, listener: listenerB, container: bContainer },
      admin: { flavorProfile, flavor, azProfile, az: 'az1' },
    };
  } finally {
    pki.remove();
  }
}

function attempts(w: World): Attempt[] {
  const { a, b } = w;
  const B = memberB;
  const out: Attempt[] = [];
  const add = (kind: Attempt['kind'], expect: Expected, method: string, url: string, body?: Json, as: Caller = B) => out.push({ kind, method, url, body, as, expect });

  const objects: Array<[string, string, Json]> = [
    [`${L}/loadbalancers/${a.lb}`, 'loadbalancer', { name: 'b-was-here' }],
    [`${L}/listeners/${a.listener}`, 'listener', { name: 'b-was-here' }],
    [`${L}/pools/${a.pool}`, 'pool', { name: 'b-was-here' }],
    [`${L}/pools/${a.pool}/members/${a.member}`, 'member', { name: 'b-was-here' }],
    [`${L}/healthmonitors/${a.monitor}`, 'healthmonitor', { name: 'b-was-here' }],
    [`${L}/l7policies/${a.policy}`, 'l7policy', { name: 'b-was-here' }],
    [`${L}/l7policies/${a.policy}/rules/${a.rule}`, 'rule', { value: '/b' }],
  ];
  for (const [url, root, change] of objects) {
    add('read', 403, 'GET', url);
    add('write', 403, 'PUT', url, { [root]: change });
    add('write', 403, 'DELETE', url);
    add('reader writes', 403, 'PUT', url, { [root]: change }, readerA);
    add('reader writes', 403, 'DELETE', url, undefined, readerA);
  }
  for (const url of [`${L}/loadbalancers/${a.lb}/status`, `${L}/loadbalancers/${a.lb}/stats`, `${L}/listeners/${a.listener}/stats`, `${L}/pools/${a.pool}/members`, `${L}/l7policies/${a.policy}/rules`, `${L}/quotas/${PROJECT_A}`])
    add('read', 403, 'GET', url);
  add('write', 403, 'DELETE', `${L}/loadbalancers/${a.lb}?cascade=true`);
  add('write', 403, 'PUT', `${L}/loadbalancers/${a.lb}/failover`);
  add('write', 403, 'PUT', `${L}/pools/${a.pool}/members`, { members: [] });
  add('write', 403, 'PUT', `${L}/quotas/${PROJECT_A}`, { quota: { load_balancer: 1000 } });
  add('write', 403, 'DELETE', `${L}/quotas/${PROJECT_A}`);
  add('reader writes', 403, 'PUT', `${L}/loadbalancers/${a.lb}/failover`, undefined, readerA);
  add('reader writes', 403, 'POST', `${L}/pools/${a.pool}/members`, { member: { address: '127.32.0.9', protocol_port: 80 } }, readerA);
  add('reader writes', 403, 'POST', `${L}/listeners`, { listener: { loadbalancer_id: a.lb, protocol: 'HTTP', protocol_port: 81 } }, readerA);

  // Lists: with and without filters; naming A's project is refused outright.
  const lists: Array<[string, string[]]> = [
    ['loadbalancers', [`id=${a.lb}`, 'name=a-lb', `vip_subnet_id=${VIP_SUBNET_ID}`]],
    ['listeners', [`id=${a.listener}`, `loadbalancer_id=${a.lb}`, 'name=a-listener']],
    ['pools', [`id=${a.pool}`, `loadbalancer_id=${a.lb}`, 'name=a-pool']],
    ['healthmonitors', [`id=${a.monitor}`, `pool_id=${a.pool}`]],
    ['l7policies', [`id=${a.policy}`, `listener_id=${a.listener}`]],
  ];
  for (const [resource, filters] of lists) {
    add('list', 'hidden', 'GET', `${L}/${resource}`);
    for (const filter of filters) add('list', 'hidden', 'GET', `${L}/${resource}?${filter}`);
    add('list', 403, 'GET', `${L}/${resource}?project_id=${PROJECT_A}`);
  }
  add('list', 'hidden', 'GET', `${L}/quotas`);
  add('list', 'hidden', 'GET', `${KM}/secrets`);
  add('list', 'hidden', 'GET', `${KM}/containers`);

  // A's objects as parent or reference.
  add('parent', 403, 'POST', `${L}/listeners`, { listener: { loadbalancer_id: a.lb, protocol: 'HTTP', protocol_port: 81 } });
  add('parent', 403, 'POST', `${L}/pools`, { pool: { loadbalancer_id: a.lb, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' } });
  add('parent', 403, 'POST', `${L}/pools`, { pool: { listener_id: a.listener, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' } });
  add('parent', 403, 'POST', `${L}/pools/${a.pool}/members`, { member: { address: '127.32.0.9', protocol_port: 80 } });
  add('parent', 403, 'POST', `${L}/healthmonitors`, { healthmonitor: { pool_id: a.pool, type: 'TCP', delay: 5, timeout: 3, max_retries: 2 } });
  add('parent', 403, 'POST', `${L}/l7policies`, { l7policy: { listener_id: a.listener, action: 'REJECT' } });
  add('parent', 403, 'POST', `${L}/l7policies/${a.policy}/rules`, { rule: { type: 'PATH', compare_type: 'STARTS_WITH', value: '/b' } });
  add('reference', 404, 'PUT', `${L}/listeners/${b.listener}`, { listener: { default_pool_id: a.pool } });
  add('reference', 404, 'POST', `${L}/listeners`, { listener: { loadbalancer_id: b.lb, protocol: 'HTTP', protocol_port: 82, default_pool_id: a.pool } });
  add('reference', 404, 'POST', `${L}/l7policies`, { l7policy: { listener_id: b.listener, action: 'REDIRECT_TO_POOL', redirect_pool_id: a.pool } });

  // A's secrets.
  const tlsListener = (refs: Json) => ({ listener: { loadbalancer_id: b.lb, protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: b.container, ...refs } });
  add('reference', 400, 'POST', `${L}/listeners`, tlsListener({ default_tls_container_ref: a.container }));
  add('reference', 400, 'POST', `${L}/listeners`, tlsListener({ sni_container_refs: [a.container] }));
  add('reference', 400, 'POST', `${L}/listeners`, tlsListener({ client_ca_tls_container_ref: a.ca, client_authentication: 'MANDATORY' }));
  add('reference', 400, 'POST', `${L}/pools`, { pool: { loadbalancer_id: b.lb, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', tls_enabled: true, tls_container_ref: a.container } });
  add('reference', 400, 'POST', `${L}/pools`, { pool: { loadbalancer_id: b.lb, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', tls_enabled: true, ca_tls_container_ref: a.ca } });
  for (const url of [`${KM}/secrets/${a.caId}`, `${KM}/secrets/${a.caId}/payload`, `${KM}/containers/${a.containerId}`, `${KM}/secrets/${a.caId}/acl`, `${KM}/containers/${a.containerId}/consumers`])
    add('read', 403, 'GET', url);
  add('write', 403, 'DELETE', `${KM}/secrets/${a.caId}`);
  add('write', 403, 'DELETE', `${KM}/containers/${a.containerId}`);
  add('write', 403, 'PUT', `${KM}/secrets/${a.caId}/acl`, { read: { users: ['u-test'], 'project-access': true } });

  // Admin-only resources, to a member of any project.
  const amp = `/v2/octavia/amphorae/${a.amphora}`;
  for (const url of ['/v2/octavia/amphorae', amp, `${amp}/stats`, `${L}/flavorprofiles`, `${L}/flavorprofiles/${w.admin.flavorProfile}`, `${L}/availabilityzoneprofiles`, `${L}/availabilityzoneprofiles/${w.admin.azProfile}`])
    add('admin-only', 403, 'GET', url);
  add('admin-only', 403, 'PUT', `${amp}/failover`);
  add('admin-only', 403, 'PUT', `${amp}/config`);
  add('admin-only', 403, 'DELETE', amp);
  // Create, change and delete of the deployment-wide objects: [collection, id, envelope, create body, change].
  const deploymentWide: Array<[string, string, string, Json, Json]> = [
    ['flavorprofiles', w.admin.flavorProfile, 'flavorprofile', { name: 'b', provider_name: 'amphora', flavor_data: '{}' }, { name: 'b' }],
    ['flavors', w.admin.flavor, 'flavor', { name: 'b', flavor_profile_id: w.admin.flavorProfile }, { name: 'b' }],
    ['availabilityzoneprofiles', w.admin.azProfile, 'availability_zone_profile', { name: 'b', provider_name: 'amphora', availability_zone_data: '{}' }, { name: 'b' }],
    ['availabilityzones', w.admin.az, 'availability_zone', { name: 'b', availability_zone_profile_id: w.admin.azProfile }, { description: 'b' }],
  ];
  for (const [collection, id, root, create, change] of deploymentWide) {
    add('admin-only', 403, 'POST', `${L}/${collection}`, { [root]: create });
    add('admin-only', 403, 'PUT', `${L}/${collection}/${id}`, { [root]: change });
    add('admin-only', 403, 'DELETE', `${L}/${collection}/${id}`);
  }
  add('admin-only', 403, 'PUT', `${L}/quotas/${memberB.project}`, { quota: { load_balancer: 1000 } });
  return out;
}

/** Returns the attempts that were not refused as they must be (empty when isolation held). */
export async function crossProjectCases(tally: Tally): Promise<string[]> {
  const h = await startHarness({ ...WITH_KEY_MANAGER, api: { enabledProviders: ['noop', 'amphora'], defaultProvider: 'amphora' }, compute: { driver: 'noop' } });
  try {
    const w = await world(h);
    const secretsOfA = [w.a.caId, w.a.containerId];
    const idsOfA = [...Object.values(w.a).filter((v) => !v.includes('/')), ...secretsOfA];
    const failures: string[] = [];
    for (const t of attempts(w)) {
      const before = await rowsSnapshot(h);
      const res = await h.request(t.method, t.url, { body: t.body, as: t.as });
      const what = `${t.as === readerA ? "A's reader" : 'B'}: ${t.method} ${t.url}${t.body ? ` ${JSON.stringify(t.body).slice(0, 120)}` : ''}`;
      let failure: string | null = null;
      if (t.expect === 'hidden') {
        const leaked = idsOfA.filter((id) => res.body.includes(id));
        if (res.statusCode !== 200) failure = `answered ${res.statusCode}, expected 200 without A's objects: ${res.body.slice(0, 160)}`;
        else if (leaked.length) failure = `listed A's ${leaked.join(', ')}`;
      } else if (res.statusCode !== t.expect) failure = `answered ${res.statusCode}, expected ${t.expect}: ${res.body.slice(0, 160)}`;
      else if (t.expect === 400 && !/Could not retrieve certificate/.test(res.body)) failure = `refused for another reason: ${res.body.slice(0, 160)}`;
      if ((await rowsSnapshot(h)) !== before) failure = `${failure ? `${failure}; ` : ''}rows changed`;
      tally.record(AREA, failure ? `${t.kind}: NOT refused` : t.expect === 'hidden' ? `${t.kind}: hid A's objects` : `${t.kind}: refused ${t.expect}`);
      if (failure) failures.push(`${what}: ${failure}`);
    }
    return failures;
  } finally {
    await h.close();
  }
}

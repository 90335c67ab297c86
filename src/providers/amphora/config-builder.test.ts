import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, memberA, type Harness } from '../../../test/support/harness.js';
import { MEMBER_SUBNET_ID, VIP_SUBNET_ID } from '../../config.js';
import { AmphoraConfig } from '../../domain/amphora-config.js';
import { violations } from '../../amphora-agent/typed-check.js';
import { buildAmphoraConfig } from './config-builder.js';
import { WITH_KEY_MANAGER, storeContainer, storeSecret } from '../../../test/support/tls-secrets.js';
import { createTestPki, type TestPki } from '../../../test/support/test-pki.js';
import { X509Certificate } from 'node:crypto';
import { ListenerDefaults } from '../../domain/defaults.js';

/** No worker: rows keep the statuses the API or the test gives them. */
let h: Harness;
let pki: TestPki;
before(async () => {
  h = await startHarness(WITH_KEY_MANAGER);
  await h.runtime.worker?.close();
  pki = createTestPki();
});
after(async () => {
  pki.remove();
  await h.close();
});

const AMPHORA_ID = '6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
type Json = Record<string, any>;

async function createTree(): Promise<Json> {
  const body = {
    loadbalancer: {
      name: 'tree',
      vip_subnet_id: VIP_SUBNET_ID,
      listeners: [
        {
          name: 'web',
          protocol: 'HTTP',
          protocol_port: 8080,
          connection_limit: 500,
          timeout_client_data: 1000,
          insert_headers: { 'X-Forwarded-For': 'true' },
          allowed_cidrs: ['127.0.0.0/8'],
          default_pool: { name: 'web' },
          l7policies: [
            {
              name: 'api',
              action: 'REDIRECT_TO_POOL',
              redirect_pool: { name: 'api' },
              rules: [
                { type: 'PATH', compare_type: 'STARTS_WITH', value: '/api' },
                { type: 'HEADER', compare_type: 'EQUAL_TO', key: 'X-Env', value: 'prod', invert: true },
              ],
            },
            { name: 'first', action: 'REDIRECT_TO_URL', redirect_url: 'https://example.com/', redirect_http_code: 301, position: 1 },
          ],
        },
        { name: 'tcp', protocol: 'TCP', protocol_port: 22, admin_state_up: false },
      ],
      pools: [
        {
          name: 'web',
          protocol: 'HTTP',
          lb_algorithm: 'ROUND_ROBIN',
          healthmonitor: { type: 'HTTP', delay: 3, timeout: 1, max_retries: 2, url_path: '/health', http_version: 1.1, domain_name: 'example.com' },
          members: [
            { address: '127.32.0.1', protocol_port: 8080, subnet_id: MEMBER_SUBNET_ID },
            { address: '127.32.0.2', protocol_port: 8081, weight: 5, backup: true, admin_state_up: false, monitor_address: '127.32.0.9', monitor_port: 9000 },
          ],
        },
        { name: 'api', protocol: 'HTTP', lb_algorithm: 'LEAST_CONNECTIONS', session_persistence: { type: 'APP_COOKIE', cookie_name: 'sid' } },
      ],
    },
  };
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body, as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  return r.json().loadbalancer;
}

const byName = (list: Json[], name: string): Json => list.find((x) => x.name === name)!;

test('every object of the tree maps to the typed config, in listener-port and policy-position order', async () => {
  const lb = await createTree();
  const web = byName(lb.listeners, 'web');
  const tcp = byName(lb.listeners, 'tcp');
  const webPool = byName(lb.pools, 'web');
  const apiPool = byName(lb.pools, 'api');
  const config = await buildAmphoraConfig(h.runtime.db.kysely, h.runtime.keyManager, lb.id, AMPHORA_ID, 7);
  assert.deepEqual(violations(AmphoraConfig, config), []);
  assert.equal(config.version, 7);
  assert.equal(config.loadBalancerId, lb.id);
  assert.equal(config.amphoraId, AMPHORA_ID);
  assert.equal(config.enabled, true);
  assert.deepEqual(config.vip, { address: lb.vip_address, additional: [] });

  assert.deepEqual(config.listeners.map((l) => [l.port, l.id]), [[22, tcp.id], [8080, web.id]]);
  const [tcpConfig, webConfig] = config.listeners;
  assert.deepEqual(tcpConfig, {
    id: tcp.id, protocol: 'TCP', port: 22, enabled: false, connectionLimit: -1,
    timeouts: { clientData: 50000, memberConnect: 5000, memberData: 50000, tcpInspect: 0 },
    insertHeaders: {}, allowedCidrs: null, defaultPoolId: null, l7policies: [], tls: null,
  });
  assert.deepEqual({ ...webConfig, l7policies: undefined }, {
    id: web.id, protocol: 'HTTP', port: 8080, enabled: true, connectionLimit: 500,
    timeouts: { clientData: 1000, memberConnect: 5000, memberData: 50000, tcpInspect: 0 },
    insertHeaders: { 'X-Forwarded-For': 'true' }, allowedCidrs: ['127.0.0.0/8'], defaultPoolId: webPool.id, l7policies: undefined, tls: null,
  });
  const [first, api] = webConfig!.l7policies;
  assert.deepEqual(first, {
    id: first!.id, action: 'REDIRECT_TO_URL', position: 1, enabled: true, redirectPoolId: null,
    redirectUrl: 'https://example.com/', redirectPrefix: null, redirectHttpCode: 301, rules: [],
  });
  assert.equal(api!.position, 2);
  assert.equal(api!.redirectPoolId, apiPool.id);
  // Rules of a policy are AND-ed: their order carries no meaning (and rules made within one second tie).
  assert.deepEqual(api!.rules.map(({ id: _id, ...rest }) => rest).sort((a, b) => a.type.localeCompare(b.type)), [
    { type: 'HEADER', compareType: 'EQUAL_TO', key: 'X-Env', value: 'prod', invert: true, enabled: true },
    { type: 'PATH', compareType: 'STARTS_WITH', key: null, value: '/api', invert: false, enabled: true },
  ]);

  const pools = new Map(config.pools.map((p) => [p.id, p]));
  const wp = pools.get(webPool.id)!;
  assert.deepEqual({ ...wp, members: undefined, monitor: undefined }, {
    id: webPool.id, protocol: 'HTTP', algorithm: 'ROUND_ROBIN', enabled: true, sessionPersistence: null, tls: null, monitor: undefined, members: undefined,
  });
  assert.deepEqual(wp.monitor, {
    id: webPool.healthmonitor.id, type: 'HTTP', enabled: true, delay: 3, timeout: 1, maxRetries: 2, maxRetriesDown: 3,
    httpMethod: 'GET', urlPath: '/health', expectedCodes: '200', httpVersion: 1.1, domainName: 'example.com',
  });
  assert.deepEqual(wp.members.map(({ id: _id, ...rest }) => rest).sort((a, b) => a.port - b.port), [
    { address: '127.32.0.1', port: 8080, weight: 1, backup: false, enabled: true, monitorAddress: null, monitorPort: null },
    { address: '127.32.0.2', port: 8081, weight: 5, backup: true, enabled: false, monitorAddress: '127.32.0.9', monitorPort: 9000 },
  ]);
  const ap = pools.get(apiPool.id)!;
  assert.deepEqual(ap.sessionPersistence, { type: 'APP_COOKIE', cookieName: 'sid' });
  assert.equal(ap.algorithm, 'LEAST_CONNECTIONS');
  assert.equal(ap.monitor, null);
  assert.deepEqual(ap.members, []);
});

test('objects being deleted are left out with everything under them; objects being created or updated are in', async () => {
  const lb = await createTree();
  const db = h.runtime.db.kysely;
  const web = byName(lb.listeners, 'web');
  const tcp = byName(lb.listeners, 'tcp');
  const webPool = byName(lb.pools, 'web');
  const members = await db.selectFrom('member').select(['id', 'protocol_port']).where('pool_id', '=', webPool.id).orderBy('protocol_port').execute();
  const policies = await db.selectFrom('l7policy').select(['id', 'position']).where('listener_id', '=', web.id).orderBy('position').execute();
  const rule = await db.selectFrom('l7rule').select('id').where('l7policy_id', '=', policies[1]!.id).where('type', '=', 'HEADER').executeTakeFirstOrThrow();
  await db.updateTable('listener').set({ provisioning_status: 'PENDING_DELETE' }).where('id', '=', tcp.id).execute();
  await db.updateTable('member').set({ provisioning_status: 'PENDING_DELETE' }).where('id', '=', members[0]!.id).execute();
  await db.updateTable('member').set({ provisioning_status: 'PENDING_UPDATE' }).where('id', '=', members[1]!.id).execute();
  await db.updateTable('health_monitor').set({ provisioning_status: 'PENDING_DELETE' }).where('pool_id', '=', webPool.id).execute();
  await db.updateTable('l7policy').set({ provisioning_status: 'PENDING_DELETE' }).where('id', '=', policies[0]!.id).execute();
  await db.updateTable('l7rule').set({ provisioning_status: 'PENDING_DELETE' }).where('id', '=', rule.id).execute();

  const config = await buildAmphoraConfig(db, h.runtime.keyManager, lb.id, AMPHORA_ID, 1);
  assert.deepEqual(config.listeners.map((l) => l.id), [web.id]);
  const wp = config.pools.find((p) => p.id === webPool.id)!;
  assert.equal(wp.monitor, null);
  assert.deepEqual(wp.members.map((m) => m.id), [members[1]!.id]);
  assert.deepEqual(config.listeners[0]!.l7policies.map((p) => p.id), [policies[1]!.id]);
  assert.deepEqual(config.listeners[0]!.l7policies[0]!.rules.map((r) => r.type), ['PATH']);

  // A default pool being deleted: the listener already points nowhere; the pool and its members are gone.
  await db.updateTable('pool').set({ provisioning_status: 'PENDING_DELETE' }).where('id', '=', webPool.id).execute();
  const without = await buildAmphoraConfig(db, h.runtime.keyManager, lb.id, AMPHORA_ID, 2);
  assert.equal(without.listeners[0]!.defaultPoolId, null);
  assert.deepEqual(without.pools.map((p) => p.id), [byName(lb.pools, 'api').id]);
});

test('the load balancer’s admin state and additional VIPs; a missing load balancer is an error', async () => {
  const lb = await createTree();
  const db = h.runtime.db.kysely;
  await db.updateTable('load_balancer').set({ admin_state_up: 0, additional_vips: JSON.stringify([{ subnet_id: MEMBER_SUBNET_ID, ip_address: '127.32.9.9', port_id: 'p' }]) }).where('id', '=', lb.id).execute();
  const config = await buildAmphoraConfig(db, h.runtime.keyManager, lb.id, AMPHORA_ID, 3);
  assert.equal(config.enabled, false);
  assert.deepEqual(config.vip.additional, ['127.32.9.9']);
  await assert.rejects(buildAmphoraConfig(db, h.runtime.keyManager, '00000000-0000-4000-8000-000000000000', AMPHORA_ID, 1), /does not exist/);
});

const pemCerts = (pem: string) => pem.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g)!.map((c) => new X509Certificate(c).fingerprint256);

test('TLS references become PEM material: certificates in serving order with chain and key, CA bundles, CRLs, protocol settings', async () => {
  const www = pki.leaf({ cn: 'www.example.com', dnsNames: ['www.example.com'] });
  const api = pki.leaf({ cn: 'api.example.com', dnsNames: ['api.example.com'], key: 'ec-p256' });
  const client = pki.leaf({ cn: 'lb-client' });
  const p12 = await storeSecret(h, memberA, pki.pkcs12({ key: www, certs: [www, pki.intermediate], legacy: true }));
  const container = await storeContainer(h, memberA, { certificate: api.certPem, private_key: api.keyPem, intermediates: pki.intermediate.certPem });
  const clientCert = await storeContainer(h, memberA, { certificate: client.certPem, private_key: client.keyPem });
  const ca = await storeSecret(h, memberA, pki.intermediate.certPem + pki.root.certPem);
  const crl = await storeSecret(h, memberA, pki.crl(pki.intermediate).toString());
  const body = {
    loadbalancer: {
      name: 'tls',
      vip_subnet_id: VIP_SUBNET_ID,
      listeners: [{
        protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: p12, sni_container_refs: [container, p12],
        client_authentication: 'MANDATORY', client_ca_tls_container_ref: ca, client_crl_container_ref: crl,
        tls_versions: ['TLSv1.3'], alpn_protocols: ['http/1.1'], hsts_max_age: 600, hsts_preload: true,
        default_pool: { name: 'backend', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', tls_enabled: true, tls_container_ref: clientCert, ca_tls_container_ref: ca },
      }],
    },
  };
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body, as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  const config = await buildAmphoraConfig(h.runtime.db.kysely, h.runtime.keyManager, r.json().loadbalancer.id, AMPHORA_ID, 1);
  assert.deepEqual(violations(AmphoraConfig, config), []);
  const tls = config.listeners[0]!.tls!;
  // The default first, then the SNI certificates not already served; each with its chain, then its key.
  assert.deepEqual(tls.certificates.map(pemCerts), [
    [new X509Certificate(www.certPem).fingerprint256, new X509Certificate(pki.intermediate.certPem).fingerprint256],
    [new X509Certificate(api.certPem).fingerprint256, new X509Certificate(pki.intermediate.certPem).fingerprint256],
  ]);
  for (const pem of tls.certificates) assert.match(pem, /-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\n[^]+-----END PRIVATE KEY-----\n$/);
  assert.deepEqual(pemCerts(tls.clientCa!), [pki.intermediate, pki.root].map((c) => new X509Certificate(c.certPem).fingerprint256));
  assert.match(tls.clientCrl!, /^-----BEGIN X509 CRL-----\n/);
  assert.deepEqual({ ...tls, certificates: undefined, clientCa: undefined, clientCrl: undefined }, {
    certificates: undefined, clientCa: undefined, clientCrl: undefined, clientAuthentication: 'MANDATORY',
    versions: ['TLSv1.3'], ciphers: ListenerDefaults.tls_ciphers, alpn: ['http/1.1'],
    hsts: { maxAge: 600, includeSubdomains: false, preload: true },
  });
  const pool = config.pools[0]!.tls!;
  assert.deepEqual(pemCerts(pool.certificate!), [new X509Certificate(client.certPem).fingerprint256]);
  assert.equal(pool.ca, tls.clientCa);
  assert.equal(pool.crl, null);
  assert.deepEqual(pool.versions, ['TLSv1.2', 'TLSv1.3']);
});

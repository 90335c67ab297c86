import type { ProviderChecks } from '../../provider-contract/provider.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, admin, memberA, type Harness } from '../../../test/support/harness.js';
import { VIP_SUBNET_ID } from '../../config.js';
import { isApiError } from '../../domain/errors.js';
import { pyRepr } from '../profile-data.js';
import { ACTIVE_STANDBY_REFUSAL, amphoraCapabilities, amphoraChecks, balancesUdp, validateAmphoraAvailabilityZoneData, validateAmphoraFlavorData } from './capabilities.js';

/** For the tests through the API; without a worker, amphora load balancers stay as the API wrote them and no amphora is built. */
let h: Harness;
before(async () => {
  h = await startHarness({ api: { enabledProviders: ['noop', 'amphora', 'octavia'] } });
  await h.runtime.worker?.close();
});
after(() => h.close());

const PREFIX = "Provider 'amphora' does not support a requested option: ";

function refusal(fn: () => void): string {
  try {
    fn();
  } catch (e) {
    assert.ok(isApiError(e), String(e));
    assert.equal(e.status, 501);
    assert.ok(e.message.startsWith(PREFIX), e.message);
    return e.message.slice(PREFIX.length);
  }
  assert.fail('accepted');
}


type Checks = Record<keyof ProviderChecks, (...args: unknown[]) => void>;
/** The checks called with only the fields each reads, as these cases give them: under compute.driver local, then netns. */
const checks = amphoraChecks('local') as unknown as Checks;
const netnsChecks = amphoraChecks('netns') as unknown as Checks;

test('pools: SOURCE_IP_PORT, UDP/SCTP and TLS versions with a gap are refused with 501; certificate references and custom TLS pass', () => {
  const pool = { protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', tls_enabled: false };
  for (const lb_algorithm of ['ROUND_ROBIN', 'LEAST_CONNECTIONS', 'SOURCE_IP']) checks.pool!({ ...pool, lb_algorithm });
  checks.pool!({ ...pool, protocol: 'PROXYV2', tls_enabled: true, tls_ciphers: null, tls_versions: null, alpn_protocols: null });
  assert.equal(refusal(() => checks.pool!({ ...pool, lb_algorithm: 'SOURCE_IP_PORT' })), 'Amphora provider does not support SOURCE_IP_PORT algorithm.');
  assert.equal(
    refusal(() => checks.pool!({ ...pool, protocol: 'UDP', lb_algorithm: 'SOURCE_IP' })),
    'Amphora provider does not support UDP pools under compute.driver local: amphorae balance UDP with nftables in a network namespace of their own. Use compute.driver netns.',
  );
  assert.equal(refusal(() => checks.pool!({ ...pool, protocol: 'SCTP', lb_algorithm: 'SOURCE_IP' })), 'Amphora provider does not support SCTP pools: Ostia amphorae balance SCTP nowhere (no LVS).');
  for (const ref of ['tls_container_ref', 'ca_tls_container_ref', 'crl_container_ref']) checks.pool!({ ...pool, tls_enabled: true, [ref]: 'https://barbican/v1/secrets/x' });
  for (const custom of [{ tls_ciphers: 'ECDHE-RSA-AES128-GCM-SHA256' }, { tls_versions: ['TLSv1.3'] }, { tls_versions: ['TLSv1.3', 'TLSv1.1', 'TLSv1.2'] }, { alpn_protocols: ['h2'] }])
    checks.pool!({ ...pool, tls_enabled: true, ...custom });
  assert.match(refusal(() => checks.pool!({ ...pool, tls_enabled: true, tls_versions: ['TLSv1', 'TLSv1.2'] })), /^Amphora provider does not support tls_versions \["TLSv1","TLSv1.2"\]: HAProxy enables one range/);
});

test('listeners: UDP/SCTP and PROMETHEUS are refused; TCP, HTTP, HTTPS and TERMINATED_HTTPS pass', () => {
  for (const protocol of ['TCP', 'HTTP', 'HTTPS']) checks.listener!({ protocol });
  checks.listener!({ protocol: 'TERMINATED_HTTPS', tls_versions: ['TLSv1.2', 'TLSv1.3'] });
  assert.match(refusal(() => checks.listener!({ protocol: 'UDP' })), /^Amphora provider does not support UDP listeners under compute.driver local: .* Use compute.driver netns.$/);
  assert.match(refusal(() => checks.listener!({ protocol: 'SCTP' })), /^Amphora provider does not support SCTP listeners/);
  assert.equal(refusal(() => checks.listener!({ protocol: 'PROMETHEUS' })), 'Amphora provider does not support PROMETHEUS listeners yet.');
  assert.match(refusal(() => checks.listener!({ protocol: 'TERMINATED_HTTPS', tls_versions: ['TLSv1.1', 'TLSv1.3'] })), /does not support tls_versions/);
});

test('under compute.driver netns UDP listeners, ROUND_ROBIN and SOURCE_IP UDP pools and the monitors the agent runs pass; the rest is refused in words of its own', () => {
  assert.equal(balancesUdp('netns'), true);
  for (const compute of ['local', 'noop'] as const) assert.equal(balancesUdp(compute), false, compute);
  netnsChecks.listener!({ protocol: 'UDP' });
  for (const lb_algorithm of ['ROUND_ROBIN', 'SOURCE_IP']) netnsChecks.pool!({ protocol: 'UDP', lb_algorithm, tls_enabled: false });
  assert.equal(
    refusal(() => netnsChecks.pool!({ protocol: 'UDP', lb_algorithm: 'LEAST_CONNECTIONS', tls_enabled: false })),
    'Amphora provider does not support LEAST_CONNECTIONS algorithm for UDP pools: nftables balances them by turn (ROUND_ROBIN) or by source address (SOURCE_IP).',
  );
  netnsChecks.pool!({ protocol: 'TCP', lb_algorithm: 'LEAST_CONNECTIONS', tls_enabled: false });
  for (const type of ['UDP-CONNECT', 'TCP', 'HTTP']) netnsChecks.healthMonitor!({ type }, { protocol: 'UDP' });
  assert.equal(
    refusal(() => netnsChecks.healthMonitor!({ type: 'SCTP' }, { protocol: 'UDP' })),
    'Amphora provider does not support SCTP health monitors on UDP pools: the agent checks UDP members with UDP-CONNECT, TCP, HTTP, PING.',
  );
  assert.match(refusal(() => netnsChecks.listener!({ protocol: 'SCTP' })), /^Amphora provider does not support SCTP listeners: .*no LVS/);
  const refusedUnder = (compute: 'local' | 'netns') => amphoraCapabilities(compute).unsupported().map((u) => `${u.feature}=${u.value}`);
  assert.deepEqual(
    refusedUnder('local').filter((r) => !refusedUnder('netns').includes(r)),
    ['listener.protocol=UDP', 'pool.protocol=UDP'],
    'netns takes exactly UDP on top of what local takes',
  );
});

test('L7 policies on non-HTTP listeners are refused', () => {
  for (const type of ['HTTP', 'HTTPS', 'PING', 'TCP', 'TLS-HELLO']) checks.healthMonitor!({ type }, { protocol: 'HTTP' });
  checks.l7policy!({}, { protocol: 'HTTP' });
  checks.l7policy!({}, { protocol: 'TERMINATED_HTTPS' });
  for (const protocol of ['TCP', 'HTTPS']) assert.equal(refusal(() => checks.l7policy!({}, { protocol })), `${protocol} protocol listeners do not support L7 policies`);
});

test('flavor data: Octavia’s keys and jsonschema messages; ACTIVE_STANDBY and SR-IOV are refused', () => {
  validateAmphoraFlavorData({});
  validateAmphoraFlavorData({ loadbalancer_topology: 'SINGLE', compute_flavor: 'm1.amphora', amp_image_tag: 'amphora', sriov_vip: false, allow_member_sriov: false });
  assert.equal(refusal(() => validateAmphoraFlavorData({ foo: 1, bar: 2 })), "Additional properties are not allowed ('bar', 'foo' were unexpected)");
  assert.equal(refusal(() => validateAmphoraFlavorData({ loadbalancer_topology: 'FOO' })), "loadbalancer_topology 'FOO' is not one of ['SINGLE', 'ACTIVE_STANDBY']");
  assert.equal(refusal(() => validateAmphoraFlavorData({ compute_flavor: 5 })), "compute_flavor 5 is not of type 'string'");
  assert.equal(refusal(() => validateAmphoraFlavorData({ sriov_vip: 'yes' })), "sriov_vip 'yes' is not of type 'boolean'");
  assert.equal(
    refusal(() => validateAmphoraFlavorData({ loadbalancer_topology: 'ACTIVE_STANDBY' })),
    ACTIVE_STANDBY_REFUSAL,
  );
  assert.equal(refusal(() => validateAmphoraFlavorData({ allow_member_sriov: true })), 'allow_member_sriov True is not supported: loopback networking has no SR-IOV.');
});

test('availability zone data: zones are accepted, the management network and VIP network lists are refused', () => {
  validateAmphoraAvailabilityZoneData({ compute_zone: 'nova', volume_zone: 'ssd' });
  assert.equal(refusal(() => validateAmphoraAvailabilityZoneData({ valid_vip_networks: 'net' })), "valid_vip_networks 'net' is not of type 'array'");
  assert.match(refusal(() => validateAmphoraAvailabilityZoneData({ management_network: 'net' })), /^management_network is not supported: the loopback network driver/);
  assert.match(refusal(() => validateAmphoraAvailabilityZoneData({ valid_vip_networks: [] })), /^valid_vip_networks is not supported: every configured VIP network may be used\.$/);
});

test('Python reprs as jsonschema prints them', () => {
  assert.equal(pyRepr("it's"), `"it's"`);
  assert.equal(pyRepr(`a'"b`), `'a\\'"b'`);
  assert.deepEqual([pyRepr(null), pyRepr(true), pyRepr(1.5), pyRepr({ a: [1, 'x'] })], ['None', 'True', '1.5', "{'a': [1, 'x']}"]);
});

test('the API lists amphora and its alias, with the amphora capabilities', async () => {
  const providers = (await h.request('GET', '/v2/lbaas/providers', { as: memberA })).json().providers;
  assert.deepEqual(providers.map((p: { name: string }) => p.name), ['noop', 'amphora', 'octavia']);
  assert.match(providers[2].description, /^Deprecated alias of the Octavia Amphora driver\./);
  const caps = (await h.request('GET', '/v2/lbaas/providers/amphora/flavor_capabilities', { as: admin })).json().flavor_capabilities;
  assert.deepEqual(caps.map((c: { name: string }) => c.name), ['loadbalancer_topology', 'compute_flavor', 'amp_image_tag', 'sriov_vip', 'allow_member_sriov']);
  const zones = (await h.request('GET', '/v2/lbaas/providers/amphora/availability_zone_capabilities', { as: admin })).json().availability_zone_capabilities;
  assert.deepEqual(zones.map((c: { name: string }) => c.name), ['compute_zone', 'volume_zone', 'management_network', 'valid_vip_networks']);
});

test('flavor profiles and refused objects answer 501 with Octavia’s faultstring, and nothing is written', async () => {
  const fp = await h.request('POST', '/v2/lbaas/flavorprofiles', {
    body: { flavorprofile: { name: 'ha', provider_name: 'amphora', flavor_data: '{"loadbalancer_topology": "ACTIVE_STANDBY"}' } },
    as: admin,
  });
  assert.equal(fp.statusCode, 501);
  assert.equal(fp.json().faultcode, 'Server');
  assert.equal(fp.json().faultstring, `${PREFIX}${ACTIVE_STANDBY_REFUSAL}`);

  const graph = await h.request('POST', '/v2/lbaas/loadbalancers', {
    body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, provider: 'amphora', listeners: [{ protocol: 'UDP', protocol_port: 53 }] } },
    as: memberA,
  });
  assert.equal(graph.statusCode, 501);
  assert.match(graph.json().faultstring, /does not support UDP listeners/);
  assert.equal(await h.runtime.db.kysely.selectFrom('load_balancer').select('id').where('provider', '=', 'amphora').executeTakeFirst(), undefined);

  const lb = (await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, provider: 'amphora' } }, as: memberA })).json().loadbalancer;
  await h.runtime.db.kysely.updateTable('load_balancer').set({ provisioning_status: 'ACTIVE' }).where('id', '=', lb.id).execute();
  const pool = await h.request('POST', '/v2/lbaas/pools', { body: { pool: { loadbalancer_id: lb.id, protocol: 'HTTP', lb_algorithm: 'SOURCE_IP_PORT' } }, as: memberA });
  assert.equal(pool.statusCode, 501);
  assert.equal(pool.json().faultstring, `${PREFIX}Amphora provider does not support SOURCE_IP_PORT algorithm.`);
  const row = await h.runtime.db.kysely.selectFrom('load_balancer').select('provisioning_status').where('id', '=', lb.id).executeTakeFirstOrThrow();
  assert.equal(row.provisioning_status, 'ACTIVE');
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bridgeManagementNetwork, checkNamespaceDrivers, defaultConfig, deepMerge, validateConfig, ConfigError, providersNeedingRealNetwork } from './config.js';

test('the embedded defaults are a valid config', () => {
  assert.doesNotThrow(() => validateConfig(defaultConfig('/tmp/x')));
});

test('a misspelt key fails at start with the path that is wrong', () => {
  const bad = deepMerge(defaultConfig('/tmp/x'), { api: { hots: '0.0.0.0' } });
  assert.throws(() => validateConfig(bad), (e: Error) => e instanceof ConfigError && /\/api\/hots/.test(e.message));
});

test('a wrong type and an unknown default provider are refused', () => {
  assert.throws(() => validateConfig(deepMerge(defaultConfig('/tmp/x'), { api: { port: 'eighty' } })), /\/api\/port/);
  assert.throws(() => validateConfig(deepMerge(defaultConfig('/tmp/x'), { api: { defaultProvider: 'ovn' } })), /defaultProvider 'ovn' is not in api.enabledProviders/);
});

test('amphora.healthListen is host:port with a fixed port, IPv6 in brackets', () => {
  const withListen = (healthListen: string) => validateConfig(deepMerge(defaultConfig('/tmp/x'), { amphora: { healthListen } }));
  assert.equal(withListen('[::1]:5556').amphora.healthListen, '[::1]:5556');
  assert.throws(() => withListen('localhost'), (e: Error) => e instanceof ConfigError && /amphora.healthListen must be host:port, got 'localhost'/.test(e.message));
  assert.throws(() => withListen('127.0.0.1:0'), /port 0: amphorae are told this address .* set a fixed free UDP port/);
});

test('files merge over defaults: objects key by key, lists replaced', () => {
  const merged = deepMerge(defaultConfig('/tmp/x'), { api: { port: 1234 }, network: { qosPolicies: [] } });
  assert.equal(merged.api.port, 1234);
  assert.equal(merged.api.host, '127.0.0.1');
  assert.deepEqual(merged.network.qosPolicies, []);
});

test('network.driver is catalog by default; noop goes only with providers that serve no VIP', () => {
  assert.equal(validateConfig(defaultConfig('/tmp/x')).network.driver, 'catalog');
  const ovn = { nbConnection: 'unix:/nb.sock', sbConnection: 'unix:/sb.sock' };
  const withNoop = (api: object) => validateConfig(deepMerge(defaultConfig('/tmp/x'), { network: { driver: 'noop' }, api, ovn }));
  assert.equal(withNoop({ enabledProviders: ['noop'], defaultProvider: 'noop' }).network.driver, 'noop');
  assert.throws(() => validateConfig(deepMerge(defaultConfig('/tmp/x'), { network: { driver: 'neutron' } })), /\/network\/driver/);
  // The default providers include amphora, whose amphorae would have to bind the synthetic VIPs.
  assert.throws(
    () => withNoop({}),
    (e: Error) => e instanceof ConfigError && /network.driver is noop .* the amphora provider would have to serve them: set compute.driver: noop .*now 'local'.*set network.driver: catalog/.test(e.message),
  );
  assert.throws(
    () => withNoop({ enabledProviders: ['noop', 'ovn'], defaultProvider: 'noop' }),
    (e: Error) => e instanceof ConfigError && /the ovn provider would have to serve them: remove ovn from api.enabledProviders/.test(e.message),
  );
});

test('ovn.integrationBridge plugs netns amphorae into OVN: refused without them, or without the Northbound database', () => {
  const integrationBridge = { ovsdb: 'unix:/var/run/openvswitch/db.sock' };
  assert.equal(validateConfig(defaultConfig('/tmp/x')).ovn.integrationBridge.ovsdb, '', 'off by default');
  assert.throws(
    () => validateConfig(deepMerge(defaultConfig('/tmp/x'), { ovn: { nbConnection: 'unix:/nb.sock', integrationBridge } })),
    (e: Error) => e instanceof ConfigError && /needs compute.driver netns and network.driver bridge/.test(e.message),
  );
  assert.throws(
    () => validateConfig(deepMerge(defaultConfig('/tmp/x'), { compute: { driver: 'netns' }, network: { driver: 'bridge' }, ovn: { integrationBridge } })),
    (e: Error) => e instanceof ConfigError && /ovn.nbConnection is empty/.test(e.message),
  );
});

test('providersNeedingRealNetwork names each provider with its remedy', () => {
  const config = defaultConfig('/tmp/x');
  assert.deepEqual(providersNeedingRealNetwork(config).map((n) => n.provider), ['amphora']);
  assert.deepEqual(providersNeedingRealNetwork({ ...config, api: { ...config.api, enabledProviders: ['noop'] } }), []);
});

test('compute.driver is local by default, noop on request, and anything else is refused by name', () => {
  const withDriver = (driver: unknown) => validateConfig(deepMerge(defaultConfig('/tmp/x'), { compute: { driver } }));
  assert.equal(validateConfig(defaultConfig('/tmp/x')).compute.driver, 'local');
  assert.equal(withDriver('noop').compute.driver, 'noop');
  assert.throws(() => withDriver('qemu'), (e: Error) => e instanceof ConfigError && e.message === 'invalid configuration:\n  /compute/driver: "qemu" is not one of local, netns, noop');
  // Every choice among fixed values is said with its values.
  for (const [key, patch] of [['/network/driver', { network: { driver: 'neutron' } }], ['/api/policy', { api: { policy: 'strict' } }], ['/identity/mode', { identity: { mode: 'ldap' } }]] as const)
    assert.throws(() => validateConfig(deepMerge(defaultConfig('/tmp/x'), patch)), (e: Error) => new RegExp(`${key}: "\\w+" is not one of \\w+, \\w+`).test(e.message));
  assert.throws(() => validateConfig(deepMerge(defaultConfig('/tmp/x'), { compute: { driver: 'noop', drvier: 'x' } })), /compute/);
});

test('compute.driver netns and network.driver bridge go together, and need root', () => {
  const drivers = (compute: string, network: string) => ({ compute: { driver: compute }, network: { driver: network } }) as Parameters<typeof checkNamespaceDrivers>[0];
  assert.throws(() => checkNamespaceDrivers(drivers('netns', 'catalog'), 0), /^Error: compute.driver netns needs network.driver bridge .*now 'catalog'\)$/);
  assert.throws(() => checkNamespaceDrivers(drivers('local', 'bridge'), 0), /network.driver bridge needs compute.driver netns \(amphorae of 'local' cannot plug into its bridges\)/);
  assert.throws(
    () => checkNamespaceDrivers(drivers('netns', 'bridge'), 1000),
    (e: Error) => e instanceof ConfigError && /cannot run here: creating network namespaces, bridges and veths needs root\. Run Ostia as root, or use compute.driver local and network.driver catalog/.test(e.message),
  );
  assert.doesNotThrow(() => checkNamespaceDrivers(drivers('local', 'catalog'), 1000));
});

test('under network.driver bridge the management network and heartbeat address default to a /24 of 198.18.0.0/15 chosen by the data directory', { skip: process.getuid?.() === 0 ? false : 'validating netns + bridge needs root' }, () => {
  const bridged = (dataDir: string, over: unknown = {}) => validateConfig(deepMerge(defaultConfig(dataDir), deepMerge({ compute: { driver: 'netns' }, network: { driver: 'bridge' } }, over)));
  const a = bridged('/tmp/ostia-a');
  const { managementNetwork, controllerAddress } = bridgeManagementNetwork('/tmp/ostia-a');
  assert.deepEqual(a.amphora.managementNetwork, managementNetwork);
  assert.match(managementNetwork.cidr, /^198\.1[89]\.\d+\.0\/24$/);
  assert.equal(managementNetwork.start, managementNetwork.cidr.replace('.0/24', '.10'));
  assert.equal(a.amphora.healthListen, `${controllerAddress}:5555`);
  assert.equal(controllerAddress, managementNetwork.cidr.replace('.0/24', '.1'));
  assert.deepEqual(bridged('/tmp/ostia-a').amphora, a.amphora, 'the same data directory, the same network');
  assert.notDeepEqual(bridgeManagementNetwork('/tmp/ostia-b').managementNetwork, managementNetwork);
  const own = { cidr: '10.99.0.0/24', start: '10.99.0.10', end: '10.99.0.20' };
  assert.deepEqual(bridged('/tmp/ostia-a', { amphora: { managementNetwork: own, healthListen: '10.99.0.1:6000' } }).amphora.managementNetwork, own, 'a configured network is kept');
  assert.equal(validateConfig(defaultConfig('/tmp/ostia-a')).amphora.managementNetwork.cidr, '127.80.0.0/16', 'catalog keeps loopback');
});

test('network.allowControlPlaneMembers is off by default, a boolean, and the member address settings are checked at start', () => {
  const over = (o: unknown) => validateConfig(deepMerge(defaultConfig('/tmp/x'), o));
  assert.equal(validateConfig(defaultConfig('/tmp/x')).network.allowControlPlaneMembers, false);
  assert.equal(over({ network: { allowControlPlaneMembers: true } }).network.allowControlPlaneMembers, true);
  assert.throws(() => over({ network: { allowControlPlaneMembers: 'yes' } }), /\/network\/allowControlPlaneMembers/);
  assert.throws(() => over({ network: { reservedMemberAddresses: ['metadata'] } }), /network\.reservedMemberAddresses\[0\] 'metadata' is not an IP address/);
  assert.throws(() => over({ amphora: { managementNetwork: { cidr: '127.80.0.0' } } }), /amphora\.managementNetwork\.cidr '127\.80\.0\.0' is not a CIDR/);
});

test("a security group rule Neutron would refuse fails at start, naming the group and the rule", () => {
  const withRule = (rule: object) => validateConfig(deepMerge(defaultConfig('/tmp/x'), { network: { securityGroups: [{ id: 'g', name: 'web', rules: [rule] }] } }));
  const base = { direction: 'ingress', ethertype: 'IPv4', protocol: 'tcp', port_range_min: 80, port_range_max: 80, remote_ip_prefix: '10.0.0.0/8' };
  assert.equal(withRule(base).network.securityGroups[0]!.rules!.length, 1);
  assert.throws(() => withRule({ ...base, remote_ip_prefix: 'fd00::/8' }), /network\.securityGroups\[0\]\.rules\[0\] \(group web\): remote_ip_prefix 'fd00::\/8' is not of ethertype IPv4/);
  assert.throws(() => withRule({ ...base, protocol: 'icmp' }), /port ranges apply to tcp, udp and sctp only/);
  assert.throws(() => withRule({ ...base, port_range_max: null }), /go together/);
  assert.throws(() => withRule({ ...base, port_range_min: 90 }), /port_range_min 90 is above port_range_max 80/);
  assert.throws(() => withRule({ ...base, protocol: 'gre' }), /\/network\/securityGroups\/0\/rules\/0\/protocol/);
});

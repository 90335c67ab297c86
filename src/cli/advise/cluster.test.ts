import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ovnCapabilities } from '../../providers/ovn/capabilities.js';
import { adviseCluster, adviseService, NODE_PORT_RANGE, type ClusterInput } from './cluster.js';
import { ANNOTATIONS, type CpoSettings } from './cpo.js';
import { readServices, type KubeService } from './services.js';

/** The table's own words for (feature, value): what every refusal must carry. */
const said = (feature: string, value: string) => ovnCapabilities.unsupported().find((u) => u.feature === feature && u.value === value)!.reason;
const OVN: CpoSettings = { lbMethod: 'SOURCE_IP_PORT', createMonitor: true, manageSecurityGroups: false };

function svc(spec: Partial<KubeService['spec']> = {}, annotations: Record<string, string> = {}, name = 'web'): KubeService {
  return { kind: 'Service', metadata: { name, namespace: 'shop', annotations }, spec: { type: 'LoadBalancer', ipFamilies: ['IPv4'], ports: [{ port: 80, protocol: 'TCP', nodePort: 31080 }], ...spec } };
}
const refused = (s: KubeService, settings = OVN) => adviseService(s, settings).refusals.map((r) => [r.feature, r.value, r.reason]);

test('a plain TCP or UDP Service fits OVN: its listener, pool, SOURCE_IP_PORT and TCP / UDP-CONNECT monitor are in the table', () => {
  const tcp = adviseService(svc(), OVN);
  assert.equal(tcp.verdict, 'fits-ovn');
  assert.deepEqual(tcp.refusals, []);
  assert.match(tcp.explanation, /^Fits OVN/);
  assert.equal(adviseService(svc({ ports: [{ port: 53, protocol: 'UDP' }] }), OVN).verdict, 'fits-ovn');
});

test('SCTP fits without a monitor; with one, CPO asks for an SCTP monitor, which OVN refuses', () => {
  const sctp = { ports: [{ port: 3868, protocol: 'SCTP' }] };
  assert.deepEqual(refused(svc(sctp)), [['healthmonitor.type', 'SCTP', said('healthmonitor.type', 'SCTP')]]);
  assert.deepEqual(refused(svc(sctp, { [ANNOTATIONS.enableHealthMonitor]: 'false' })), []);
  assert.deepEqual(refused(svc(sctp), { ...OVN, createMonitor: false }), []);
  assert.deepEqual(refused(svc({}, { [ANNOTATIONS.enableHealthMonitor]: 'true' }), { ...OVN, createMonitor: false }), []);
});

test('lb-method: ROUND_ROBIN and LEAST_CONNECTIONS are refused in the table\'s words; SOURCE_IP and SOURCE_IP_PORT fit', () => {
  for (const method of ['ROUND_ROBIN', 'LEAST_CONNECTIONS']) assert.deepEqual(refused(svc({}, { [ANNOTATIONS.lbMethod]: method })), [['pool.lb_algorithm', method, said('pool.lb_algorithm', method)]]);
  for (const method of ['SOURCE_IP', 'SOURCE_IP_PORT']) assert.deepEqual(refused(svc({}, { [ANNOTATIONS.lbMethod]: method })), []);
});

test('x-forwarded-for builds HTTP listeners and pools; TLS terminates at the load balancer; PROXY protocol pools: all refused', () => {
  assert.deepEqual(refused(svc({}, { [ANNOTATIONS.xForwardedFor]: 'true' })), [
    ['listener.protocol', 'HTTP', said('listener.protocol', 'HTTP')],
    ['pool.protocol', 'HTTP', said('pool.protocol', 'HTTP')],
  ]);
  assert.deepEqual(refused(svc({}, { [ANNOTATIONS.xForwardedFor]: 'false' })), []);
  assert.deepEqual(refused(svc({}, { [ANNOTATIONS.tlsContainerRef]: 'https://barbican/v1/containers/x' })), [
    ['listener.protocol', 'TERMINATED_HTTPS', said('listener.protocol', 'TERMINATED_HTTPS')],
    ['pool.protocol', 'HTTP', said('pool.protocol', 'HTTP')],
  ]);
  assert.deepEqual(refused(svc({}, { [ANNOTATIONS.proxyProtocol]: 'v2' })), [['pool.protocol', 'PROXYV2', said('pool.protocol', 'PROXYV2')]]);
  assert.deepEqual(refused(svc({}, { [ANNOTATIONS.proxyProtocol]: 'true' })), [['pool.protocol', 'PROXY', said('pool.protocol', 'PROXY')]]);
  const both = adviseService(svc({}, { [ANNOTATIONS.proxyProtocol]: 'v1', [ANNOTATIONS.xForwardedFor]: 'true' }), OVN);
  assert.ok(both.notes.some((n) => /cannot be used together|refuses the Service on either provider/.test(n)));
});

test('a boolean annotation other than true or false takes CPO\'s default, and says so', () => {
  const odd = adviseService(svc({}, { [ANNOTATIONS.xForwardedFor]: 'yes' }), OVN);
  assert.equal(odd.verdict, 'fits-ovn');
  assert.match(odd.notes.join('\n'), /x-forwarded-for="yes" is neither true nor false: CPO takes its default, false/);
});

test('flavor-id and availability-zone: the OVN provider validates neither', () => {
  assert.deepEqual(refused(svc({}, { [ANNOTATIONS.flavorId]: 'f1', [ANNOTATIONS.availabilityZone]: 'az1' })), [
    ['flavor', 'validate', said('flavor', 'validate')],
    ['availability_zone', 'validate', said('availability_zone', 'validate')],
  ]);
});

test('keep-floatingip, connection-limit and timeouts fit OVN, each with a note of what OVN does with it', () => {
  const s = adviseService(
    svc({}, { [ANNOTATIONS.keepFloatingIp]: 'true', [ANNOTATIONS.connectionLimit]: '100', 'loadbalancer.openstack.org/timeout-client-data': '60000' }),
    OVN,
  );
  assert.equal(s.verdict, 'fits-ovn');
  assert.equal(s.notes.length, 3);
  assert.match(s.notes.join('\n'), /keep-floatingip=true.*kept the same way on OVN/);
  assert.match(s.notes.join('\n'), /connection_limit but does not enforce it/);
  assert.match(s.notes.join('\n'), /timeout-client-data: CPO sends no listener timeouts/);
});

test('loadBalancerSourceRanges (field or annotation) become allowed_cidrs, which OVN refuses, unless CPO manages security groups', () => {
  const ranges = svc({ loadBalancerSourceRanges: ['203.0.113.0/24'] });
  assert.deepEqual(refused(ranges), [['listener.allowed_cidrs', 'present', said('listener.allowed_cidrs', 'present')]]);
  assert.deepEqual(refused(svc({}, { [ANNOTATIONS.sourceRanges]: '198.51.100.0/24, 203.0.113.0/24' })), [['listener.allowed_cidrs', 'present', said('listener.allowed_cidrs', 'present')]]);
  const managed = adviseService(ranges, { ...OVN, manageSecurityGroups: true });
  assert.equal(managed.verdict, 'fits-ovn');
  assert.match(managed.notes.join('\n'), /enforces them on the members' security group/);
});

test("externalTrafficPolicy: Local asks for an HTTP monitor and member monitor ports, both refused; ClientIP affinity (SOURCE_IP) fits", () => {
  assert.deepEqual(refused(svc({ externalTrafficPolicy: 'Local', healthCheckNodePort: 32100 })), [
    ['member.monitor_address_or_port', 'present', said('member.monitor_address_or_port', 'present')],
    ['healthmonitor.type', 'HTTP', said('healthmonitor.type', 'HTTP')],
  ]);
  assert.deepEqual(refused(svc({ externalTrafficPolicy: 'Local', healthCheckNodePort: 32100 }, { [ANNOTATIONS.enableHealthMonitor]: 'false' })), []);
  assert.deepEqual(refused(svc({ sessionAffinity: 'ClientIP' })), []);
});

test('mixed IP families: an internal IPv4 loadBalancerIP over IPv6 members is refused; dual-stack serves the first family, noted', () => {
  assert.deepEqual(refused(svc({ ipFamilies: ['IPv6'], loadBalancerIP: '10.0.0.5' }, { [ANNOTATIONS.internal]: 'true' })), [['member.ip_version', 'mixed', said('member.ip_version', 'mixed')]]);
  assert.deepEqual(refused(svc({ ipFamilies: ['IPv4'], loadBalancerIP: '2001:db8::5' })), [], 'an external IPv4 load balancer takes loadBalancerIP as its floating IP, not its VIP');
  const dual = adviseService(svc({ ipFamilies: ['IPv4', 'IPv6'] }), OVN);
  assert.equal(dual.verdict, 'fits-ovn');
  assert.match(dual.notes.join('\n'), /first family only/);
});

const cluster = (services: KubeService[], more: Partial<ClusterInput> = {}) => adviseCluster({ cluster: 'c1', services, labels: {}, topology: 'SINGLE', manageSecurityGroups: false, ...more });

test('a cluster fits OVN when every Service does: all its amphorae are saved, NodePorts open to the world, the labels to set, the API load balancer warning', () => {
  const c = cluster([svc(), svc({ ports: [{ port: 53, protocol: 'UDP', nodePort: 30053 }] }, {}, 'dns'), svc({ type: 'ClusterIP' }, {}, 'internal')], { topology: 'ACTIVE_STANDBY', labels: { octavia_provider: 'amphora' } });
  assert.equal(c.verdict, 'fits-ovn');
  assert.deepEqual([c.loadBalancers, c.loadBalancersFitting, c.amphoraeToday, c.amphoraeAfter, c.amphoraeSaved], [2, 2, 4, 0, 4]);
  assert.deepEqual(c.skipped, [{ service: 'shop/internal', reason: 'type ClusterIP: no load balancer' }]);
  assert.equal(c.nodePorts.openRange, NODE_PORT_RANGE);
  assert.deepEqual(c.nodePorts.ports.map((p) => [p.nodePort, p.protocol, p.sources]), [[31080, 'TCP', ['0.0.0.0/0']], [30053, 'UDP', ['0.0.0.0/0']]]);
  assert.deepEqual(c.labels.map((l) => [l.label, l.value, l.current]), [['octavia_provider', 'ovn', 'amphora'], ['octavia_lb_algorithm', 'SOURCE_IP_PORT', null], ['octavia_lb_healthcheck', 'true', null]]);
  assert.match(c.apiServer, /keeps its provider on update.*stays on amphora \(2 amphora\(e\)\)/);
  assert.ok(c.apiServer.includes(said('listener.allowed_cidrs', 'present')));
});

test('one refused Service keeps the whole cluster on amphora: nothing saved, and what its fixing would save', () => {
  const c = cluster([svc(), svc({}, { [ANNOTATIONS.lbMethod]: 'ROUND_ROBIN' }, 'rr')]);
  assert.equal(c.verdict, 'needs-amphora');
  assert.deepEqual([c.loadBalancers, c.loadBalancersFitting, c.amphoraeToday, c.amphoraeAfter, c.amphoraeSaved], [2, 1, 2, 2, 0]);
  assert.match(c.explanation, /1 of 2 Service\(s\).*one lb-provider per cluster.*1 amphora\(e\) would be saved/);
});

test('Services sharing a load balancer count once; with manage-security-groups each NodePort opens to its source ranges only', () => {
  const shared = { [ANNOTATIONS.loadBalancerId]: 'lb-1' };
  const c = cluster([svc({ loadBalancerSourceRanges: ['203.0.113.0/24'] }, shared), svc({ ports: [{ port: 81, protocol: 'TCP', nodePort: 31081 }] }, shared, 'b')], { manageSecurityGroups: true });
  assert.equal(c.loadBalancers, 1);
  assert.equal(c.verdict, 'fits-ovn');
  assert.equal(c.nodePorts.openRange, null);
  assert.deepEqual(c.nodePorts.ports.map((p) => p.sources), [['203.0.113.0/24'], ['0.0.0.0/0']]);
});

test('a cluster on OVN already saves nothing; a refused Service there needs an amphora cluster; another controller\'s Service is skipped', () => {
  const onOvn = cluster([svc(), svc({ loadBalancerClass: 'metallb' }, {}, 'm')], { labels: { octavia_provider: 'ovn' } });
  assert.deepEqual([onOvn.verdict, onOvn.amphoraeToday, onOvn.amphoraeSaved], ['fits-ovn', 0, 0]);
  assert.match(onOvn.skipped[0]!.reason, /another controller's/);
  assert.doesNotMatch(onOvn.apiServer, /stays on amphora/);
  const refusedOnOvn = cluster([svc({}, { [ANNOTATIONS.xForwardedFor]: 'true' })], { labels: { octavia_provider: 'ovn' } });
  assert.equal(refusedOnOvn.verdict, 'needs-amphora');
  assert.match(refusedOnOvn.explanation, /on OVN already/);
  const empty = cluster([]);
  assert.deepEqual([empty.verdict, empty.loadBalancers], ['fits-ovn', 0]);
  assert.match(empty.explanation, /no Service of type LoadBalancer/);
});

test('manifests: kubectl\'s List, several documents, other kinds passed over; a malformed Service is named by document and item', () => {
  const list = 'kind: List\nitems:\n- {kind: Service, metadata: {name: a}, spec: {type: LoadBalancer}}\n- {kind: ConfigMap, metadata: {name: x}}\n';
  const docs = `${list}---\nkind: Service\nmetadata: {name: b, namespace: n}\nspec: {ports: [{port: 1}]}\n`;
  assert.deepEqual(readServices(docs, 'f.yaml').map((s) => s.metadata.name), ['a', 'b']);
  assert.throws(() => readServices('kind: List\nitems:\n- {kind: Service, metadata: {name: a}, spec: {ports: [{port: eighty}]}}\n', 'f.yaml'), /f\.yaml: document 1, item 1: \/spec\/ports\/0\/port/);
  assert.throws(() => readServices('kind: Service\nmetadata: {name: [\n', 'g.yaml'), /g\.yaml: document 1:/);
});

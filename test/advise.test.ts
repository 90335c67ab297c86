/**
 * `ostia advise` as an operator runs it, a child process: on Services as kubectl prints them (the
 * README's example, a List, and documents of Services), and with --from-live on the database of a
 * running service (SQLite in its data directory; its PostgreSQL in the second pass) holding amphora
 * load balancers (noop compute) and, where OVN runs here, a real OVN one. Every verdict, the --json
 * shape, and the picture holding the figures the table printed.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { XMLValidator } from 'fast-xml-parser';
import { defaultConfig } from '../src/config.js';
import { NEEDS_AMPHORA_EXIT } from '../src/cli/advise.js';
import type { ClusterAdvice } from '../src/cli/advise/cluster.js';
import type { LiveSummary } from '../src/tools/advise/summary.js';
import { ovnCapabilities } from '../src/providers/ovn/capabilities.js';
import { repoRoot, runOstia } from './support/ostia-process.js';
import { startHarness, memberA, type Harness } from './support/harness.js';
import { PUBLIC_SUBNET, startOvnLab, type OvnLab } from './support/ovn-lab.js';
import { unmet } from './support/requirements.js';
import { svgTexts } from './support/svg.js';

const said = (feature: string, value: string) => ovnCapabilities.unsupported().find((u) => u.feature === feature && u.value === value)!.reason;
const SHOP = join(repoRoot(), 'examples', 'advise', 'shop.yaml');
const ovnSkip = unmet('ovn-sandbox');
let dir: string;
let dataDir: string;
let lab: OvnLab | undefined;
let h: Harness;
const lbs: Record<string, string> = {};

const EDGE = `apiVersion: v1
kind: Service
metadata:
  name: gateway
  namespace: edge
  annotations:
    loadbalancer.openstack.org/keep-floatingip: "true"
spec:
  type: LoadBalancer
  ipFamilies: [IPv4]
  ports:
  - {port: 443, protocol: TCP, nodePort: 30443}
---
apiVersion: v1
kind: Service
metadata:
  name: diameter
  namespace: edge
  annotations:
    loadbalancer.openstack.org/enable-health-monitor: "false"
spec:
  type: LoadBalancer
  ipFamilies: [IPv4]
  ports:
  - {port: 3868, protocol: SCTP, nodePort: 30868}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated}
`;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ostia-advise-'));
  dataDir = mkdtempSync(join(tmpdir(), 'ostia-advise-data-'));
  writeFileSync(join(dir, 'edge.yaml'), EDGE);
  lab = ovnSkip ? undefined : await startOvnLab(['amphora', 'ovn']);
  const database = process.env.OSTIA_TEST_DATABASE_URL ? {} : { database: { url: defaultConfig(dataDir).database.url } };
  h = await startHarness({ ...(lab?.config ?? {}), ...database, api: { enabledProviders: lab ? ['amphora', 'ovn'] : ['amphora'], defaultProvider: 'amphora' }, compute: { driver: 'noop' } });
  const subnet = lab ? { vip_subnet_id: PUBLIC_SUBNET } : {};
  const create = async (key: string, body: Record<string, unknown>) => {
    const res = await h.request('POST', '/v2/lbaas/loadbalancers', { as: memberA, body: { loadbalancer: { ...subnet, ...body } } });
    assert.equal(res.statusCode, 201, res.body);
    lbs[key] = res.json().loadbalancer.id;
    assert.equal(await h.settled(lbs[key]!), 'ACTIVE');
  };
  const pool = (lb_algorithm: string, protocol = 'TCP') => ({ name: `pool-${lb_algorithm}`, protocol, lb_algorithm, healthmonitor: { type: 'TCP', delay: 5, timeout: 3, max_retries: 2 } });
  await create('movable', { name: 'movable', description: 'Kubernetes external service shop/web from cluster shop', listeners: [{ protocol: 'TCP', protocol_port: 80, default_pool: pool('SOURCE_IP') }] });
  await create('stuck', {
    name: 'stuck',
    description: 'Kubernetes external service shop/api from cluster shop',
    listeners: [{ protocol: 'HTTP', protocol_port: 80, insert_headers: { 'X-Forwarded-For': 'true' }, allowed_cidrs: ['203.0.113.0/24'], default_pool: pool('ROUND_ROBIN', 'HTTP') }],
  });
  if (lab) await create('ovn', { name: 'native', provider: 'ovn', listeners: [{ protocol: 'TCP', protocol_port: 80, default_pool: { name: 'native-pool', protocol: 'TCP', lb_algorithm: 'SOURCE_IP_PORT' } }] });
});

after(async () => {
  await h?.close();
  await lab?.close();
  rmSync(dir, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

const target = () => (process.env.OSTIA_TEST_DATABASE_URL ? ['--database-url', h.config.database.url] : ['--data-dir', dataDir]);

test("the README's example: the cluster needs amphora, in the OVN provider's words, with exit 3, its JSON and its picture", async () => {
  const table = await runOstia('advise', SHOP, '--labels', 'octavia_provider=amphora,octavia_lb_algorithm=ROUND_ROBIN');
  assert.equal(table.code, NEEDS_AMPHORA_EXIT, table.stderr);
  assert.match(table.stdout, /^Cluster shop \(octavia_provider amphora\): NEEDS AMPHORA/);
  for (const [feature, value] of [['listener.protocol', 'HTTP'], ['pool.lb_algorithm', 'LEAST_CONNECTIONS'], ['healthmonitor.type', 'HTTP'], ['listener.allowed_cidrs', 'present']]) assert.ok(table.stdout.includes(said(feature!, value!)), `${feature} ${value}`);
  assert.match(table.stdout, /Warning: The API server's load balancer keeps its provider on update/);
  assert.match(table.stdout, /NodePort range 30000-32767/);

  const picture = join(dir, 'shop.svg');
  const r = await runOstia('advise', SHOP, '--labels', 'octavia_provider=amphora', '--topology', 'ACTIVE_STANDBY', '--json', '--picture', picture);
  assert.equal(r.code, NEEDS_AMPHORA_EXIT, r.stderr);
  const [shop] = (JSON.parse(r.stdout) as { clusters: ClusterAdvice[] }).clusters;
  assert.equal(shop!.cluster, 'shop');
  assert.equal(shop!.verdict, 'needs-amphora');
  assert.deepEqual(shop!.services.map((s) => [s.service, s.verdict]), [['shop/web', 'fits-ovn'], ['shop/dns', 'fits-ovn'], ['shop/api', 'needs-amphora']]);
  assert.deepEqual(shop!.skipped.map((s) => s.service), ['default/kubernetes']);
  assert.deepEqual([shop!.loadBalancers, shop!.amphoraeToday, shop!.amphoraeAfter, shop!.amphoraeSaved], [3, 6, 6, 0]);
  assert.deepEqual(shop!.labels.map((l) => `${l.label}=${l.value}`), ['octavia_provider=ovn', 'octavia_lb_algorithm=SOURCE_IP_PORT', 'octavia_lb_healthcheck=true']);
  const svg = readFileSync(picture, 'utf8');
  assert.equal(XMLValidator.validate(svg), true);
  const texts = svgTexts(svg);
  for (const figure of ['2', '1', '6']) assert.ok(texts.includes(figure), `the picture shows ${figure}: ${texts.join('|')}`);
  assert.ok(texts.some((t) => t.includes('shop')));
});

test('a cluster whose Services all fit OVN (documents of Services): exit 0, every amphora saved', async () => {
  const r = await runOstia('advise', join(dir, 'edge.yaml'), '--json');
  assert.equal(r.code, 0, r.stderr);
  const [edge] = (JSON.parse(r.stdout) as { clusters: ClusterAdvice[] }).clusters;
  assert.deepEqual([edge!.cluster, edge!.verdict, edge!.loadBalancers, edge!.amphoraeToday, edge!.amphoraeSaved], ['edge', 'fits-ovn', 2, 2, 2]);
  assert.deepEqual(edge!.nodePorts.ports.map((p) => p.nodePort), [30443, 30868]);
  const table = await runOstia('advise', join(dir, 'edge.yaml'), '--manage-security-groups');
  assert.equal(table.code, 0, table.stderr);
  assert.match(table.stdout, /Cluster edge \(octavia_provider amphorav2\): fits OVN/);
  assert.match(table.stdout, /with manage-security-groups=true CPO opens each Service's NodePorts/);
});

test('usage and input failures say what to do', async () => {
  const none = await runOstia('advise');
  assert.equal(none.code, 2);
  assert.match(none.stderr, /give one or more manifest files/);
  const topology = await runOstia('advise', SHOP, '--topology', 'TRIPLE');
  assert.equal(topology.code, 2);
  assert.match(topology.stderr, /--topology must be SINGLE or ACTIVE_STANDBY/);
  assert.equal((await runOstia('advise', SHOP, '--project', 'p')).code, 2);
  assert.equal((await runOstia('advise', SHOP, '--labels', 'novalue')).code, 2);
  const missing = await runOstia('advise', join(dir, 'absent.yaml'));
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /cannot read .*absent\.yaml.*kubectl get svc -A -o yaml/);
  writeFileSync(join(dir, 'bad.yaml'), 'kind: Service\nmetadata: {name: x}\nspec: {ports: [{port: http}]}\n');
  const bad = await runOstia('advise', join(dir, 'bad.yaml'));
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /bad\.yaml: document 1: \/spec\/ports\/0\/port/);
});

test('--from-live: each amphora load balancer put to the OVN provider\'s checks, OVN ones as they are, the amphorae saved, and a picture', async () => {
  const picture = join(dir, 'live.svg');
  const r = await runOstia('advise', '--from-live', ...target(), '--json', '--picture', picture);
  assert.equal(r.code, NEEDS_AMPHORA_EXIT, r.stderr);
  const summary = JSON.parse(r.stdout) as LiveSummary;
  const byName = Object.fromEntries(summary.loadBalancers.map((lb) => [lb.name, lb]));
  assert.equal(byName.movable!.verdict, 'fits-ovn');
  assert.equal(byName.movable!.cluster, 'shop');
  assert.ok(byName.movable!.amphorae >= 1, 'the noop compute gave it an amphora');
  const stuck = byName.stuck!;
  assert.equal(stuck.verdict, 'needs-amphora');
  assert.deepEqual(
    [...new Set(stuck.refusals.map((x) => `${x.feature} ${x.value}`))].sort(),
    ['listener.allowed_cidrs present', 'listener.protocol HTTP', 'pool.lb_algorithm ROUND_ROBIN', 'pool.protocol HTTP'],
  );
  for (const x of stuck.refusals) assert.equal(x.reason, said(x.feature, x.value));
  assert.equal(summary.amphoraLoadBalancers, 2);
  assert.equal(summary.movable, 1);
  assert.equal(summary.amphoraeSaved, byName.movable!.amphorae);
  assert.equal(summary.amphoraeToday, byName.movable!.amphorae + stuck.amphorae);
  if (lab) assert.equal(byName.native!.verdict, 'on-ovn');
  else assert.equal(byName.native, undefined);

  const svg = readFileSync(picture, 'utf8');
  assert.ok(existsSync(picture));
  assert.equal(XMLValidator.validate(svg), true);
  const texts = svgTexts(svg);
  assert.ok(texts.includes('shop'));
  for (const figure of [summary.amphoraeToday, summary.amphoraeAfter]) assert.ok(texts.includes(String(figure)), `the picture shows ${figure}`);

  const table = await runOstia('advise', '--from-live', ...target(), '--project', memberA.project!);
  assert.equal(table.code, NEEDS_AMPHORA_EXIT, table.stderr);
  assert.match(table.stdout, new RegExp(`${lbs.stuck}.*NEEDS AMPHORA`));
  assert.ok(table.stdout.includes(said('pool.lb_algorithm', 'ROUND_ROBIN')));
  const elsewhere = await runOstia('advise', '--from-live', ...target(), '--project', 'cccccccccccccccccccccccccccccccc', '--json');
  assert.equal(elsewhere.code, 0, elsewhere.stderr);
  assert.deepEqual((JSON.parse(elsewhere.stdout) as LiveSummary).loadBalancers, []);
});

test('--from-live with a manifest is a usage error', async () => {
  assert.equal((await runOstia('advise', SHOP, '--from-live', ...target())).code, 2);
});

/**
 * `ostia plan` as an operator runs it: a child process on the database of a running service (SQLite in its
 * data directory; the service's PostgreSQL in the second pass) holding real amphora load balancers (compute
 * noop: their rows, ports and management addresses, no processes) and a noop one, one of them failed over, so
 * creates and a failover are measured. Its config names the ovn provider too, for an OVN class (the plan
 * reads no OVN). Every verdict branch the service's state can reach: it fits (with anti-affinity impossible
 * for a pair, OVN taking no amphora, times not measured yet), a quota runs out, a subnet's addresses run out,
 * it fits only without failover headroom; the --json shape and the picture. This machine's memory running out
 * first is judged in src/tools/plan/capacity.test.ts (noop amphorae take none).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { XMLValidator } from 'fast-xml-parser';
import { stringify } from 'yaml';
import { defaultConfig, VIP_SUBNET_ID } from '../src/config.js';
import { DOES_NOT_FIT_EXIT } from '../src/cli/plan.js';
import type { PlanResult } from '../src/tools/plan/result.js';
import { runOstia } from './support/ostia-process.js';
import { startHarness, memberA, PROJECT_A, type Harness } from './support/harness.js';
import { svgTexts } from './support/svg.js';
import { bigIntToIp, ipToBigInt } from '../src/domain/net.js';
import { MANAGEMENT_SUBNET_ID } from '../src/network/management-ports.js';

let h: Harness;
let dir: string;
let lbIds: string[];

/** The plan's config: the service's database and drivers, and the ovn provider named (never reached). */
function writeConfig(name: string, over: Record<string, unknown> = {}): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    stringify({
      database: { url: h.config.database.url },
      api: { enabledProviders: ['amphora', 'noop', 'ovn'], defaultProvider: 'amphora' },
      ovn: { nbConnection: 'unix:/nonexistent/ovnnb_db.sock', sbConnection: 'unix:/nonexistent/ovnsb_db.sock' },
      compute: { driver: 'noop' },
      network: { driver: 'catalog' },
      identity: { mode: 'testing' },
      ...over,
    }),
  );
  return file;
}

function writeClasses(name: string, classes: unknown[]): string {
  const file = join(dir, name);
  writeFileSync(file, stringify({ classes }));
  return file;
}

const plan = (config: string, ...args: string[]) => runOstia('plan', '--data-dir', join(dir, 'data'), '--config', config, ...args);
const planned = async (config: string, ...args: string[]) => {
  const r = await plan(config, '--json', ...args);
  assert.ok(r.code === 0 || r.code === DOES_NOT_FIT_EXIT, `exit ${r.code}: ${r.stderr}`);
  return { code: r.code, result: JSON.parse(r.stdout) as PlanResult };
};

async function createLb(name: string, provider: string): Promise<string> {
  const created = await h.request('POST', '/v2/lbaas/loadbalancers', {
    as: memberA,
    body: { loadbalancer: { name, provider, vip_subnet_id: VIP_SUBNET_ID, listeners: [{ protocol: 'HTTP', protocol_port: 80 }] } },
  });
  assert.equal(created.statusCode, 201, created.body);
  const id = created.json().loadbalancer.id as string;
  assert.equal(await h.settled(id), 'ACTIVE');
  return id;
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ostia-plan-'));
  mkdirSync(join(dir, 'data'));
  const database = process.env.OSTIA_TEST_DATABASE_URL ? {} : { database: { url: defaultConfig(join(dir, 'data')).database.url } };
  h = await startHarness({ ...database, api: { enabledProviders: ['noop', 'amphora'], defaultProvider: 'amphora' }, compute: { driver: 'noop' } });
  lbIds = [await createLb('web-1', 'amphora'), await createLb('web-2', 'amphora'), await createLb('api-1', 'noop')];
  const failover = await h.request('PUT', `/v2/lbaas/loadbalancers/${lbIds[0]}/failover`);
  assert.equal(failover.statusCode, 202, failover.body);
  assert.equal(await h.settled(lbIds[0]!), 'ACTIVE');
  const quota = await h.request('PUT', `/v2/lbaas/quotas/${PROJECT_A}`, { body: { quota: { load_balancer: 6 } } });
  assert.equal(quota.statusCode, 202, quota.body);
});

after(async () => {
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('--from-live: the live load balancers as classes, measured times, the quota as the first limit, and a picture of it', async () => {
  const picture = join(dir, 'live.svg');
  const { code, result } = await planned(writeConfig('live.yaml'), '--from-live', '--picture', picture);
  assert.equal(code, 0);
  assert.equal(result.source, 'live');
  const amphora = result.classes.find((c) => c.provider === 'amphora')!;
  assert.deepEqual([amphora.count, amphora.topology, amphora.listeners, amphora.vip_subnet, amphora.project_id], [2, 'SINGLE', 1, 'public-subnet', PROJECT_A]);
  assert.deepEqual(amphora.total, { amphorae: 2, vipAddresses: 2, managementAddresses: 2, vcpus: 2, ramMiB: 2048, diskGiB: 4 });
  assert.equal(amphora.measured.create!.count, 2);
  assert.equal(amphora.measured.failover!.count, 1);
  assert.ok(amphora.measured.create!.medianSeconds >= 0);
  const noop = result.classes.find((c) => c.provider === 'noop')!;
  assert.deepEqual([noop.count, noop.topology, noop.total.amphorae], [1, null, 0]);
  const byLabel = Object.fromEntries(result.resources.map((r) => [r.label, r]));
  const vip = byLabel['VIP addresses of public-subnet (127.16.0.0/16)']!;
  assert.equal(vip.inUse, 3);
  const management = result.resources.find((r) => r.key === 'management')!;
  assert.equal(management.inUse, 2, 'the failed-over amphora gave its management address back');
  assert.equal(management.failover, 2);
  const quota = byLabel[`load_balancer quota of project ${PROJECT_A}`]!;
  assert.deepEqual([quota.capacity, quota.inUse, quota.holds], [6, 3, 6]);
  assert.equal(result.verdict.kind, 'fits');
  assert.equal(result.verdict.firstLimit, quota.label);
  assert.equal(result.verdict.atCount, 6);
  assert.match(result.verdict.sentence, /^Today's 3 load balancer\(s\) fit\. The first limit is load_balancer quota of project a+: it holds 6 .* \(3 more than today\)/);
  assert.equal(result.anti_affinity.verdict, 'not-needed');
  assert.ok(result.notes.some((n) => n.startsWith('compute.driver noop boots nothing')));

  assert.ok(existsSync(picture));
  const svg = readFileSync(picture, 'utf8');
  assert.equal(XMLValidator.validate(svg), true);
  const texts = svgTexts(svg);
  // A long label is broken over lines where it is drawn.
  const drawn = texts.join('').replace(/\s/g, '');
  for (const r of result.resources) {
    assert.ok(drawn.includes(r.label.replace(/\s/g, '')), `${r.label} in the picture`);
    assert.ok(texts.includes(`${r.free_percent}%`), `${r.free_percent}% in the picture`);
  }
  for (const c of result.classes) assert.ok(texts.includes(c.name), `${c.name} in the picture`);
});

test('a classes file that fits: an ACTIVE_STANDBY pair cannot be anti-affine here, OVN takes no amphora, nothing measured yet', async () => {
  const classes = writeClasses('fits.yaml', [
    { name: 'pair', provider: 'amphora', topology: 'ACTIVE_STANDBY', count: 2, listeners: 2, project: PROJECT_A },
    { name: 'ovn-edge', provider: 'ovn', count: 1, listeners: 3, project: PROJECT_A },
  ]);
  const config = writeConfig('fits-config.yaml');
  const { code, result } = await planned(config, '--classes', classes);
  assert.equal(code, 0);
  const [pair, ovn] = result.classes;
  assert.deepEqual(pair!.total, { amphorae: 4, vipAddresses: 2, managementAddresses: 4, vcpus: 4, ramMiB: 4096, diskGiB: 8 });
  assert.deepEqual(ovn!.total, { amphorae: 0, vipAddresses: 1, managementAddresses: 0, vcpus: 0, ramMiB: 0, diskGiB: 0 });
  assert.deepEqual([pair!.measured.create, pair!.measured.failover, ovn!.measured.create], [null, null, null]);
  assert.equal(result.verdict.kind, 'fits');
  assert.equal(result.anti_affinity.verdict, 'impossible');
  assert.match(result.verdict.sentence, /^The plan's 3 load balancer\(s\) fit\. .* Anti-affinity cannot hold: compute.driver noop has one host/);

  const text = await plan(config, '--classes', classes);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^pair\s+amphora\s+ACTIVE_STANDBY\s+2\s+2\s+4\s+2\s+4\s+4\s+4096\s+8\s+2\s+load_balancer quota of project a+\s+not measured yet\s+not measured yet$/m);
  assert.match(text.stdout, /^ovn-edge\s+ovn\s+-\s+1\s+3\s+0\s+1\s+0\s+0\s+0\s+0\s+1\s+.*not measured yet\s+-$/m);
  assert.ok(text.stdout.includes(`Verdict: ${result.verdict.sentence}`), text.stdout);
});

test('a classes file beyond the quota: exit 3, the quota named with the count it holds', async () => {
  const classes = writeClasses('quota.yaml', [{ name: 'web', provider: 'amphora', count: 5, project: PROJECT_A }]);
  const { code, result } = await planned(writeConfig('quota-config.yaml'), '--classes', classes);
  assert.equal(code, DOES_NOT_FIT_EXIT);
  assert.equal(result.verdict.kind, 'exceeds');
  assert.equal(result.verdict.firstLimit, `load_balancer quota of project ${PROJECT_A}`);
  assert.equal(result.verdict.atCount, 3);
});

test("a classes file beyond the VIP subnet's free addresses: the subnet runs out first", async () => {
  const network = defaultConfig(dir).network;
  const narrow = network.networks.map((n) => ({ ...n, subnets: n.subnets.map((s) => (s.id === VIP_SUBNET_ID ? { ...s, allocation_pools: [{ start: '127.16.0.1', end: '127.16.0.20' }] } : s)) }));
  const config = writeConfig('narrow.yaml', { network: { driver: 'catalog', networks: narrow } });
  const classes = writeClasses('addresses.yaml', [{ name: 'web', provider: 'amphora', count: 30, vip_subnet: 'public-subnet' }]);
  const { code, result } = await planned(config, '--classes', classes);
  assert.equal(code, DOES_NOT_FIT_EXIT);
  const vip = result.resources.find((r) => r.key === `vip:${VIP_SUBNET_ID}`)!;
  assert.deepEqual([vip.capacity, vip.inUse], [20, 3]);
  assert.equal(result.verdict.firstLimit, vip.label);
  assert.equal(result.verdict.atCount, 17);
});

test('a classes file that fits only without room for the replacements failover builds (N+1): exit 3', async () => {
  // A management range with exactly 3 addresses free: 3 amphorae fit, but not with 2 held for failover.
  const mgmt = h.config.amphora.managementNetwork;
  const held = (await h.runtime.db.kysely.selectFrom('port').select('ip_address').where('subnet_id', '=', MANAGEMENT_SUBNET_ID).execute()).map((p) => ipToBigInt(p.ip_address));
  const last = held.reduce((a, b) => (b > a ? b : a));
  const freeBelowLast = Number(last - ipToBigInt(mgmt.start) + 1n) - held.length;
  const end = bigIntToIp(last + BigInt(3 - freeBelowLast), 4);
  const config = writeConfig('tight.yaml', { amphora: { managementNetwork: { ...mgmt, end } } });
  const classes = writeClasses('headroom.yaml', [{ name: 'web', provider: 'amphora', count: 3 }]);
  const { code, result } = await planned(config, '--classes', classes);
  assert.equal(code, DOES_NOT_FIT_EXIT, JSON.stringify(result.resources));
  assert.equal(result.verdict.kind, 'fits-without-failover-headroom');
  assert.match(result.verdict.sentence, /fit only without failover headroom: management addresses .*\(N\+1\)/);
  assert.equal(result.verdict.atCount, 1);
});

test('usage and class mistakes say what to do', async () => {
  const config = writeConfig('errors.yaml');
  const neither = await plan(config);
  assert.equal(neither.code, 2);
  assert.match(neither.stderr, /give --classes FILE or --from-live/);
  const wrong = await plan(config, '--classes', writeClasses('wrong.yaml', [{ name: 'x', provider: 'octavia', count: 1 }]));
  assert.equal(wrong.code, 1);
  assert.match(wrong.stderr, /class 'x': provider 'octavia' is not enabled here .*Fix the classes file/s);
  const ovnPair = await plan(config, '--classes', writeClasses('ovn-pair.yaml', [{ name: 'y', provider: 'ovn', topology: 'ACTIVE_STANDBY', count: 1 }]));
  assert.equal(ovnPair.code, 1);
  assert.match(ovnPair.stderr, /topology applies to the amphora provider only/);
});

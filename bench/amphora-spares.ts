/**
 * Spare amphorae (amphora.sparePoolSize): create → ACTIVE of an amphora load balancer with the pool
 * against the same Ostia code without it (every create boots its amphora, as before the pool), on
 * the `local` compute driver, measured in the same run: two `ostia up`s side by side, creates
 * alternating between them.
 *
 *   npm run build && node dist/bench/amphora-spares.js [--creates 10] [--pool 2] [--netns] [--json]
 *
 * With --netns (root) both Ostias run compute.driver netns on network.driver bridge instead: amphorae
 * in network namespaces of their own, spares booted on the management network alone, the VIP plugged
 * into the adopted one.
 *
 * Per round, on each Ostia: an empty load balancer (no listener), then a full stack (HTTP listener,
 * pool, 2 members, HTTP monitor) in one graph create, each timed from the POST to ACTIVE and then
 * deleted. Before each create the pool Ostia is given the time to refill (its READY spares back to
 * --pool), which is reported too: a burst of creates larger than the pool boots as before. Everything
 * stays on 127.0.0.0/8; amphorae outlive their controller by design, so the bench kills what is left.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBackend, type Backend } from '../test/support/amphora-fixtures.js';
import { randomManagementNetwork, writeAmphoraConfig } from '../test/support/amphora-config.js';
import { startBridgeOstia } from '../test/support/bridge-ostia.js';
import { killAll, processesUnder, startOstia, type OstiaProcess } from '../test/support/ostia-process.js';
import { benchArgs, positiveInt } from './support/args.js';
import { ApiClient, createStack, deleteStack, waitSettled, type StackSpec } from './support/lifecycle-api.js';
import { progress } from './support/progress.js';
import { median, percentile } from './support/stats.js';
import { grid, num } from './support/table.js';
import { runBench } from './support/lab.js';

const HELP = `usage: node dist/bench/amphora-spares.js [--creates 10] [--pool 2] [--netns] [--json]
  --creates N   rounds; each creates an empty load balancer and a full stack on both Ostias (default 10)
  --pool K      amphora.sparePoolSize of the Ostia with spares (default 2)
  --netns       amphorae in network namespaces on bridge networks (compute.driver netns; root) instead of local
  --json        one JSON document on stdout
`;
const POLL_MS = 20;
const SETTLE_TIMEOUT_MS = 120_000;
const REFILL_TIMEOUT_MS = 60_000;

interface Params {
  creates: number;
  pool: number;
  netns: boolean;
  json: boolean;
}

interface Side {
  name: string;
  ostia: OstiaProcess;
  user: ApiClient;
  admin: ApiClient;
  spec: StackSpec;
  empty: number[];
  full: number[];
  refill: number[];
  /** Stops the Ostia and whatever it left running. */
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function side(name: string, ostia: OstiaProcess, members: StackSpec['members'], stop: () => Promise<void>): Promise<Side> {
  const user = new ApiClient(name, ostia.url, { 'x-auth-token': await ostia.token('ostia-demo') }, true);
  const admin = new ApiClient(`${name} (admin)`, ostia.url, { 'x-auth-token': await ostia.token('ostia') }, true);
  const spec: StackSpec = {
    provider: 'amphora',
    vipSubnetId: await ostia.subnetId('public-subnet'),
    memberSubnetId: await ostia.subnetId('private-subnet'),
    listenerPort: 8000 + Math.floor(Math.random() * 1000),
    members,
  };
  const close = async () => {
    user.close();
    admin.close();
    await stop();
  };
  return { name, ostia, user, admin, spec, empty: [], full: [], refill: [], stop: close };
}

async function startLocalSide(name: string, pool: number, backends: readonly Backend[], work: string): Promise<Side> {
  const dir = mkdtempSync(join(work, `${name}-`));
  const configFile = await writeAmphoraConfig(dir, { amphora: { managementNetwork: randomManagementNetwork(16), sparePoolSize: pool } });
  progress(`starting ostia up "${name}" (amphora.sparePoolSize ${pool})`);
  const ostia = await startOstia({ extraArgs: ['--config', configFile] });
  const leftovers = () => killAll(processesUnder(join(ostia.dataDir, 'amphorae')));
  process.once('exit', leftovers);
  const members = backends.map((b) => ({ address: b.address, port: b.port }));
  return side(name, ostia, members, async () => {
    await ostia.stop();
    leftovers();
  });
}

/** An Ostia on compute.driver netns and network.driver bridge, with two members serving in namespaces on its private network. */
async function startNetnsSide(name: string, pool: number): Promise<Side> {
  progress(`starting ostia up "${name}" on netns + bridge (amphora.sparePoolSize ${pool})`);
  const lab = await startBridgeOstia({ amphora: { sparePoolSize: pool } });
  try {
    const members = [];
    for (const [i, host] of ['bm-a', 'bm-b'].entries()) {
      const address = lab.address('private', 220 + i);
      await lab.host(host, 'private', address, true);
      members.push({ address, port: 8000 });
    }
    return await side(name, lab.ostia, members, () => lab.close());
  } catch (e) {
    await lab.close();
    throw e;
  }
}

/** Waits until the side has `pool` READY spares; returns how long that took. */
async function refilled(side: Side, pool: number): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const { amphorae } = await side.admin.json<{ amphorae: Array<{ status: string; loadbalancer_id: string | null }> }>('GET', '/v2/octavia/amphorae?status=READY');
    if (amphorae.filter((a) => a.loadbalancer_id === null).length >= pool) return performance.now() - t0;
    if (performance.now() - t0 > REFILL_TIMEOUT_MS) throw new Error(`${side.name}: the spare pool did not refill to ${pool} within ${REFILL_TIMEOUT_MS} ms`);
    await sleep(POLL_MS);
  }
}

async function emptyCreate(side: Side, name: string): Promise<{ id: string; ms: number }> {
  const t0 = performance.now();
  const { loadbalancer } = await side.user.json<{ loadbalancer: { id: string } }>('POST', '/v2/lbaas/loadbalancers', { loadbalancer: { name, vip_subnet_id: side.spec.vipSubnetId, provider: 'amphora' } });
  const lb = await waitSettled(side.user, loadbalancer.id, POLL_MS, SETTLE_TIMEOUT_MS);
  if (lb.provisioning_status !== 'ACTIVE') throw new Error(`${side.name}: load balancer ${lb.id} went to ${lb.provisioning_status}`);
  return { id: lb.id, ms: performance.now() - t0 };
}

async function round(side: Side, i: number, pool: number): Promise<void> {
  if (pool) side.refill.push(await refilled(side, pool));
  const empty = await emptyCreate(side, `spares-empty-${i}`);
  side.empty.push(empty.ms);
  await deleteStack(side.user, empty.id, POLL_MS, SETTLE_TIMEOUT_MS);
  if (pool) side.refill.push(await refilled(side, pool));
  const full = await createStack(side.user, `spares-full-${i}`, side.spec, POLL_MS, SETTLE_TIMEOUT_MS);
  side.full.push(full.activeMs);
  await deleteStack(side.user, full.lb.id, POLL_MS, SETTLE_TIMEOUT_MS);
}

const figures = (v: readonly number[]) => ({ n: v.length, median_ms: median(v), p90_ms: percentile(v, 90), min_ms: Math.min(...v), max_ms: Math.max(...v) });

async function run(p: Params): Promise<void> {
  const loadBefore = loadavg()[0]!;
  const work = mkdtempSync(join(tmpdir(), 'ostia-bench-spares-'));
  // Members must be on the member subnet the catalog network serves (127.32.0.0/16).
  const memberNet = `127.32.${Math.floor(Math.random() * 250)}`;
  const backends = p.netns ? [] : [await startBackend('backend-a', `${memberNet}.11`), await startBackend('backend-b', `${memberNet}.12`)];
  const start = (name: string, pool: number) => (p.netns ? startNetnsSide(name, pool) : startLocalSide(name, pool, backends, work));
  const sides: Side[] = [];
  try {
    sides.push(await start('no spares', 0));
    sides.push(await start(`${p.pool} spares`, p.pool));
    const [cold, warm] = sides as [Side, Side];
    progress(`waiting for the first ${p.pool} spares`);
    await refilled(warm, p.pool);
    for (let i = 0; i < p.creates; i++) {
      progress(`round ${i + 1}/${p.creates}`);
      // Alternating, so both see the same moments of the machine's load.
      for (const side of i % 2 ? [warm, cold] : [cold, warm]) await round(side, i, side === warm ? p.pool : 0);
    }
    const report = {
      params: p,
      load_average: { before: loadBefore, after: loadavg()[0]! },
      without_spares: { empty: figures(cold.empty), full: figures(cold.full) },
      with_spares: { empty: figures(warm.empty), full: figures(warm.full), refill: figures(warm.refill) },
      ratios: { empty: median(cold.empty) / median(warm.empty), full: median(cold.full) / median(warm.full) },
    };
    if (p.json) {
      process.stdout.write(JSON.stringify(report) + '\n');
      return;
    }
    const row = (label: string, a: number[], b: number[]) => [label, `${num(median(a), 0)} / ${num(percentile(a, 90), 0)}`, `${num(median(b), 0)} / ${num(percentile(b, 90), 0)}`, `${num(median(a) / median(b), 1)}x`];
    process.stdout.write(
      [
        grid([
          ['create → ACTIVE, median / p90 (ms)', 'no spares (boot)', `${p.pool} spares (adopt)`, 'faster'],
          row(`load balancer alone, n=${p.creates}`, cold.empty, warm.empty),
          row(`full stack (listener, pool, 2 members, monitor), n=${p.creates}`, cold.full, warm.full),
        ]),
        `pool refilled (a spare booted to READY) after an adoption: median ${num(median(warm.refill), 0)} ms, p90 ${num(percentile(warm.refill, 90), 0)} ms`,
        `compute.driver ${p.netns ? 'netns, network.driver bridge' : 'local'}; both Ostias run the same code, side by side; load average ${num(report.load_average.before, 2)} before, ${num(report.load_average.after, 2)} after.`,
        `repeat: node dist/bench/amphora-spares.js --creates ${p.creates} --pool ${p.pool}${p.netns ? ' --netns' : ''}`,
      ].join('\n') + '\n',
    );
  } finally {
    for (const s of sides) await s.stop().catch((e: unknown) => progress(`stopping ${s.name}: ${String(e)}`));
    await Promise.all(backends.map((b) => b.close()));
    rmSync(work, { recursive: true, force: true });
  }
}

runBench(
  HELP,
  () => {
    const v = benchArgs({ creates: { type: 'string', default: '10' }, pool: { type: 'string', default: '2' }, netns: { type: 'boolean', default: false } });
    return v && { creates: positiveInt('creates', v.creates), pool: positiveInt('pool', v.pool), netns: v.netns === true, json: v.json };
  },
  run,
);

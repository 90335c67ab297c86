/**
 * Create → ACTIVE against the load balancers already there (bench/api.ts `--existing N`): four
 * `ostia up`s (noop provider, SQLite), this version and a baseline version (the one before the
 * free-address index, built once from git), each empty and grown to N load balancers through the
 * API on the one VIP subnet; then creates on all four interleaved, one on each in turn with the
 * order rotating, so that all four see the same load on the machine.
 */
import { startOstia, type OstiaProcess } from '../../test/support/ostia-process.js';
import { builtVersion } from './baseline-build.js';
import { ApiClient, waitSettled } from './lifecycle-api.js';
import { progress } from './progress.js';
import { median, percentile } from './stats.js';
import { grid, num } from './table.js';

/** The last version whose creates read every port of the VIP subnet. */
export const BEFORE_FREE_ADDRESS_INDEX = 'f85cc06';

const POLL_MS = 10;
const ACTIVE_TIMEOUT_MS = 120_000;

export interface ScaleServer {
  version: string;
  existing: number;
  post_median_ms: number;
  create_to_active_median_ms: number;
  create_to_active_p90_ms: number;
}

export interface CreatesAtScale {
  existing: number;
  creates: number;
  baseline: { ref: string; commit: string };
  /** This version empty, at N; the baseline empty, at N. */
  servers: [ScaleServer, ScaleServer, ScaleServer, ScaleServer];
  ratios: {
    /** create → ACTIVE medians of a version at N over the same version empty. */
    this_version_n_over_empty: number;
    baseline_n_over_empty: number;
    /** The baseline over this version, both at N: create → ACTIVE and POST alone. */
    baseline_over_this_version_at_n: number;
    post_baseline_over_this_version_at_n: number;
  };
  /** Seconds each version took to grow to N through the API. */
  growth_seconds: { this_version: number; baseline: number };
}

interface Server {
  ostia: OstiaProcess;
  api: ApiClient;
  subnet: string;
}

async function startServer(name: string, bin: string | undefined, keepAlive: boolean): Promise<Server> {
  const ostia = await startOstia({ bin });
  try {
    const api = new ApiClient(name, ostia.url, { 'x-auth-token': await ostia.token('ostia-demo') }, keepAlive);
    return { ostia, api, subnet: await ostia.subnetId('public-subnet') };
  } catch (e) {
    await ostia.stop();
    throw e;
  }
}

/** POST one load balancer and wait for ACTIVE: the POST's time and the whole. */
async function create(s: Server, name: string): Promise<{ postMs: number; activeMs: number }> {
  const t0 = performance.now();
  const { loadbalancer } = await s.api.json<{ loadbalancer: { id: string } }>('POST', '/v2/lbaas/loadbalancers', { loadbalancer: { name, vip_subnet_id: s.subnet } });
  const postMs = performance.now() - t0;
  const lb = await waitSettled(s.api, loadbalancer.id, POLL_MS, ACTIVE_TIMEOUT_MS);
  if (lb.provisioning_status !== 'ACTIVE') throw new Error(`${s.api.name}: load balancer ${lb.id} went to ${lb.provisioning_status}`);
  return { postMs, activeMs: performance.now() - t0 };
}

/** Grows `s` by `count` load balancers with `concurrency` clients; the seconds it took. */
async function grow(s: Server, count: number, concurrency: number): Promise<number> {
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        await create(s, `existing-${i}`);
        if ((i + 1) % 1000 === 0) progress(`  ${s.api.name}: ${i + 1}/${count}`);
      }
    }),
  );
  return (performance.now() - t0) / 1000;
}

export async function createsAtScale(opts: { existing: number; creates: number; concurrency: number; baselineRef: string; keepAlive: boolean }): Promise<CreatesAtScale> {
  const before = builtVersion(opts.baselineRef);
  const baselineName = `${opts.baselineRef} (${before.commit.slice(0, 9)})`;
  const plan = [
    { version: 'this version', bin: undefined, existing: 0 },
    { version: 'this version', bin: undefined, existing: opts.existing },
    { version: baselineName, bin: before.bin, existing: 0 },
    { version: baselineName, bin: before.bin, existing: opts.existing },
  ];
  const servers: Server[] = [];
  try {
    for (const p of plan) servers.push(await startServer(`${p.version}, ${p.existing} LBs`, p.bin, opts.keepAlive));
    const growth: number[] = [];
    for (const [i, p] of plan.entries()) {
      if (!p.existing) continue;
      progress(`${p.version}: growing to ${p.existing} load balancers with ${opts.concurrency} clients`);
      growth[i] = await grow(servers[i]!, p.existing, opts.concurrency);
    }
    const post = plan.map((): number[] => []);
    const active = plan.map((): number[] => []);
    // One unrecorded round first: module loading, and this version's free-address index laid out on an empty server.
    for (let rep = -1; rep < opts.creates; rep++) {
      for (let k = 0; k < plan.length; k++) {
        const i = (k + Math.max(rep, 0)) % plan.length;
        const t = await create(servers[i]!, `timed-${rep}`);
        if (rep < 0) continue;
        post[i]!.push(t.postMs);
        active[i]!.push(t.activeMs);
      }
      if (rep >= 0 && (rep + 1) % 10 === 0) progress(`  ${rep + 1}/${opts.creates} creates on each`);
    }
    const figures = plan.map((p, i): ScaleServer => ({
      version: p.version,
      existing: p.existing,
      post_median_ms: median(post[i]!),
      create_to_active_median_ms: median(active[i]!),
      create_to_active_p90_ms: percentile(active[i]!, 90),
    })) as CreatesAtScale['servers'];
    const [nowEmpty, nowFull, beforeEmpty, beforeFull] = figures;
    return {
      existing: opts.existing,
      creates: opts.creates,
      baseline: { ref: opts.baselineRef, commit: before.commit },
      servers: figures,
      ratios: {
        this_version_n_over_empty: nowFull.create_to_active_median_ms / nowEmpty.create_to_active_median_ms,
        baseline_n_over_empty: beforeFull.create_to_active_median_ms / beforeEmpty.create_to_active_median_ms,
        baseline_over_this_version_at_n: beforeFull.create_to_active_median_ms / nowFull.create_to_active_median_ms,
        post_baseline_over_this_version_at_n: beforeFull.post_median_ms / nowFull.post_median_ms,
      },
      growth_seconds: { this_version: growth[1]!, baseline: growth[3]! },
    };
  } finally {
    for (const s of servers) s.api.close();
    await Promise.all(servers.map((s) => s.ostia.stop()));
  }
}

export function createsAtScaleTable(r: CreatesAtScale): string {
  const baseline = r.servers[2].version;
  return [
    `Create → ACTIVE with load balancers already there (noop provider, one VIP subnet, SQLite; ${r.creates} creates on each server, interleaved):`,
    grid([
      ['version', 'LBs there', 'POST median (ms)', 'create → ACTIVE median (ms)', 'p90 (ms)'],
      ...r.servers.map((s) => [s.version, String(s.existing), num(s.post_median_ms), num(s.create_to_active_median_ms), num(s.create_to_active_p90_ms)]),
    ]),
    `at ${r.existing} ÷ empty, create → ACTIVE medians: this version ${num(r.ratios.this_version_n_over_empty, 2)}x, ${baseline} ${num(r.ratios.baseline_n_over_empty, 2)}x`,
    `${baseline} ÷ this version at ${r.existing}: create → ACTIVE ${num(r.ratios.baseline_over_this_version_at_n, 2)}x, POST ${num(r.ratios.post_baseline_over_this_version_at_n, 2)}x`,
    `growing to ${r.existing} through the API: this version ${num(r.growth_seconds.this_version)} s, ${baseline} ${num(r.growth_seconds.baseline)} s`,
    `Command: node dist/bench/api.js ${process.argv.slice(2).join(' ')}`,
  ].join('\n');
}

/**
 * Heartbeat flood benchmark: what 60 forged 4 KB heartbeat datagrams a second, sent from a
 * separate process to the health port, cost the API and the repair of a crashed amphora, each
 * against the same measurement without the flood, interleaved in one run of one `ostia up`.
 *
 *   npm run bench:flood [-- --rounds 3 --window-seconds 10 --failovers 3 --rate 60 --json]
 *
 * (a) API latency: GET /v2/lbaas/loadbalancers/{id} back to back for `--window-seconds`, in
 *     `--rounds` pairs of windows (no flood, flood, alternating); p50/p99 of each side and the
 *     ratio flood/no-flood of p99 (target: within 2×).
 * (b) repair: SIGKILL to the amphora's process group, then GET through the VIP every 20 ms until
 *     a member answers, `--failovers` times each side, alternating; the difference of the medians
 *     (target: within 1 s).
 * The flood is test/support/heartbeat-flood.ts run as its own process: random bytes, genuine-
 * looking headers of the amphora with a forged MAC, and a zip bomb, all 4 KB. /metrics shows the
 * refusals at the end. Everything stays on 127.0.0.0/8; every wait is bounded.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../src/config.js';
import { freeUdpPort, httpGet, randomPort, startBackend, type Backend } from '../test/support/amphora-fixtures.js';
import { killAll, processesUnder, repoRoot, startOstia } from '../test/support/ostia-process.js';
import { randomManagementNetwork, writeAmphoraConfig } from '../test/support/amphora-config.js';
import { ApiClient, createStack, waitSettled } from './support/lifecycle-api.js';
import { benchArgs, positiveInt } from './support/args.js';
import { runBench } from './support/lab.js';
import { sleep } from './support/poll.js';
import { groupMembers } from './support/processes.js';
import { progress } from './support/progress.js';
import { median, percentile } from './support/stats.js';

const HELP = `usage: npm run bench:flood -- [options]
  --rounds N           pairs of latency windows, no flood then flood (default 3)
  --window-seconds S   length of each latency window (default 10)
  --failovers F        amphora kills on each side, alternating (default 3)
  --rate R             forged datagrams per second (default 60)
  --json               print one JSON document instead of text
  --help               this text
`;

const POLL_MS = 20;
const BOUND_MS = 60_000;

interface Params {
  rounds: number;
  windowSeconds: number;
  failovers: number;
  rate: number;
  json: boolean;
}

function parse(): Params | null {
  const v = benchArgs({ rounds: { type: 'string', default: '3' }, 'window-seconds': { type: 'string', default: '10' }, failovers: { type: 'string', default: '3' }, rate: { type: 'string', default: '60' } });
  if (!v) return null;
  return { rounds: positiveInt('--rounds', v.rounds), windowSeconds: positiveInt('--window-seconds', v['window-seconds']), failovers: positiveInt('--failovers', v.failovers), rate: positiveInt('--rate', v.rate), json: v.json };
}

const cleanups: Array<() => Promise<void> | void> = [];

interface Rig {
  user: ApiClient;
  admin: ApiClient;
  healthListen: string;
  amphoraRoot: string;
  backends: Backend[];
  listenerPort: number;
  lbId: string;
  vip: string;
}

async function startRig(): Promise<Rig> {
  const configDir = mkdtempSync(join(tmpdir(), 'ostia-bench-flood-'));
  cleanups.push(() => rmSync(configDir, { recursive: true, force: true }));
  const healthListen = `127.0.0.1:${await freeUdpPort()}`;
  // Default heartbeat timers: the repair time is measured against them.
  const configFile = await writeAmphoraConfig(configDir, { amphora: { managementNetwork: randomManagementNetwork(16), healthListen } });
  progress('starting ostia up (providers noop and amphora)');
  const ostia = await startOstia({ extraArgs: ['--config', configFile] });
  const amphoraRoot = join(ostia.dataDir, 'amphorae');
  cleanups.push(() => killAll(processesUnder(amphoraRoot)));
  cleanups.push(() => ostia.stop());
  process.once('exit', () => killAll(processesUnder(amphoraRoot)));
  const user = new ApiClient('Ostia', ostia.url, { 'x-auth-token': await ostia.token('ostia-demo') }, true);
  const admin = new ApiClient('Ostia (admin)', ostia.url, { 'x-auth-token': await ostia.token('ostia') }, true);
  cleanups.push(() => (user.close(), admin.close()));
  const memberNet = `127.32.${Math.floor(Math.random() * 250)}`;
  const backends = [await startBackend('backend-a', `${memberNet}.11`), await startBackend('backend-b', `${memberNet}.12`)];
  cleanups.push(async () => void (await Promise.all(backends.map((b) => b.close()))));
  const listenerPort = randomPort();
  const spec = { provider: 'amphora', vipSubnetId: await ostia.subnetId('public-subnet'), memberSubnetId: await ostia.subnetId('private-subnet'), listenerPort, members: backends.map((b) => ({ address: b.address, port: b.port })) };
  progress('creating a load balancer with a listener and two members on 127.x');
  const { lb } = await createStack(user, 'bench-flood', spec, POLL_MS, BOUND_MS);
  return { user, admin, healthListen, amphoraRoot, backends, listenerPort, lbId: lb.id, vip: lb.vip_address };
}

/** The flood, as its own process; stop() ends it and resolves with how many datagrams it sent. */
function startFlood(rig: Rig, rate: number, amphoraId: string): { stop(): Promise<number> } {
  const child: ChildProcess = spawn(process.execPath, [join(repoRoot(), 'dist/test/support/heartbeat-flood.js'), rig.healthListen, String(rate), amphoraId], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  cleanups.push(() => void child.kill('SIGKILL'));
  return {
    async stop() {
      child.kill('SIGTERM');
      await exited;
      return (JSON.parse(out.trim() || '{"sent":0}') as { sent: number }).sent;
    },
  };
}

async function allocatedAmphora(rig: Rig): Promise<string> {
  const { amphorae } = await rig.admin.json<{ amphorae: Array<{ id: string; status: string }> }>('GET', `/v2/octavia/amphorae?loadbalancer_id=${rig.lbId}`);
  const serving = amphorae.filter((a) => a.status === 'ALLOCATED');
  if (serving.length !== 1) throw new Error(`load balancer ${rig.lbId} has ${serving.length} ALLOCATED amphorae`);
  return serving[0]!.id;
}

async function vipAnswers(rig: Rig): Promise<boolean> {
  const r = await httpGet(rig.vip, rig.listenerPort).catch(() => ({ status: 0, body: '' }));
  return r.status === 200 && rig.backends.some((b) => b.name === r.body);
}

/** GETs of the load balancer back to back for `ms`; their latencies in ms. */
async function latencyWindow(rig: Rig, ms: number): Promise<number[]> {
  const latencies: number[] = [];
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const t0 = performance.now();
    const r = await rig.user.request('GET', `/v2/lbaas/loadbalancers/${rig.lbId}`);
    if (r.status !== 200) throw new Error(`GET load balancer: HTTP ${r.status}`);
    latencies.push(performance.now() - t0);
  }
  return latencies;
}

/** SIGKILL to the amphora's process group → first request through the VIP answered by a member, in ms. */
async function crashAndRepair(rig: Rig): Promise<number> {
  const amphoraId = await allocatedAmphora(rig);
  const leader = (JSON.parse(readFileSync(join(rig.amphoraRoot, amphoraId, 'agent.pid'), 'utf8')) as { pid: number }).pid;
  if (!(await vipAnswers(rig))) throw new Error('the VIP does not answer before the kill');
  const t0 = performance.now();
  process.kill(-leader, 'SIGKILL');
  for (let i = 0; i < 1000 && groupMembers(leader).length; i++) await sleep(5);
  while (!(await vipAnswers(rig))) {
    if (performance.now() - t0 > BOUND_MS) throw new Error(`the VIP did not answer within ${BOUND_MS} ms of the kill`);
    await sleep(POLL_MS);
  }
  const restored = performance.now() - t0;
  const lb = await waitSettled(rig.user, rig.lbId, POLL_MS, BOUND_MS);
  if (lb.provisioning_status !== 'ACTIVE') throw new Error(`load balancer went to ${lb.provisioning_status} after the failover`);
  return restored;
}

/** Runs `body` with the flood going (started a second before, so it is in full swing) or without. */
async function withFlood<T>(rig: Rig, p: Params, flooded: boolean, body: () => Promise<T>): Promise<T> {
  if (!flooded) return body();
  const flood = startFlood(rig, p.rate, await allocatedAmphora(rig));
  await sleep(1000);
  try {
    return await body();
  } finally {
    progress(`  flood process sent ${await flood.stop()} datagrams`);
  }
}

async function refusals(rig: Rig): Promise<Record<string, number>> {
  const r = await rig.admin.request('GET', '/metrics');
  return Object.fromEntries([...r.text.matchAll(/^ostia_heartbeats_(refused|accepted|dropped)_total(?:\{\w+="(\w+)"\})? (\d+)$/gm)].map((m) => [m[2] ? `${m[1]} ${m[2]}` : m[1]!, Number(m[3])]));
}

async function run(p: Params): Promise<void> {
  const { heartbeatIntervalMs, heartbeatTimeoutMs } = defaultConfig('').amphora;
  try {
    const rig = await startRig();
    const latency = { quiet: [] as number[], flood: [] as number[] };
    for (let round = 1; round <= p.rounds; round++) {
      for (const flooded of [false, true]) {
        progress(`latency round ${round}/${p.rounds}, ${flooded ? `flood of ${p.rate}/s` : 'no flood'}: GET the load balancer for ${p.windowSeconds} s`);
        const value = await withFlood(rig, p, flooded, () => latencyWindow(rig, p.windowSeconds * 1000));
        (flooded ? latency.flood : latency.quiet).push(...value);
      }
    }
    const repair = { quiet: [] as number[], flood: [] as number[] };
    for (let i = 1; i <= p.failovers; i++) {
      for (const flooded of [false, true]) {
        // A heartbeat of the amphora about to die has been recorded, as in a steady state.
        await sleep(heartbeatIntervalMs + 500);
        progress(`crash ${i}/${p.failovers}, ${flooded ? 'flood' : 'no flood'}: SIGKILL to the amphora, GET through the VIP every ${POLL_MS} ms`);
        const value = await withFlood(rig, p, flooded, () => crashAndRepair(rig));
        progress(`  traffic back after ${value.toFixed(0)} ms`);
        (flooded ? repair.flood : repair.quiet).push(value);
      }
    }
    const counted = await refusals(rig);
    const figures = {
      rate_per_second: p.rate,
      heartbeat_interval_ms: heartbeatIntervalMs,
      heartbeat_timeout_ms: heartbeatTimeoutMs,
      latency_ms: {
        no_flood: { requests: latency.quiet.length, p50: percentile(latency.quiet, 50), p99: percentile(latency.quiet, 99) },
        flood: { requests: latency.flood.length, p50: percentile(latency.flood, 50), p99: percentile(latency.flood, 99) },
        p99_ratio: percentile(latency.flood, 99) / percentile(latency.quiet, 99),
      },
      repair_ms: {
        no_flood: { runs: repair.quiet, median: median(repair.quiet) },
        flood: { runs: repair.flood, median: median(repair.flood) },
        difference_s: (median(repair.flood) - median(repair.quiet)) / 1000,
      },
      metrics: counted,
    };
    if (p.json) {
      process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
      return;
    }
    const l = figures.latency_ms;
    const f = figures.repair_ms;
    const ms = (v: number) => `${v.toFixed(1)} ms`;
    process.stdout.write(
      [
        `Heartbeat flood: ${p.rate} forged 4 KB datagrams/s from a separate process, interleaved with no flood, one ostia up (heartbeat every ${heartbeatIntervalMs} ms, stale after ${heartbeatTimeoutMs} ms)`,
        `(a) GET /v2/lbaas/loadbalancers/{id}, back to back, ${p.rounds} × ${p.windowSeconds} s per side`,
        `    no flood: ${l.no_flood.requests} requests, p50 ${ms(l.no_flood.p50)}, p99 ${ms(l.no_flood.p99)}`,
        `    flood:    ${l.flood.requests} requests, p50 ${ms(l.flood.p50)}, p99 ${ms(l.flood.p99)}`,
        `    p99 flood / no flood: ${l.p99_ratio.toFixed(2)}× (target: within 2×)`,
        `(b) SIGKILL to the amphora → traffic through the VIP restored, ${p.failovers} per side`,
        `    no flood: median ${ms(f.no_flood.median)} (${f.no_flood.runs.map((v) => v.toFixed(0)).join(', ')})`,
        `    flood:    median ${ms(f.flood.median)} (${f.flood.runs.map((v) => v.toFixed(0)).join(', ')})`,
        `    difference: ${f.difference_s >= 0 ? '+' : ''}${f.difference_s.toFixed(2)} s (target: within 1 s)`,
        `/metrics at the end: ${Object.entries(counted).map(([k, v]) => `${k} ${v}`).join(', ')}`,
        '',
      ].join('\n'),
    );
  } finally {
    for (const cleanup of cleanups.reverse()) {
      try {
        await cleanup();
      } catch (e) {
        progress(`cleanup failed: ${(e as Error).message}`);
      }
    }
  }
}

runBench(HELP, parse, run);

/**
 * Data-plane bench of the amphora provider (issue 3): an amphora built by a real `ostia up`
 * against the same HAProxy binary run by hand on a minimal config an expert would write, same
 * backends, same run, so every figure is a ratio inside one run on a shared, noisy machine.
 *
 *   npm run build && node dist/bench/amphora-dataplane.js [--json] [--seconds 10] [--connections 10,100] [--reps 3]
 *                                                           [--changes 20] [--change-connections 50]
 *
 * (a) Throughput: `wrk -t1 -cN -dS --latency` (reference/dataplane.md §2) through the amphora's VIP and through
 *     the hand-written HAProxy, repetitions interleaved (repetition → connections → target, the target order
 *     alternating), medians; with HAProxy CPU per request read from /proc, steadier than req/s here.
 *     The hand-written config copies what the amphora's HAProxy runs with (maxconn and nbthread read from the
 *     amphora's `show info`, the same stats socket, roundrobin, the same HTTP health check) and nothing else,
 *     and it runs in a session of its own, as the amphora's HAProxy does (see startHand: the kernel schedules
 *     sessions as groups, which matters more than any config line on a loaded machine).
 * (b) Member changes under load: with `wrk -c50` on the VIP, a mix of member changes (add, weight, disable,
 *     enable, remove, repeated) through the API; each is timed from the API call's return to the change being
 *     visible — in traffic (the added or re-enabled member's name in a response to a request sent after the
 *     call) for add and enable, in HAProxy's `show servers state` for weight, disable and remove (removed, or
 *     in maintenance on its way out: no new request reaches it) — and wrk's failed requests (socket errors +
 *     status ≥ 400) are counted. Baseline: the same changes made to the hand-written config by editing the
 *     file and a master-CLI `reload`, timed from the edit. For the amphora, the report splits the time with
 *     the load balancer's provisioning trace (queued, push-config), times the `haproxy -c` its agent runs
 *     for every push (between the changes, under the same load), and counts the changes its agent had to
 *     reload for (HAProxy refused the runtime command).
 *
 * Backends: two nginx processes (worker_processes 1) when nginx is installed, otherwise two Node processes,
 * which are slower and which the report names (`apt-get install -y nginx wrk`). Everything listens on
 * 127.0.0.0/8. Every process the bench starts — wrk, backends, HAProxy, ostia and the amphora's processes —
 * is killed in `finally` and on SIGINT.
 */
import { execFile } from 'node:child_process';
import http from 'node:http';
import { mkdirSync, readFileSync, readdirSync, writeFileSync, existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { HaproxyProcess } from '../src/amphora/haproxy/process.js';
import { HaproxyRuntime } from '../src/amphora/haproxy/runtime.js';
import { eventually, httpGet, loopbackAddress, randomPort, tempDir } from '../src/amphora/testing.js';
import { killAll, processesUnder, startOstia, type OstiaProcess } from '../test/support/ostia-process.js';
import { writeAmphoraConfig } from '../test/support/amphora-config.js';
import { startBackendFarm, type BackendFarm, type Endpoint } from './support/backends.js';
import { cpuSeconds, haproxyPidsUnder } from './support/processes.js';
import { median, percentile } from './support/stats.js';
import { killAllWrk, startWrk, writeWrkScript, type WrkResult } from './support/wrk.js';

const run = promisify(execFile);

const ACTIVE_TIMEOUT_MS = 120_000;
const CHANGE_TIMEOUT_MS = 30_000;
const API_POLL_MS = 20;
const STATE_POLL_MS = 10;
/** Parallel keep-alive probe loops watching the bodies that come back through the VIP. */
const PROBES = 4;
const PROBE_TIMEOUT_MS = 2_000;
const PROBE_RETRY_MS = 10;
/** Pause between two changes, so that one change's after-effects are not timed as the next one's. */
const CHANGE_GAP_MS = 300;
/** Load before the first change, so changes happen on warm connections. */
const CHANGE_LEAD_S = 1;
/** wrk's bound in the change phase (it is stopped as soon as the changes are done): this per change, plus the lead. */
const CHANGE_BUDGET_S = 8;
const WARMUP_S = 2;
const CHANGE_WEIGHT = 3;
/** The order changes cycle through, one extra member per cycle. */
const CYCLE = ['add', 'weight', 'disable', 'enable', 'remove'] as const;
type ChangeKind = (typeof CYCLE)[number];
/** Seen by traffic where a change makes a member answer; by runtime state where it only stops or reweighs one. */
const SEEN_IN_TRAFFIC: readonly ChangeKind[] = ['add', 'enable'];
// srv_admin_state bits of HAProxy 2.6 (server.h): forced, inherited, configured, resolution and hostname maintenance.
const ADMIN_MAINT_BITS = 0x01 | 0x02 | 0x04 | 0x20 | 0x40;
/** What the agent logs (src/amphora/agent/apply.ts) when a member change falls back to a reload. */
const AGENT_RELOAD_FALLBACK = 'runtime update incomplete, reloading instead:';

interface Params {
  seconds: number;
  connections: number[];
  reps: number;
  changes: number;
  changeConnections: number;
}

const progress = (msg: string) => process.stderr.write(`# ${msg}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// --- Ostia's API --------------------------------------------------------------------------

interface Api {
  call<T>(method: string, path: string, body?: unknown): Promise<T>;
}

function api(ostia: OstiaProcess, token: string): Api {
  return {
    async call<T>(method: string, path: string, body?: unknown): Promise<T> {
      const res = await fetch(`${ostia.url}${path}`, {
        method,
        headers: { 'x-auth-token': token, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${method} ${path}: HTTP ${res.status} ${text.slice(0, 500)}`);
      return (text ? JSON.parse(text) : undefined) as T;
    },
  };
}

interface LbView {
  id: string;
  provisioning_status: string;
  vip_address: string;
  pools: Array<{ id: string }>;
}

async function waitLbSettled(a: Api, id: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { provisioning_status: status } = (await a.call<{ loadbalancer: LbView }>('GET', `/v2/lbaas/loadbalancers/${id}`)).loadbalancer;
    if (status === 'ACTIVE') return;
    if (status === 'ERROR') throw new Error(`load balancer ${id} went to ERROR`);
    if (Date.now() > deadline) throw new Error(`load balancer ${id} still ${status} after ${timeoutMs} ms`);
    await sleep(API_POLL_MS);
  }
}

// --- HAProxy state ------------------------------------------------------------------------

interface ServerState {
  backend: string;
  server: string;
  adminState: number;
  userWeight: number;
}

/** `show servers state`, read by its header line. */
function parseServersState(dump: string): ServerState[] {
  const lines = dump.split('\n');
  const header = lines.find((l) => l.startsWith('# '))?.slice(2).split(' ') ?? [];
  const col = (name: string) => {
    const i = header.indexOf(name);
    if (i < 0) throw new Error(`show servers state has no column ${name}: ${lines.slice(0, 2).join(' | ')}`);
    return i;
  };
  const [be, srv, admin, uweight] = ['be_name', 'srv_name', 'srv_admin_state', 'srv_uweight'].map(col) as [number, number, number, number];
  return lines
    .filter((l) => l && !l.startsWith('#') && l.includes(' '))
    .map((l) => l.split(' '))
    .map((f) => ({ backend: f[be]!, server: f[srv]!, adminState: Number(f[admin]), userWeight: Number(f[uweight]) }));
}

// --- the two load balancers -----------------------------------------------------------------

interface Target {
  readonly label: string;
  readonly address: string;
  readonly port: number;
  readonly runtime: HaproxyRuntime;
  readonly backend: string;
  haproxyPids(): number[];
}

interface AmphoraTarget extends Target {
  readonly lbId: string;
  readonly poolId: string;
  readonly dir: string;
  readonly config: string;
}

interface HandServer {
  name: string;
  address: string;
  port: number;
  weight: number;
  enabled: boolean;
}

interface HandTarget extends Target {
  readonly dir: string;
  readonly process: HaproxyProcess;
  servers: HandServer[];
  config(): string;
}

const HAND_BACKEND = 'be';

/**
 * What an expert writes by hand for one HTTP listener over a roundrobin pool with an HTTP health
 * check: the amphora's global limits (maxconn, nbthread) and stats socket, the timeouts and
 * check timings the amphora's listener and monitor have, and nothing else.
 */
function handConfig(dir: string, vip: string, port: number, maxconn: number, nbthread: number, servers: readonly HandServer[]): string {
  return [
    'global',
    `    maxconn ${maxconn}`,
    `    nbthread ${nbthread}`,
    `    stats socket ${join(dir, 'hand.sock')} mode 600 level admin expose-fd listeners`,
    `    pidfile ${join(dir, 'hand.pid')}`,
    '    hard-stop-after 60s',
    '',
    'defaults',
    '    mode http',
    '    timeout connect 5s',
    '    timeout client 50s',
    '    timeout server 50s',
    '',
    'frontend fe',
    `    bind ${vip}:${port}`,
    `    default_backend ${HAND_BACKEND}`,
    '',
    `backend ${HAND_BACKEND}`,
    '    balance roundrobin',
    '    option httpchk GET /',
    '    http-check expect status 200',
    '    timeout check 1s',
    ...servers.map((s) => `    server ${s.name} ${s.address}:${s.port} weight ${s.weight} check inter 1s fall 3 rise 1${s.enabled ? '' : ' disabled'}`),
    '',
  ].join('\n');
}

async function buildAmphora(ostia: OstiaProcess, a: Api, farm: BackendFarm, port: number): Promise<AmphoraTarget> {
  const [vipSubnet, memberSubnet] = await Promise.all([ostia.subnetId('public-subnet'), ostia.subnetId('private-subnet')]);
  const created = await a.call<{ loadbalancer: LbView }>('POST', '/v2/lbaas/loadbalancers', {
    loadbalancer: {
      name: 'bench-dataplane',
      vip_subnet_id: vipSubnet,
      provider: 'amphora',
      listeners: [
        {
          protocol: 'HTTP',
          protocol_port: port,
          default_pool: {
            name: 'p',
            protocol: 'HTTP',
            lb_algorithm: 'ROUND_ROBIN',
            healthmonitor: { type: 'HTTP', delay: 1, timeout: 1, max_retries: 1 },
            members: farm.primaries.map((e) => ({ address: e.address, protocol_port: e.port, subnet_id: memberSubnet })),
          },
        },
      ],
    },
  });
  const lb = created.loadbalancer;
  progress(`load balancer ${lb.id} created, VIP ${lb.vip_address}:${port}; waiting for ACTIVE`);
  await waitLbSettled(a, lb.id, ACTIVE_TIMEOUT_MS);
  const root = join(ostia.dataDir, 'amphorae');
  const dirs = readdirSync(root)
    .map((d) => join(root, d))
    .filter((d) => existsSync(join(d, 'haproxy.cfg')) && readFileSync(join(d, 'haproxy.cfg'), 'utf8').includes(lb.id));
  if (dirs.length !== 1) throw new Error(`expected one amphora directory serving ${lb.id} under ${root}, found ${dirs.length}`);
  const dir = dirs[0]!;
  const config = readFileSync(join(dir, 'haproxy.cfg'), 'utf8');
  const backend = /^backend (\S+)/m.exec(config)?.[1];
  if (!backend) throw new Error(`no backend in ${join(dir, 'haproxy.cfg')}`);
  return {
    label: 'amphora',
    address: lb.vip_address,
    port,
    runtime: new HaproxyRuntime(join(dir, 'haproxy.sock')),
    backend,
    haproxyPids: () => haproxyPidsUnder(dir),
    lbId: lb.id,
    poolId: lb.pools[0]!.id,
    dir,
    config,
  };
}

async function startHand(dir: string, farm: BackendFarm, port: number, maxconn: number, nbthread: number, lines: string[]): Promise<HandTarget> {
  mkdirSync(dir, { recursive: true });
  const vip = loopbackAddress();
  const files = {
    config: join(dir, 'hand.cfg'),
    masterSocket: join(dir, 'master.sock'),
    statsSocket: join(dir, 'hand.sock'),
    pidFile: join(dir, 'hand.pid'),
    stateFile: join(dir, 'hand.state'),
  };
  // An amphora's HAProxy runs in the session of its agent, which the compute driver starts detached, and so does
  // any daemonized HAProxy (-D calls setsid). With the kernel's autogroup scheduling (sched_autogroup_enabled=1
  // here) a session is a scheduling group of its own, and on this loaded machine that alone changed req/s by
  // tens of percent for one and the same config: the hand-written HAProxy gets a session of its own too.
  const ownSession = join(dir, 'haproxy-own-session');
  writeFileSync(ownSession, '#!/bin/sh\nexec setsid haproxy "$@"\n', { mode: 0o755 });
  // HAProxy's own lines (checks, reloads) are kept for a failure message, not printed.
  const log = { info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m), error: (m: string) => lines.push(m) };
  const hand: HandTarget = {
    label: 'hand-written',
    address: vip,
    port,
    runtime: new HaproxyRuntime(files.statsSocket),
    backend: HAND_BACKEND,
    haproxyPids: () => haproxyPidsUnder(dir),
    dir,
    process: new HaproxyProcess({ binary: ownSession, files, log }),
    servers: farm.primaries.map((e, i) => ({ name: `s${i + 1}`, address: e.address, port: e.port, weight: 1, enabled: true })),
    config: () => handConfig(dir, vip, port, maxconn, nbthread, hand.servers),
  };
  writeFileSync(files.config, hand.config());
  await hand.process.start();
  return hand;
}

/** Both primaries UP in HAProxy's view and answering through the VIP. */
async function waitServing(t: Target): Promise<void> {
  await eventually(
    async () => {
      const stats = await t.runtime.showStat().catch(() => []);
      const up = stats.filter((r) => r.pxname === t.backend && r.type === 'server' && r.status.startsWith('UP'));
      return up.length === 2 && (await httpGet(t.address, t.port)).status === 200;
    },
    `${t.label}: both members UP`,
    30_000,
    100,
  );
}

// --- probes: which member answered, and when ----------------------------------------------------

interface Probes {
  /** Resolves with the time a response with `body` came back to a request sent at or after `since`. */
  waitFor(body: string, since: number, timeoutMs: number): Promise<number>;
  errors(): number;
  requests(): number;
  stop(): Promise<void>;
}

function startProbes(address: string, port: number): Probes {
  const agent = new http.Agent({ keepAlive: true, maxSockets: PROBES });
  const waiters = new Set<{ body: string; since: number; resolve: (t: number) => void }>();
  let running = true;
  let errors = 0;
  let requests = 0;
  const once = (): Promise<{ body: string; sentAt: number } | null> =>
    new Promise((resolve) => {
      const sentAt = performance.now();
      const req = http.get({ host: address, port, path: '/', agent, timeout: PROBE_TIMEOUT_MS }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve(res.statusCode === 200 ? { body: body.trim(), sentAt } : null));
        res.on('error', () => resolve(null));
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', () => resolve(null));
    });
  const loops = Array.from({ length: PROBES }, async () => {
    while (running) {
      const got = await once();
      requests++;
      if (!got) {
        errors++;
        // A refused connection fails at once: do not spin on it.
        await sleep(PROBE_RETRY_MS);
        continue;
      }
      const now = performance.now();
      for (const w of [...waiters]) {
        if (w.body === got.body && got.sentAt >= w.since) {
          waiters.delete(w);
          w.resolve(now);
        }
      }
    }
  });
  return {
    waitFor: (body, since, timeoutMs) =>
      new Promise((resolve, reject) => {
        const w = {
          body,
          since,
          resolve: (t: number) => {
            clearTimeout(timer);
            resolve(t);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(w);
          reject(new Error(`no response from ${body} within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(w);
      }),
    errors: () => errors,
    requests: () => requests,
    stop: async () => {
      running = false;
      await Promise.all(loops);
      agent.destroy();
    },
  };
}

/** Polls `show servers state` until `seen` holds; resolves with the time it first did. */
async function waitForState(t: Target, seen: (rows: ServerState[]) => boolean, timeoutMs: number): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (let i = 0; i < timeoutMs / STATE_POLL_MS + 1; i++) {
    // During a reload the socket may briefly refuse; that is a poll that saw nothing.
    const dump = await t.runtime.showServersState().catch(() => null);
    const now = performance.now();
    if (dump !== null && seen(parseServersState(dump).filter((r) => r.backend === t.backend))) return now;
    if (now > deadline) break;
    await sleep(STATE_POLL_MS);
  }
  throw new Error(`${t.label}: the change did not show in 'show servers state' within ${timeoutMs} ms`);
}

// --- (a) throughput ----------------------------------------------------------------------------

interface Run extends WrkResult {
  /** HAProxy (master + workers) CPU time per request, µs; null if a process went away. */
  cpu_us_per_request: number | null;
}

async function wrkRun(t: Target, connections: number, seconds: number, script: string): Promise<Run> {
  const pids = t.haproxyPids();
  const before = cpuSeconds(pids);
  const result = await startWrk(`http://${t.address}:${t.port}/`, connections, seconds, script).result;
  const after = cpuSeconds(pids);
  return { ...result, cpu_us_per_request: before === null || after === null || !result.requests ? null : ((after - before) * 1e6) / result.requests };
}

interface ThroughputRow {
  connections: number;
  target: string;
  runs: Run[];
  rps: number;
  p50_ms: number;
  p99_ms: number;
  cpu_us_per_request: number | null;
  failed: number;
}

interface ThroughputRatio {
  connections: number;
  /** Median over repetitions of amphora req/s ÷ hand-written req/s in the same repetition. */
  rps: number;
  p99: number;
  cpu_per_request: number | null;
}

async function throughput(amphora: Target, hand: Target, p: Params, script: string): Promise<{ rows: ThroughputRow[]; ratios: ThroughputRatio[] }> {
  const targets = [amphora, hand];
  for (const t of targets) {
    progress(`warm-up: ${t.label}, ${WARMUP_S} s`);
    await wrkRun(t, Math.max(...p.connections), WARMUP_S, script);
  }
  const runs = new Map<string, Run[]>();
  const key = (t: Target, c: number) => `${t.label}/${c}`;
  for (let rep = 0; rep < p.reps; rep++) {
    for (const c of p.connections) {
      // Alternating the order cancels a drift of the machine's load within a repetition.
      const order = rep % 2 === 0 ? targets : [...targets].reverse();
      for (const t of order) {
        progress(`repetition ${rep + 1}/${p.reps}: ${t.label}, c=${c}, ${p.seconds} s`);
        const run = await wrkRun(t, c, p.seconds, script);
        runs.set(key(t, c), [...(runs.get(key(t, c)) ?? []), run]);
      }
    }
  }
  const rows: ThroughputRow[] = [];
  const ratios: ThroughputRatio[] = [];
  for (const c of p.connections) {
    for (const t of targets) {
      const rs = runs.get(key(t, c))!;
      const cpu = rs.map((r) => r.cpu_us_per_request).filter((v): v is number => v !== null);
      rows.push({
        connections: c,
        target: t.label,
        runs: rs,
        rps: median(rs.map((r) => r.rps)),
        p50_ms: median(rs.map((r) => r.p50_ms)),
        p99_ms: median(rs.map((r) => r.p99_ms)),
        cpu_us_per_request: cpu.length === rs.length ? median(cpu) : null,
        failed: rs.reduce((s, r) => s + r.failed, 0),
      });
    }
    const [ampRuns, handRuns] = [runs.get(key(amphora, c))!, runs.get(key(hand, c))!];
    const perRep = (f: (a: Run, h: Run) => number | null) => {
      const xs = ampRuns.map((a, i) => f(a, handRuns[i]!));
      return xs.every((x) => x !== null) ? median(xs as number[]) : null;
    };
    ratios.push({
      connections: c,
      rps: perRep((a, h) => a.rps / h.rps)!,
      p99: perRep((a, h) => a.p99_ms / h.p99_ms)!,
      cpu_per_request: perRep((a, h) => (a.cpu_us_per_request === null || h.cpu_us_per_request === null ? null : a.cpu_us_per_request / h.cpu_us_per_request)),
    });
  }
  return { rows, ratios };
}

// --- (b) member changes under load --------------------------------------------------------------

interface Change {
  kind: ChangeKind;
  member: Endpoint;
}

function changePlan(count: number, extras: readonly Endpoint[]): Change[] {
  return Array.from({ length: count }, (_, i) => ({ kind: CYCLE[i % CYCLE.length]!, member: extras[Math.floor(i / CYCLE.length)]! }));
}

interface Applied {
  /** performance.now() when the change was asked for (API call or file edit). */
  started: number;
  /** When the visibility clock starts: the API call's return; for a reload, the edit. */
  t0: number;
  /** The server's name in HAProxy. */
  server: string;
  /**
   * Resolves when the target is done with the change (load balancer ACTIVE; reload loaded). Called once the change
   * is visible, so that polling the API does not take CPU from the change being timed.
   */
  settle(): Promise<void>;
}

/** Where an amphora change spent its time, from the load balancer's provisioning trace. */
interface ControllerSteps {
  /** From the API call's return to the worker starting push-config (job queued, claimed). */
  queued_ms: number;
  /** push-config: config built, sent to the agent, rendered, checked with `haproxy -c`, applied. */
  push_ms: number;
}

interface ChangeDriver {
  readonly target: Target;
  readonly method: string;
  apply(change: Change): Promise<Applied>;
  /** Per change, in order, where the controller spent the time; absent where there is no controller. */
  controllerSteps?(): Promise<Array<ControllerSteps | null>>;
  /** Changes the amphora's agent could not make through the runtime API and reloaded for instead, since `since` (epoch ms). */
  agentReloads?(since: number): { count: number; reasons: string[] };
  /**
   * Wall time of one `haproxy -c` on the amphora's config, which its agent runs before applying every pushed config,
   * member changes included; timed between changes, under the same load.
   */
  timeCheck?(): Promise<number>;
}

interface TraceEntry {
  job_id: string;
  operation: string;
  step: string;
  started_at: string;
  duration_ms: number | null;
}

function amphoraDriver(t: AmphoraTarget, a: Api, memberSubnet: string, scratch: string): ChangeDriver {
  const ids = new Map<string, string>();
  const checked = join(scratch, 'amphora-copy.cfg');
  writeFileSync(checked, t.config);
  const path = `/v2/lbaas/pools/${t.poolId}/members`;
  /** Wall-clock time of each call's return, to set against the trace's timestamps. */
  const returned: number[] = [];
  return {
    target: t,
    method: 'API call, agent applies through the runtime API',
    async timeCheck() {
      const t0 = performance.now();
      await run('haproxy', ['-c', '-f', checked], { timeout: CHANGE_TIMEOUT_MS });
      return performance.now() - t0;
    },
    agentReloads(since) {
      const reasons: string[] = [];
      for (const line of readFileSync(join(t.dir, 'agent.log'), 'utf8').split('\n')) {
        if (!line.startsWith('{')) continue;
        const entry = JSON.parse(line) as { time?: number; msg?: string };
        if ((entry.time ?? 0) >= since && entry.msg?.startsWith(AGENT_RELOAD_FALLBACK)) reasons.push(entry.msg.slice(AGENT_RELOAD_FALLBACK.length).trim());
      }
      return { count: reasons.length, reasons };
    },
    async controllerSteps() {
      const { trace } = await a.call<{ trace: TraceEntry[] }>('GET', `/v2/lbaas/loadbalancers/${t.lbId}/trace`);
      // One job per change, in the order the changes were made; the create job comes first.
      const jobs = [...new Set(trace.filter((e) => e.operation !== 'loadbalancer.create').map((e) => e.job_id))];
      if (jobs.length !== returned.length) return returned.map(() => null);
      return jobs.map((job, i) => {
        const push = trace.find((e) => e.job_id === job && e.step === 'push-config');
        // The trace's timestamps are UTC without a zone, to the millisecond.
        return push && push.duration_ms !== null ? { queued_ms: Date.parse(`${push.started_at}Z`) - returned[i]!, push_ms: push.duration_ms } : null;
      });
    },
    async apply({ kind, member }) {
      const started = performance.now();
      if (kind === 'add') {
        const created = await a.call<{ member: { id: string } }>('POST', path, { member: { name: member.name, address: member.address, protocol_port: member.port, subnet_id: memberSubnet } });
        ids.set(member.name, created.member.id);
      } else {
        const id = ids.get(member.name);
        if (!id) throw new Error(`member ${member.name} was never added`);
        if (kind === 'remove') await a.call('DELETE', `${path}/${id}`);
        else await a.call('PUT', `${path}/${id}`, { member: kind === 'weight' ? { weight: CHANGE_WEIGHT } : { admin_state_up: kind === 'enable' } });
      }
      const t0 = performance.now();
      returned.push(Date.now());
      return { started, t0, server: ids.get(member.name)!, settle: () => waitLbSettled(a, t.lbId, CHANGE_TIMEOUT_MS) };
    },
  };
}

function reloadDriver(t: HandTarget): ChangeDriver {
  return {
    target: t,
    method: 'edit hand.cfg, master CLI reload',
    async apply({ kind, member }) {
      const started = performance.now();
      const server = t.servers.find((s) => s.name === member.name);
      if (kind === 'add') t.servers.push({ name: member.name, address: member.address, port: member.port, weight: 1, enabled: true });
      else if (!server) throw new Error(`server ${member.name} was never added`);
      else if (kind === 'remove') t.servers = t.servers.filter((s) => s !== server);
      else if (kind === 'weight') server.weight = CHANGE_WEIGHT;
      else server.enabled = kind === 'enable';
      writeFileSync(join(t.dir, 'hand.cfg'), t.config());
      const reloaded = t.process.reload();
      // Awaited through settle(); until then a failure must not count as unhandled.
      reloaded.catch(() => undefined);
      return { started, t0: started, server: member.name, settle: () => reloaded };
    },
  };
}

/** Whether `show servers state` shows the change made to `server`. */
function stateShows(kind: ChangeKind, server: string): (rows: ServerState[]) => boolean {
  return (rows) => {
    const row = rows.find((r) => r.server === server);
    switch (kind) {
      case 'add':
      case 'enable':
        return !!row && (row.adminState & ADMIN_MAINT_BITS) === 0;
      case 'weight':
        return row?.userWeight === CHANGE_WEIGHT;
      case 'disable':
        return !!row && (row.adminState & ADMIN_MAINT_BITS) !== 0;
      case 'remove':
        // Gone, or in maintenance on its way out: either way it takes no new request.
        return !row || (row.adminState & ADMIN_MAINT_BITS) !== 0;
    }
  };
}

interface ChangeTiming {
  kind: ChangeKind;
  member: string;
  /** How long the API call (or the file edit) took. */
  call_ms: number;
  /** From the call's return to the change being visible, by `seen_by`. */
  visible_ms: number;
  seen_by: 'traffic' | 'runtime state';
  /** From the call's return to `show servers state` showing it (every kind). */
  state_ms: number;
  /** From the call's return to a response from the member (add and enable only). */
  traffic_ms: number | null;
  /** From the call's return to ACTIVE (amphora) or to the reload's `Loading success` (hand-written). */
  settled_ms: number;
  /** Amphora only: the controller's share, from its trace. */
  controller: ControllerSteps | null;
}

interface ChangePhase {
  target: string;
  method: string;
  changes: ChangeTiming[];
  median_visible_ms: number;
  p90_visible_ms: number;
  max_visible_ms: number;
  median_by_kind: Partial<Record<ChangeKind, number>>;
  wrk: WrkResult;
  /** Requests wrk saw fail during the phase: socket errors + status ≥ 400. */
  failed: number;
  probe_requests: number;
  probe_errors: number;
  /** Amphora only: changes its agent made by a reload after HAProxy refused a runtime command, and HAProxy's reasons. */
  agent_reloads: { count: number; reasons: string[] } | null;
  /** Amphora only: median wall time of `haproxy -c` on its config, between the changes (see ChangeDriver.timeCheck). */
  haproxy_check_ms: number | null;
}

async function changePhase(d: ChangeDriver, plan: readonly Change[], p: Params, script: string): Promise<ChangePhase> {
  const t = d.target;
  const bound = CHANGE_LEAD_S + plan.length * CHANGE_BUDGET_S;
  progress(`${t.label}: ${plan.length} member changes under wrk -c${p.changeConnections} (at most ${bound} s)`);
  const phaseStart = Date.now();
  const wrk = startWrk(`http://${t.address}:${t.port}/`, p.changeConnections, bound, script);
  const probes = startProbes(t.address, t.port);
  const timings: ChangeTiming[] = [];
  const checks: number[] = [];
  try {
    await sleep(CHANGE_LEAD_S * 1000);
    for (const change of plan) {
      if (wrk.exited()) throw new Error(`${t.label}: wrk ended (its ${bound} s bound) before the changes did`);
      // Watching traffic starts before the call, in case the change takes effect before the call returns.
      const traffic = SEEN_IN_TRAFFIC.includes(change.kind) ? probes.waitFor(change.member.name, performance.now(), CHANGE_TIMEOUT_MS) : Promise.resolve(null);
      traffic.catch(() => undefined);
      const applied = await d.apply(change);
      const state = waitForState(t, stateShows(change.kind, applied.server), CHANGE_TIMEOUT_MS);
      // Awaited together, so that a failure of one is never left unhandled while the other is awaited.
      const outcomes = await Promise.allSettled([state, traffic]);
      const failure = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
      if (failure) throw failure.reason;
      const [stateAt, trafficAt] = outcomes.map((o) => (o as PromiseFulfilledResult<number | null>).value) as [number, number | null];
      await applied.settle();
      const settledAt = performance.now();
      const since = (at: number) => Math.max(0, at - applied.t0);
      const timing: ChangeTiming = {
        kind: change.kind,
        member: change.member.name,
        call_ms: applied.t0 - applied.started,
        visible_ms: since(trafficAt ?? stateAt),
        seen_by: trafficAt === null ? 'runtime state' : 'traffic',
        state_ms: since(stateAt),
        traffic_ms: trafficAt === null ? null : since(trafficAt),
        settled_ms: since(settledAt),
        controller: null,
      };
      timings.push(timing);
      progress(`${t.label}: ${change.kind} ${change.member.name}: visible after ${timing.visible_ms.toFixed(1)} ms (${timing.seen_by}), settled after ${timing.settled_ms.toFixed(0)} ms`);
      const gapStart = performance.now();
      if (d.timeCheck) checks.push(await d.timeCheck());
      await sleep(Math.max(0, CHANGE_GAP_MS - (performance.now() - gapStart)));
    }
  } finally {
    await probes.stop();
    wrk.finish();
  }
  const result = await wrk.result;
  if (d.controllerSteps) (await d.controllerSteps()).forEach((steps, i) => (timings[i]!.controller = steps));
  const visible = timings.map((c) => c.visible_ms);
  const byKind: Partial<Record<ChangeKind, number>> = {};
  for (const kind of CYCLE) {
    const xs = timings.filter((c) => c.kind === kind).map((c) => c.visible_ms);
    if (xs.length) byKind[kind] = median(xs);
  }
  return {
    target: t.label,
    method: d.method,
    changes: timings,
    median_visible_ms: median(visible),
    p90_visible_ms: percentile(visible, 90),
    max_visible_ms: Math.max(...visible),
    median_by_kind: byKind,
    wrk: result,
    failed: result.failed,
    probe_requests: probes.requests(),
    probe_errors: probes.errors(),
    agent_reloads: d.agentReloads ? d.agentReloads(phaseStart) : null,
    haproxy_check_ms: checks.length ? median(checks) : null,
  };
}

// --- report ----------------------------------------------------------------------------------

interface Report {
  params: Params;
  load_average: { before: number; after: number };
  backends: { kind: 'nginx' | 'node'; note: string };
  haproxy: { version: string; nbthread: number; maxconn: number };
  configs: { amphora: string; hand_written: string };
  throughput: { rows: ThroughputRow[]; ratios: ThroughputRatio[] };
  member_changes: { amphora: ChangePhase; hand_written: ChangePhase; visible_speedup: number };
}

function table(r: Report): string {
  const num = (v: number | null, digits = 1) => (v === null || Number.isNaN(v) ? '–' : v.toFixed(digits));
  const out: string[] = [];
  const line = (cells: Array<string | number>, widths: number[]) => cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]!) : String(c).padStart(widths[i]!))).join('');
  out.push(`HAProxy ${r.haproxy.version}, nbthread ${r.haproxy.nbthread}, maxconn ${r.haproxy.maxconn} in both; backends: ${r.backends.note}`);
  out.push('');
  out.push(`(a) Throughput, wrk -t1 --latency, ${r.params.seconds} s, median of ${r.params.reps} interleaved repetitions`);
  const w = [8, 14, 11, 9, 9, 13, 8];
  out.push(line(['conns', 'target', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'failed'], w));
  for (const row of r.throughput.rows) out.push(line([row.connections, row.target, num(row.rps, 0), num(row.p50_ms, 2), num(row.p99_ms, 2), num(row.cpu_us_per_request), row.failed], w));
  out.push('');
  out.push('amphora ÷ hand-written (median of per-repetition ratios; req/s target ≥ 0.97):');
  for (const q of r.throughput.ratios) out.push(`  c=${q.connections}: req/s ${num(q.rps, 3)}x, p99 ${num(q.p99, 2)}x, HAProxy CPU per request ${num(q.cpu_per_request, 3)}x`);
  out.push('');
  const { amphora: a, hand_written: h } = r.member_changes;
  out.push(`(b) Member changes under wrk -c${r.params.changeConnections}, ${a.changes.length} changes (${CYCLE.join(', ')}, repeated)`);
  const w2 = [46, 20, 20];
  out.push(line(['', 'amphora', 'hand-written'], w2));
  out.push(line(['how', 'API → runtime API', 'edit + reload'], w2));
  out.push(line(['visible after, median ms (< 100)', num(a.median_visible_ms), num(h.median_visible_ms)], w2));
  out.push(line(['  p90 / max ms', `${num(a.p90_visible_ms)} / ${num(a.max_visible_ms)}`, `${num(h.p90_visible_ms)} / ${num(h.max_visible_ms)}`], w2));
  for (const kind of CYCLE) {
    if (a.median_by_kind[kind] === undefined) continue;
    out.push(line([`  ${kind} (${SEEN_IN_TRAFFIC.includes(kind) ? 'traffic' : 'runtime state'}), median ms`, num(a.median_by_kind[kind]!), num(h.median_by_kind[kind] ?? null)], w2));
  }
  out.push(line(['API call / edit, median ms', num(median(a.changes.map((c) => c.call_ms))), num(median(h.changes.map((c) => c.call_ms)))], w2));
  const steps = a.changes.map((c) => c.controller).filter((c): c is ControllerSteps => c !== null);
  if (steps.length) {
    out.push(line(['  amphora: queued until push-config, median ms', num(median(steps.map((c) => c.queued_ms))), ''], w2));
    out.push(line(['  amphora: push-config step, median ms', num(median(steps.map((c) => c.push_ms))), ''], w2));
    out.push(line(['  haproxy -c alone, same load, median ms', num(a.haproxy_check_ms), ''], w2));
  }
  out.push(line(['until ACTIVE / reloaded, median ms', num(median(a.changes.map((c) => c.settled_ms))), num(median(h.changes.map((c) => c.settled_ms)))], w2));
  out.push(line(['failed requests (wrk; target 0)', a.failed, h.failed], w2));
  const kinds = (x: WrkResult) => `${x.errors.connect}/${x.errors.read}/${x.errors.write}/${x.errors.timeout}/${x.errors.status}`;
  out.push(line(['  connect/read/write/timeout/status ≥ 400', kinds(a.wrk), kinds(h.wrk)], w2));
  out.push(line(['  wrk requests during the phase', a.wrk.requests, h.wrk.requests], w2));
  out.push(line(['  probe requests failed / sent', `${a.probe_errors} / ${a.probe_requests}`, `${h.probe_errors} / ${h.probe_requests}`], w2));
  if (a.agent_reloads) out.push(line(['amphora changes the agent reloaded for', a.agent_reloads.count, '–'], w2));
  const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
  for (const reason of [...new Set((a.agent_reloads?.reasons ?? []).map((x) => x.replace(uuid, '<id>')))].slice(0, 3)) out.push(`  agent: ${reason.slice(0, 160)}`);
  out.push(`hand-written median ÷ amphora median: ${num(r.member_changes.visible_speedup, 2)}x (above 1: the amphora shows a change sooner)`);
  out.push('');
  out.push(`Load average (1 min): ${r.load_average.before.toFixed(2)} before, ${r.load_average.after.toFixed(2)} after; the machine is shared, compare within one run.`);
  return out.join('\n');
}

// --- main ------------------------------------------------------------------------------------

const HELP = `Usage: node dist/bench/amphora-dataplane.js [options]

Throughput and member-change latency of an Ostia amphora against a hand-written HAProxy config
on the same binary and backends, measured in the same run.

  --json                     print one JSON document instead of the table
  --seconds N                duration of each throughput run (default 10)
  --connections A,B          wrk connection counts (default 10,100)
  --reps N                   interleaved repetitions per count (default 3)
  --changes N                member changes per target (default 20)
  --change-connections N     wrk connections during the changes (default 50)
  --help                     this text
`;

function parseParams(): { p: Params; json: boolean } | null {
  const { values } = parseArgs({
    options: {
      json: { type: 'boolean', default: false },
      seconds: { type: 'string', default: '10' },
      connections: { type: 'string', default: '10,100' },
      reps: { type: 'string', default: '3' },
      changes: { type: 'string', default: '20' },
      'change-connections': { type: 'string', default: '50' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return null;
  const positive = (name: string, v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, got '${v}'`);
    return n;
  };
  const p: Params = {
    seconds: positive('seconds', values.seconds),
    connections: values.connections.split(',').map((c) => positive('connections', c.trim())),
    reps: positive('reps', values.reps),
    changes: positive('changes', values.changes),
    changeConnections: positive('change-connections', values['change-connections']),
  };
  return { p, json: values.json };
}

async function main(): Promise<void> {
  const parsed = parseParams();
  if (!parsed) {
    process.stdout.write(HELP);
    return;
  }
  const { p, json } = parsed;
  const loadBefore = loadavg()[0]!;
  const work = tempDir('bench-dataplane');
  const haproxyLines: string[] = [];
  let farm: BackendFarm | undefined;
  let ostia: OstiaProcess | undefined;
  let hand: HandTarget | undefined;
  let amphoraRoot: string | undefined;
  let cleaned: Promise<void> | undefined;
  const cleanup = () =>
    (cleaned ??= (async () => {
      killAllWrk();
      await hand?.process.stop().catch((e: Error) => progress(`hand-written HAProxy stop: ${e.message}`));
      // Amphorae outlive their controller by design: stop the controller first, so that it does not fail over the
      // amphora killed next, then kill whatever runs under the amphorae directory.
      if (amphoraRoot) killAll(processesUnder(amphoraRoot));
      await ostia?.stop();
      if (amphoraRoot) {
        const root = amphoraRoot;
        killAll(processesUnder(root));
        await eventually(() => processesUnder(root).length === 0, 'no process left under the amphorae directory', 5_000, 100).catch((e: Error) => progress(e.message));
      }
      await farm?.stop();
      work.remove();
    })());
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    interrupted = true;
    progress(`${signal}: cleaning up`);
    void cleanup().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // The last resort when neither `finally` nor a signal handler ran: amphorae and the hand-written HAProxy run in
  // sessions of their own and would outlive the bench.
  process.once('exit', () => {
    for (const dir of [amphoraRoot, join(work.path, 'hand')]) if (dir) killAll(processesUnder(dir));
  });
  try {
    const script = writeWrkScript(work.path);
    const extras = Math.ceil(p.changes / CYCLE.length);
    const memberPrefix = `127.32.${1 + Math.floor(Math.random() * 254)}`;
    const backendDir = join(work.path, 'backends');
    mkdirSync(backendDir);
    farm = await startBackendFarm(backendDir, memberPrefix, randomPort(), extras);
    const backendsNote =
      farm.kind === 'nginx'
        ? `2 × nginx (worker_processes 1) on ${farm.primaries.map((e) => `${e.address}:${e.port}`).join(', ')}`
        : `2 × Node (src/amphora/testing.ts startBackend, one process each) because nginx is not installed — slower than nginx, so the backends may be the bottleneck; install it with apt-get install -y nginx wrk`;
    progress(`backends: ${backendsNote}`);

    const configFile = await writeAmphoraConfig(work.path);
    progress('starting ostia up (amphora provider)');
    ostia = await startOstia({ extraArgs: ['--config', configFile] });
    amphoraRoot = join(ostia.dataDir, 'amphorae');
    const a = api(ostia, await ostia.token('ostia-demo'));
    const listenerPort = randomPort();
    const amp = await buildAmphora(ostia, a, farm, listenerPort);
    await waitServing(amp);
    const info = await amp.runtime.showInfo();
    const nbthread = Number(info.Nbthread);
    const maxconn = Number(info.Maxconn);
    progress(`amphora ${amp.dir}: HAProxy ${info.Version}, nbthread ${nbthread}, maxconn ${maxconn}`);

    progress('starting the hand-written HAProxy');
    hand = await startHand(join(work.path, 'hand'), farm, listenerPort, maxconn, nbthread, haproxyLines);
    await waitServing(hand);
    const handConfigText = hand.config();
    const handInfo = await hand.runtime.showInfo();
    if (handInfo.Nbthread !== info.Nbthread || handInfo.Maxconn !== info.Maxconn || handInfo.Version !== info.Version)
      throw new Error(`the hand-written HAProxy runs nbthread ${handInfo.Nbthread}, maxconn ${handInfo.Maxconn}, ${handInfo.Version}; the amphora's ${info.Nbthread}, ${info.Maxconn}, ${info.Version}`);

    const tp = await throughput(amp, hand, p, script);

    const plan = changePlan(p.changes, farm.extras);
    const ampChanges = await changePhase(amphoraDriver(amp, a, await ostia.subnetId('private-subnet'), work.path), plan, p, script);
    const handChanges = await changePhase(reloadDriver(hand), plan, p, script);

    const report: Report = {
      params: p,
      load_average: { before: loadBefore, after: loadavg()[0]! },
      backends: { kind: farm.kind, note: backendsNote },
      haproxy: { version: info.Version!, nbthread, maxconn },
      configs: { amphora: amp.config, hand_written: handConfigText },
      throughput: tp,
      member_changes: { amphora: ampChanges, hand_written: handChanges, visible_speedup: handChanges.median_visible_ms / ampChanges.median_visible_ms },
    };
    process.stdout.write(json ? JSON.stringify(report) + '\n' : table(report) + '\n');
  } catch (e) {
    // After SIGINT, failures are the interruption's (wrk killed), not HAProxy's.
    if (!interrupted && haproxyLines.length) progress(`hand-written HAProxy said:\n${haproxyLines.slice(-10).join('\n')}`);
    throw e;
  } finally {
    await cleanup();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});

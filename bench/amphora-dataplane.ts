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
 *     and it runs in a session of its own, as the amphora's HAProxy does (see ./support/hand-haproxy.ts: the kernel
 *     schedules sessions as groups, which matters more than any config line on a loaded machine).
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
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { HaproxyFiles } from '../src/amphora-agent/haproxy/process.js';
import { eventually, httpGet, loopbackAddress, randomPort } from '../test/support/amphora-fixtures.js';
import { benchArgs, positiveInt, positiveInts } from './support/args.js';
import type { Endpoint } from './support/backends.js';
import { handGlobal } from './support/hand-haproxy.js';
import { interleavedThroughput, type LoadCase, type LoadRun, type ThroughputRatio, type ThroughputRow } from './support/interleave.js';
import { inLab, labHeadline, labLoadLine, runBench, type Lab, type LabReport } from './support/lab.js';
import { readTrace, traceTime, type ApiClient, type LoadBalancerView } from './support/lifecycle-api.js';
import { pollUntil, sleep } from './support/poll.js';
import { cpuMeter } from './support/processes.js';
import { progress } from './support/progress.js';
import { median, percentile } from './support/stats.js';
import { line, num } from './support/table.js';
import { agentReloadReasons, assertSameHaproxy, findAmphora, haproxySettings, waitLbActive, type AmphoraTarget, type HandTarget, type HaproxySettings, type HaproxyTarget } from './support/targets.js';
import { startWrk, writeWrkScript, type WrkResult } from '../src/cli/baseline/wrk.js';

const run = promisify(execFile);

const ACTIVE_TIMEOUT_MS = 120_000;
const CHANGE_TIMEOUT_MS = 30_000;
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
const CHANGE_WEIGHT = 3;
/** The order changes cycle through, one extra member per cycle. */
const CYCLE = ['add', 'weight', 'disable', 'enable', 'remove'] as const;
type ChangeKind = (typeof CYCLE)[number];
/** Seen by traffic where a change makes a member answer; by runtime state where it only stops or reweighs one. */
const SEEN_IN_TRAFFIC: readonly ChangeKind[] = ['add', 'enable'];
// srv_admin_state bits of HAProxy 2.6 (server.h): forced, inherited, configured, resolution and hostname maintenance.
const ADMIN_MAINT_BITS = 0x01 | 0x02 | 0x04 | 0x20 | 0x40;

interface Params {
  seconds: number;
  connections: number[];
  reps: number;
  changes: number;
  changeConnections: number;
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

/** Either load balancer, with the name of the backend that holds the members. */
interface Target extends HaproxyTarget {
  readonly backend: string;
}

interface Amphora extends AmphoraTarget, Target {
  readonly lbId: string;
  readonly poolId: string;
}

interface HandServer {
  name: string;
  address: string;
  port: number;
  weight: number;
  enabled: boolean;
}

interface Hand extends HandTarget, Target {
  servers: HandServer[];
  config(): string;
}

const HAND_BACKEND = 'be';

/**
 * What an expert writes by hand for one HTTP listener over a roundrobin pool with an HTTP health
 * check: the amphora's global limits (maxconn, nbthread) and stats socket, the timeouts and
 * check timings the amphora's listener and monitor have, and nothing else.
 */
function handConfig(files: HaproxyFiles, limits: HaproxySettings, vip: string, port: number, servers: readonly HandServer[]): string {
  return [
    ...handGlobal(files, limits),
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

async function buildAmphora({ ostia, api: a, farm }: Lab, port: number): Promise<Amphora> {
  const [vipSubnet, memberSubnet] = await Promise.all([ostia.subnetId('public-subnet'), ostia.subnetId('private-subnet')]);
  const created = await a.json<{ loadbalancer: LoadBalancerView & { pools: Array<{ id: string }> } }>('POST', '/v2/lbaas/loadbalancers', {
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
  await waitLbActive(a, lb.id, ACTIVE_TIMEOUT_MS);
  const amphora = findAmphora(ostia.dataDir, lb.id, lb.vip_address, port);
  const backend = /^backend (\S+)/m.exec(amphora.config)?.[1];
  if (!backend) throw new Error(`no backend in ${join(amphora.dir, 'haproxy.cfg')}`);
  return { ...amphora, backend, lbId: lb.id, poolId: lb.pools[0]!.id };
}

async function startHand(lab: Lab, port: number, limits: HaproxySettings): Promise<Hand> {
  const vip = loopbackAddress();
  const servers = lab.farm.primaries.map((e, i) => ({ name: `s${i + 1}`, address: e.address, port: e.port, weight: 1, enabled: true }));
  const started = await lab.startHand(vip, port, (files) => handConfig(files, limits, vip, port, servers));
  const hand: Hand = { ...started, backend: HAND_BACKEND, servers, config: () => handConfig(started.haproxy.files, limits, vip, port, hand.servers) };
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
  const at = await pollUntil(
    async () => {
      // During a reload the socket may briefly refuse; that is a poll that saw nothing.
      const dump = await t.runtime.showServersState().catch(() => null);
      return dump !== null && seen(parseServersState(dump).filter((r) => r.backend === t.backend));
    },
    STATE_POLL_MS,
    timeoutMs,
  );
  if (at === null) throw new Error(`${t.label}: the change did not show in 'show servers state' within ${timeoutMs} ms`);
  return at;
}

// --- (a) throughput ----------------------------------------------------------------------------

async function wrkRun(t: Target, connections: number, seconds: number, script: string): Promise<LoadRun> {
  const cpuPerRequest = cpuMeter(t.haproxyPids());
  const result = await startWrk(`http://${t.address}:${t.port}/`, connections, seconds, script).result;
  return { ...result, cpu_us_per_request: cpuPerRequest(result.requests) };
}

function throughput(amphora: Target, hand: Target, p: Params, script: string): Promise<{ rows: Array<ThroughputRow<LoadCase, LoadRun>>; ratios: Array<ThroughputRatio<LoadCase>> }> {
  return interleavedThroughput({
    targets: [amphora, hand],
    cases: p.connections.map((connections) => ({ connections })),
    warmups: [{ connections: Math.max(...p.connections) }],
    reps: p.reps,
    seconds: p.seconds,
    run: (t, { connections }, seconds) => wrkRun(t, connections, seconds, script),
  });
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

function amphoraDriver(t: Amphora, a: ApiClient, memberSubnet: string, scratch: string): ChangeDriver {
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
      const reasons = agentReloadReasons(t, since);
      return { count: reasons.length, reasons };
    },
    async controllerSteps() {
      const trace = await readTrace(a, t.lbId);
      // One job per change, in the order the changes were made; the create job comes first.
      const jobs = [...new Set(trace.filter((e) => e.operation !== 'loadbalancer.create').map((e) => e.job_id))];
      if (jobs.length !== returned.length) return returned.map(() => null);
      return jobs.map((job, i) => {
        const push = trace.find((e) => e.job_id === job && e.step === 'push-config');
        return push && push.duration_ms !== null ? { queued_ms: traceTime(push.started_at) - returned[i]!, push_ms: push.duration_ms } : null;
      });
    },
    async apply({ kind, member }) {
      const started = performance.now();
      if (kind === 'add') {
        const created = await a.json<{ member: { id: string } }>('POST', path, { member: { name: member.name, address: member.address, protocol_port: member.port, subnet_id: memberSubnet } });
        ids.set(member.name, created.member.id);
      } else {
        const id = ids.get(member.name);
        if (!id) throw new Error(`member ${member.name} was never added`);
        if (kind === 'remove') await a.json('DELETE', `${path}/${id}`);
        else await a.json('PUT', `${path}/${id}`, { member: kind === 'weight' ? { weight: CHANGE_WEIGHT } : { admin_state_up: kind === 'enable' } });
      }
      const t0 = performance.now();
      returned.push(Date.now());
      return { started, t0, server: ids.get(member.name)!, settle: () => waitLbActive(a, t.lbId, CHANGE_TIMEOUT_MS) };
    },
  };
}

function reloadDriver(t: Hand): ChangeDriver {
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
      t.haproxy.writeConfig(t.config());
      const reloaded = t.haproxy.process.reload();
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

interface Report extends LabReport {
  params: Params;
  configs: { amphora: string; hand_written: string };
  throughput: { rows: Array<ThroughputRow<LoadCase, LoadRun>>; ratios: Array<ThroughputRatio<LoadCase>> };
  member_changes: { amphora: ChangePhase; hand_written: ChangePhase; visible_speedup: number };
}

function table(r: Report): string {
  const out: string[] = [];
  out.push(labHeadline(r));
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
  out.push(labLoadLine(r));
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
  const values = benchArgs({
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10,100' },
    reps: { type: 'string', default: '3' },
    changes: { type: 'string', default: '20' },
    'change-connections': { type: 'string', default: '50' },
  });
  if (!values) return null;
  const p: Params = {
    seconds: positiveInt('seconds', values.seconds),
    connections: positiveInts('connections', values.connections),
    reps: positiveInt('reps', values.reps),
    changes: positiveInt('changes', values.changes),
    changeConnections: positiveInt('change-connections', values['change-connections']),
  };
  return { p, json: values.json };
}

runBench(HELP, parseParams, ({ p, json }) =>
  inLab({ name: 'bench-dataplane', extras: Math.ceil(p.changes / CYCLE.length) }, async (lab) => {
    const script = writeWrkScript(lab.work);
    const listenerPort = randomPort();
    const amp = await buildAmphora(lab, listenerPort);
    await waitServing(amp);
    const haproxy = await haproxySettings(amp);
    progress(`amphora ${amp.dir}: HAProxy ${haproxy.version}, nbthread ${haproxy.nbthread}, maxconn ${haproxy.maxconn}`);

    const hand = await startHand(lab, listenerPort, haproxy);
    await waitServing(hand);
    const handConfigText = hand.config();
    await assertSameHaproxy(hand, haproxy);

    const tp = await throughput(amp, hand, p, script);

    const plan = changePlan(p.changes, lab.farm.extras);
    const ampChanges = await changePhase(amphoraDriver(amp, lab.api, await lab.ostia.subnetId('private-subnet'), lab.work), plan, p, script);
    const handChanges = await changePhase(reloadDriver(hand), plan, p, script);

    const report: Report = {
      params: p,
      ...lab.report(haproxy),
      configs: { amphora: amp.config, hand_written: handConfigText },
      throughput: tp,
      member_changes: { amphora: ampChanges, hand_written: handChanges, visible_speedup: handChanges.median_visible_ms / ampChanges.median_visible_ms },
    };
    process.stdout.write(json ? JSON.stringify(report) + '\n' : table(report) + '\n');
  }),
);

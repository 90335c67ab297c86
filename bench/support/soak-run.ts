/**
 * The soak's run (bench/soak.ts): requests issued open-loop — on a schedule of `rate` a second,
 * whether or not earlier ones were answered, a request sent late counted as such and its latency
 * taken from when it was due — for a bounded time, with the server processes' memory, CPU and the
 * load average sampled alongside; figures per reporting window. Then the fleet is let settle and
 * the API's list is checked against what the soak knows.
 */
import { loadavg } from 'node:os';
import type { ApiClient, LoadBalancerView, Reply } from './lifecycle-api.js';
import { cpuSecondsOfLive, memoryOf } from './processes.js';
import { progress } from './progress.js';
import type { Deployment } from './soak-deployments.js';
import type { Fleet } from './soak-fleet.js';
import { Mix, OPS, type Op } from './soak-mix.js';
import { percentile } from './stats.js';
import { num } from './table.js';

export interface SoakPlan {
  minutes: number;
  windowMinutes: number;
  /** Requests a second. */
  rate: number;
  /** Load balancers seeded, and the count creates and deletes keep. */
  lbs: number;
}

/** A request sent more than this after it was due is counted late. */
export const LATE_MS = 20;
/** Requests waiting for an answer beyond which the soak sends no more (each counted an error): a bound on its own memory. */
const MAX_IN_FLIGHT = 2_000;
/** How long answers to the last requests are waited for. */
const DRAIN_MS = 60_000;
/** How long the load balancers written last get to settle before the final check. */
const SETTLE_MS = 60_000;
const SETTLE_POLL_MS = 250;
/** Samples of memory and CPU per window, at least; every 5 s at most. */
const SAMPLES_PER_WINDOW = 12;
const SAMPLE_MAX_MS = 5_000;
const KIB_PER_MIB = 1024;

export interface WindowFigures {
  window: number;
  from_minute: number;
  to_minute: number;
  /** Requests due in the window that were answered (any status). */
  requests: number;
  errors: number;
  errors_by_kind: Record<string, number>;
  /** Sent more than LATE_MS after they were due. */
  late: number;
  p50_ms: number;
  p99_ms: number;
  achieved_rps: number;
  /** The API and worker processes together: mean and highest of the window's samples. */
  server_rss_mib: { mean: number; max: number };
  /** PostgreSQL's processes (proportional set size, as its shared buffers are shared); null on SQLite. */
  database_pss_mib: number | null;
  /** PostgreSQL's CPU, % of one core (a backend that ended between two samples loses its last seconds); null on SQLite. */
  database_cpu_percent: number | null;
  /** CPU of the server processes, % of one core, and per request answered. */
  server_cpu_percent: number;
  server_cpu_ms_per_request: number;
  /** CPU of the bench itself, % of one core. */
  client_cpu_percent: number;
  load_1m: number;
  load_balancers: number;
}

export interface OpFigures {
  op: Op;
  requests: number;
  errors: number;
  p50_ms: number;
  p99_ms: number;
}

export interface FinalCheck {
  expected: number;
  listed: number;
  by_status: Record<string, number>;
  /** Load balancers the soak holds that the list lacks, and the other way round (deletes not finished). */
  missing: number;
  extra: number;
  settle_seconds: number;
  problems: string[];
}

export interface SoakRun {
  windows: WindowFigures[];
  ops: OpFigures[];
  errors: number;
  /** Each kind of error, counted, with the first answer of its kind. */
  error_kinds: Array<{ kind: string; count: number; example: string }>;
  late: number;
  writes_deferred: number;
  final_check: FinalCheck;
  memory: { first_window_mib: number; last_window_mib: number; ratio: number; flat: boolean };
}

interface Sample {
  at: number;
  serverRssKiB: number;
  databasePssKiB: number | null;
  /** CPU seconds of each PostgreSQL process. */
  databaseCpuS: Map<number, number>;
  serverCpuS: number;
  /** This process's, which sends the requests: a busy client would make the server look slow. */
  clientCpuS: number;
  load1: number;
}

class Tally {
  readonly latencies: number[] = [];
  errors = 0;
  readonly kinds = new Map<string, number>();
  late = 0;
}

/** Within this much of the first window, the last window's memory is flat. */
export const FLAT_WITHIN = 0.1;

export async function runSoak(dep: Deployment, fleet: Fleet, plan: SoakPlan): Promise<SoakRun> {
  const windowMs = plan.windowMinutes * 60_000;
  const totalMs = plan.minutes * 60_000;
  const windowCount = Math.ceil(totalMs / windowMs);
  const slots = Math.round((totalMs / 1000) * plan.rate);
  const interval = 1000 / plan.rate;
  const windows = Array.from({ length: windowCount }, () => new Tally());
  const byOp = new Map(OPS.map((op) => [op, new Tally()]));
  const examples = new Map<string, string>();
  const mix = new Mix(fleet, plan.lbs);
  const apis = dep.apis;
  const lbCounts: number[] = [];
  let inFlight = 0;
  let drained: (() => void) | undefined;

  const fail = (tally: Tally[], kind: string, example: string) => {
    for (const t of tally) {
      t.errors++;
      t.kinds.set(kind, (t.kinds.get(kind) ?? 0) + 1);
    }
    if (!examples.has(kind)) examples.set(kind, example.slice(0, 300));
  };

  const send = (slot: number, due: number, start: number) => {
    const win = windows[Math.min(windowCount - 1, Math.floor((due - start) / windowMs))]!;
    const sentAt = performance.now();
    if (sentAt - due > LATE_MS) win.late++;
    if (inFlight >= MAX_IN_FLIGHT) {
      fail([win], 'not sent', `${MAX_IN_FLIGHT} requests were still waiting for an answer`);
      return;
    }
    const call = mix.next(sentAt);
    const opTally = byOp.get(call.op)!;
    inFlight++;
    const done = (reply: Reply | null, failure: string | null) => {
      const now = performance.now();
      const wrong = call.settle(reply, now);
      win.latencies.push(now - due);
      opTally.latencies.push(now - due);
      if (failure) fail([win, opTally], `${call.op}: ${failure}`, failure);
      else if (reply!.status !== call.expect) fail([win, opTally], `${call.op}: HTTP ${reply!.status}`, `${call.method} ${call.path}: ${reply!.text}`);
      else if (wrong) fail([win, opTally], `${call.op}: ${wrong}`, `${call.method} ${call.path}: ${reply!.text}`);
      if (--inFlight === 0) drained?.();
    };
    apis[slot % apis.length]!.request(call.method, call.path, call.body).then(
      (reply) => done(reply, null),
      (e: Error) => done(null, e.message),
    );
  };

  // Samples at fixed offsets from the start, the last of each window at its end.
  const sampleMs = Math.min(SAMPLE_MAX_MS, windowMs / SAMPLES_PER_WINDOW);
  const samples: Sample[] = [];
  const gone = new Set<string>();
  const sample = (at: number): Sample => {
    const rss = (pids: number[]) => pids.reduce((sum, pid) => sum + (memoryOf(pid)?.rssKiB ?? 0), 0);
    const pss = (pids: number[]) => pids.reduce((sum, pid) => sum + (memoryOf(pid)?.pssKiB ?? 0), 0);
    const [serverPids, databasePids] = [dep.serverPids(), dep.databasePids()];
    for (const name of dep.gone()) gone.add(name);
    const databaseCpuS = new Map(databasePids.map((pid) => [pid, cpuSecondsOfLive([pid])]));
    return { at, serverRssKiB: rss(serverPids), databasePssKiB: databasePids.length ? pss(databasePids) : null, databaseCpuS, serverCpuS: cpuSecondsOfLive(serverPids), clientCpuS: clientCpuSeconds(), load1: loadavg()[0]! };
  };
  const windowOf = (at: number) => Math.max(0, Math.ceil(at / windowMs) - 1);

  const start = performance.now();
  samples.push(sample(0));
  let nextSample = 1;
  let sampler: NodeJS.Timeout | undefined;
  const takeSample = () => {
    const at = nextSample++ * sampleMs;
    samples.push(sample(at));
    if (at % windowMs !== 0 && at !== totalMs) return;
    const w = windowOf(at);
    lbCounts[w] = fleet.size;
    progress(windowLine(w, windows[w]!, samples, windowMs));
  };
  const armSampler = () => {
    if (nextSample * sampleMs > totalMs) return;
    sampler = setTimeout(() => {
      takeSample();
      armSampler();
    }, start + nextSample * sampleMs - performance.now());
  };
  armSampler();

  // Open loop: every due request is sent, however many earlier ones wait; time bounds the loop, not answers.
  let slot = 0;
  try {
    while (slot < slots) {
      const now = performance.now();
      while (slot < slots && start + slot * interval <= now) {
        send(slot, start + slot * interval, start);
        slot++;
      }
      if (slot < slots) await new Promise((r) => setTimeout(r, Math.max(1, start + slot * interval - performance.now())));
    }
    if (inFlight > 0) {
      const waited = new Promise<void>((r) => (drained = r));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([waited, new Promise<void>((r) => (timer = setTimeout(r, DRAIN_MS)))]);
      clearTimeout(timer);
      if (inFlight > 0) fail([windows.at(-1)!], 'no answer', `${inFlight} requests unanswered ${DRAIN_MS / 1000} s after the last was sent`);
    }
    // The last window's closing sample, if its timer has not fired yet.
    clearTimeout(sampler);
    while (nextSample * sampleMs <= totalMs) takeSample();
  } finally {
    clearTimeout(sampler);
  }
  for (const name of gone) fail([windows.at(-1)!], 'server process gone', `${name} is no longer running`);

  const figures = windows.map((t, w) => windowFigures(w, t, samples, windowMs, totalMs, lbCounts[w] ?? fleet.size));
  const firstMib = figures[0]!.server_rss_mib.mean;
  const lastMib = figures.at(-1)!.server_rss_mib.mean;
  const ratio = lastMib / firstMib;
  const finalCheck = await settleAndCheck(apis[0]!, fleet);
  return {
    windows: figures,
    ops: OPS.map((op) => {
      const t = byOp.get(op)!;
      return { op, requests: t.latencies.length, errors: t.errors, p50_ms: percentile(t.latencies, 50), p99_ms: percentile(t.latencies, 99) };
    }).filter((o) => o.requests > 0),
    errors: figures.reduce((sum, w) => sum + w.errors, 0),
    error_kinds: [...examples].map(([kind, example]) => ({ kind, count: figures.reduce((sum, w) => sum + (w.errors_by_kind[kind] ?? 0), 0), example })),
    late: figures.reduce((sum, w) => sum + w.late, 0),
    writes_deferred: mix.writesDeferred,
    final_check: finalCheck,
    memory: { first_window_mib: firstMib, last_window_mib: lastMib, ratio, flat: Math.abs(ratio - 1) <= FLAT_WITHIN },
  };
}

const mib = (kib: number) => kib / KIB_PER_MIB;

function clientCpuSeconds(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

/** PostgreSQL's CPU seconds from one sample to another: the backends that started since count whole. */
function databaseCpuSince(from: Sample, to: Sample): number {
  let seconds = 0;
  for (const [pid, cpu] of to.databaseCpuS) seconds += cpu - (from.databaseCpuS.get(pid) ?? 0);
  return seconds;
}

/** CPU seconds spent between two samples, as % of one core. */
const cpuPercent = (from: Sample, to: Sample, seconds: number) => (to.at > from.at ? (seconds / ((to.at - from.at) / 1000)) * 100 : NaN);
const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / values.length;

/** The samples of window `w`: those taken after its start up to its end; the first window also has the one at 0. */
function samplesOf(w: number, samples: readonly Sample[], windowMs: number): Sample[] {
  return samples.filter((s) => (s.at === 0 ? w === 0 : Math.ceil(s.at / windowMs) - 1 === w));
}

function windowFigures(w: number, t: Tally, samples: readonly Sample[], windowMs: number, totalMs: number, lbs: number): WindowFigures {
  const own = samplesOf(w, samples, windowMs);
  const before = w === 0 ? samples[0]! : samplesOf(w - 1, samples, windowMs).at(-1)!;
  const last = own.at(-1)!;
  const seconds = (Math.min(totalMs, (w + 1) * windowMs) - w * windowMs) / 1000;
  const database = own.map((s) => s.databasePssKiB).filter((v) => v !== null);
  return {
    window: w + 1,
    from_minute: (w * windowMs) / 60_000,
    to_minute: Math.min(totalMs, (w + 1) * windowMs) / 60_000,
    requests: t.latencies.length,
    errors: t.errors,
    errors_by_kind: Object.fromEntries(t.kinds),
    late: t.late,
    p50_ms: percentile(t.latencies, 50),
    p99_ms: percentile(t.latencies, 99),
    achieved_rps: t.latencies.length / seconds,
    server_rss_mib: { mean: mib(mean(own.map((s) => s.serverRssKiB))), max: mib(Math.max(...own.map((s) => s.serverRssKiB))) },
    database_pss_mib: database.length ? mib(mean(database)) : null,
    database_cpu_percent: database.length ? cpuPercent(before, last, databaseCpuSince(before, last)) : null,
    server_cpu_percent: cpuPercent(before, last, last.serverCpuS - before.serverCpuS),
    server_cpu_ms_per_request: ((last.serverCpuS - before.serverCpuS) * 1000) / t.latencies.length,
    client_cpu_percent: cpuPercent(before, last, last.clientCpuS - before.clientCpuS),
    load_1m: last.load1,
    load_balancers: lbs,
  };
}

/** The progress line at a window's end: what was answered so far. */
function windowLine(w: number, t: Tally, samples: readonly Sample[], windowMs: number): string {
  const own = samplesOf(w, samples, windowMs);
  return `window ${w + 1}: ${t.latencies.length} answered so far, ${t.errors} errors, p99 ${num(percentile(t.latencies, 99))} ms, server RSS ${num(mib(mean(own.map((s) => s.serverRssKiB))))} MiB, load ${num(own.at(-1)!.load1, 2)}`;
}

/** Lets the load balancers written last reach ACTIVE and the deletes finish, then compares the API's whole list with the fleet. */
async function settleAndCheck(api: ApiClient, fleet: Fleet): Promise<FinalCheck> {
  const t0 = performance.now();
  const expected = new Set(fleet.all().map((lb) => lb.id));
  let listed: LoadBalancerView[] = [];
  for (;;) {
    listed = await listAll(api);
    const settling = listed.some((lb) => lb.provisioning_status.startsWith('PENDING_')) || listed.length !== expected.size;
    if (!settling || performance.now() - t0 > SETTLE_MS) break;
    await new Promise((r) => setTimeout(r, SETTLE_POLL_MS));
  }
  const byStatus: Record<string, number> = {};
  for (const lb of listed) byStatus[lb.provisioning_status] = (byStatus[lb.provisioning_status] ?? 0) + 1;
  const seen = new Set(listed.map((lb) => lb.id));
  const missing = [...expected].filter((id) => !seen.has(id)).length;
  const extra = listed.filter((lb) => !expected.has(lb.id)).length;
  const problems = [
    ...Object.entries(byStatus)
      .filter(([status]) => status !== 'ACTIVE')
      .map(([status, n]) => `${n} load balancers ${status}`),
    ...(missing ? [`${missing} load balancers the soak created are not listed`] : []),
    ...(extra ? [`${extra} load balancers the soak deleted are still listed`] : []),
  ];
  return { expected: expected.size, listed: listed.length, by_status: byStatus, missing, extra, settle_seconds: (performance.now() - t0) / 1000, problems };
}

const LIST_PAGE = 1000;

/** The project's whole list, page by page as clients walk it. */
async function listAll(api: ApiClient): Promise<LoadBalancerView[]> {
  const all: LoadBalancerView[] = [];
  for (;;) {
    const marker = all.length ? `&marker=${all.at(-1)!.id}` : '';
    const page = (await api.json<{ loadbalancers: LoadBalancerView[] }>('GET', `/v2/lbaas/loadbalancers?limit=${LIST_PAGE}&fields=id,provisioning_status${marker}`)).loadbalancers;
    all.push(...page);
    if (page.length < LIST_PAGE) return all;
  }
}

/**
 * OVN provider benchmark (issue 5, "Performance"), against a real single-node OVN (the test
 * sandbox: NB/SB ovsdb-server, ovn-northd, OVS userspace, ovn-controller) and an in-process Ostia
 * (API + worker, SQLite file, default worker settings; bench/support/ovn-rig.ts).
 *
 *   npm run build && node dist/bench/ovn.js [--json] [--reps 30] [--scale 1000,10000]
 *       [--concurrency 16] [--time-limit 600] [--reconcile-reps 3] [--baseline-ref f85cc06]
 *
 * (1) create → ACTIVE of a load balancer with a TCP listener, a SOURCE_IP_PORT pool and 2 members
 *     (one graph create through the API), `--reps` times, each deleted before the next. Measured
 *     in the same run, interleaved: the same rows written the way the upstream ovn-octavia-provider
 *     writes them, one `ovn-nbctl` call per Octavia step (bench/support/ovn-nbctl.ts), the
 *     baseline our median is a ratio of; and the noop provider's create → ACTIVE on the same Ostia
 *     (API and worker alone, the floor).
 * (2) for each `--scale` N, on a fresh sandbox and Ostia: N such load balancers created through
 *     the API with `--concurrency` in flight; wall time, LBs/s, and per tenth of the run (in order
 *     of completion) the NB transaction time per transaction (Northbound.stats), LBs/s and the
 *     create → ACTIVE median, to show how cost grows with the load balancers already in the NB.
 *     A run stops issuing creates after `--time-limit` seconds and reports what it did. Then the
 *     reconciliation of those load balancers (bench/support/ovn-reconcile.ts), `--reconcile-reps`
 *     times, against `--baseline-ref`'s (the version before its reads were batched), interleaved:
 *     time, database queries and rows read.
 *
 * Nothing sends traffic; the sandboxes are dropped at the end (on SIGINT/SIGTERM too).
 */
import { readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { benchArgs, positiveInt, positiveInts } from './support/args.js';
import { runBench } from './support/lab.js';
import { upstreamStyleCreate, upstreamStyleDelete } from './support/ovn-nbctl.js';
import { BEFORE_BATCHED_RECONCILE, measureReconcile, type ReconcileFigures } from './support/ovn-reconcile.js';
import { SETTLE_POLL_MS, startOvnRig, type OvnRig } from './support/ovn-rig.js';
import { cpuSeconds, procInfo } from './support/processes.js';
import { progress } from './support/progress.js';
import { median, percentile } from './support/stats.js';
import { line, num } from './support/table.js';

const HELP = `Usage: node dist/bench/ovn.js [options]

The ovn provider against a real sandbox OVN, with an in-process Ostia (API + worker, SQLite).
  --reps N            create → ACTIVE repetitions of one LB (TCP listener, SOURCE_IP_PORT pool,
                      2 members), interleaved with the upstream-style ovn-nbctl sequence and the
                      noop provider (default 30)
  --scale A,B         load balancers per scale run, each on a fresh sandbox (default 1000,10000)
  --concurrency C     creates in flight during the scale runs (default 16)
  --time-limit S      a scale run stops issuing creates after S seconds and reports what it did
                      (default 600)
  --reconcile-reps N  reconciliations of each scale run's load balancers, interleaved with those of
                      --baseline-ref's code (default 3)
  --baseline-ref REF  the version reconciliation is compared with (default ${BEFORE_BATCHED_RECONCILE},
                      before its reads were batched; built once from git)
  --json              print one JSON document instead of tables
  --help              this text
Progress goes to stderr. Needs root and the OVN packages (as the OVN tests do).
`;

interface Params {
  reps: number;
  scale: number[];
  concurrency: number;
  timeLimitS: number;
  reconcileReps: number;
  baselineRef: string;
}

const CREATE_TIMEOUT_MS = 120_000;
const DELETE_TIMEOUT_MS = 60_000;
/** A scale run gives up after this many failed creates: the figures would not mean much. */
const MAX_FAILURES = 5;
const BANDS = 10;
/** Creates of (1) repeated after each scale run, alone, with its load balancers in the NB. */
const QUIET_REPS = 5;

interface Summary {
  n: number;
  median: number;
  p90: number;
  max: number;
}

const summarize = (v: readonly number[]): Summary => ({ n: v.length, median: median(v), p90: percentile(v, 90), max: v.length ? Math.max(...v) : NaN });

// --- teardown on a signal ------------------------------------------------------------------

let live: OvnRig | undefined;
const onSignal = (signal: NodeJS.Signals) => {
  progress(`${signal}: dropping the sandbox`);
  void (live?.close() ?? Promise.resolve()).finally(() => process.exit(130));
};

async function withRig<T>(body: (rig: OvnRig) => Promise<T>): Promise<T> {
  const rig = await startOvnRig();
  live = rig;
  try {
    return await body(rig);
  } finally {
    live = undefined;
    await rig.close();
  }
}

// --- processes of the sandbox --------------------------------------------------------------

/** The NB ovsdb-server and ovn-northd among the sandbox's processes (by command line). */
function ovnDaemons(rig: OvnRig): { nbServer: number[]; northd: number[] } {
  const cmdline = (pid: number) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      return '';
    }
  };
  const pids = rig.sb.pids().filter((pid) => procInfo(pid) !== null);
  return {
    nbServer: pids.filter((pid) => procInfo(pid)?.comm === 'ovsdb-server' && cmdline(pid).includes('nb.db')),
    northd: pids.filter((pid) => procInfo(pid)?.comm === 'ovn-northd'),
  };
}

// --- (1) create → ACTIVE ------------------------------------------------------------------

interface SingleFigures {
  ovn: Summary;
  /** POST answered (inject), ovn provider. */
  ovn_post: Summary;
  /** NB transaction of each ovn create (Northbound.stats delta). */
  ovn_nb_transact: Summary;
  ovn_transactions_per_create: number;
  nbctl: Summary;
  nbctl_calls: number;
  noop: Summary;
  ovn_over_nbctl_median: number;
  ovn_minus_noop_median_ms: number;
}

async function single(rig: OvnRig, reps: number): Promise<SingleFigures> {
  const ovn: number[] = [];
  const post: number[] = [];
  const transact: number[] = [];
  let transactions = 0;
  const nbctl: number[] = [];
  let calls = 0;
  const noop: number[] = [];
  // Each timed create starts with northd caught up, so that it does not compete for the CPU with the previous one's recompute.
  const northdIdle = () => rig.sb.nbctl('--wait=sb', 'sync');
  // One of each first, unrecorded: module loading and first-query costs.
  for (let i = -1; i < reps; i++) {
    await northdIdle();
    const before = { ...rig.nb.stats };
    const o = await rig.create(`single-ovn-${i}`, 'ovn', CREATE_TIMEOUT_MS);
    const txns = rig.nb.stats.transactions - before.transactions;
    const txnMs = rig.nb.stats.transactMs - before.transactMs;
    await rig.remove(o.id, DELETE_TIMEOUT_MS);
    await northdIdle();
    const b = await upstreamStyleCreate(rig.sb, `172.24.4.${10 + (i + 1) % 200}`);
    await upstreamStyleDelete(rig.sb, b);
    await northdIdle();
    const n = await rig.create(`single-noop-${i}`, 'noop', CREATE_TIMEOUT_MS);
    await rig.remove(n.id, DELETE_TIMEOUT_MS);
    if (i < 0) continue;
    ovn.push(o.activeMs);
    post.push(o.postMs);
    transact.push(txnMs);
    transactions += txns;
    nbctl.push(b.ms);
    calls = b.calls;
    noop.push(n.activeMs);
    progress(`  rep ${i + 1}/${reps}: ovn ${o.activeMs.toFixed(1)} ms (NB ${txnMs.toFixed(1)} ms in ${txns} txn), ovn-nbctl ${b.ms.toFixed(1)} ms, noop ${n.activeMs.toFixed(1)} ms`);
  }
  const s = { ovn: summarize(ovn), nbctl: summarize(nbctl), noop: summarize(noop) };
  return {
    ...s,
    ovn_post: summarize(post),
    ovn_nb_transact: summarize(transact),
    ovn_transactions_per_create: transactions / reps,
    nbctl_calls: calls,
    ovn_over_nbctl_median: s.ovn.median / s.nbctl.median,
    ovn_minus_noop_median_ms: s.ovn.median - s.noop.median,
  };
}

// --- (2) scale ----------------------------------------------------------------------------

interface Band {
  /** Load balancers completed before / by the end of this band. */
  from: number;
  to: number;
  seconds: number;
  lbs_per_second: number;
  nb_transactions: number;
  /** Mean time of one NB transaction in the band. */
  nb_ms_per_transaction: number;
  retries: number;
  create_to_active: Summary;
}

interface ScaleRun {
  requested: number;
  done: number;
  failed: number;
  failures: string[];
  stopped_by_time_limit: boolean;
  seconds: number;
  lbs_per_second: number;
  nb: { transactions: number; transact_ms: number; retries: number; ms_per_transaction: number };
  bands: Band[];
  /** Last full band's NB time per transaction over the first's. */
  nb_growth: number;
  /** Last full band's create → ACTIVE median over the first's. */
  active_growth: number;
  nb_file_mib: number;
  cpu_seconds: { ostia: number; nb_ovsdb_server: number | null; northd: number | null };
  ostia_heap_mib: { before: number; after: number };
  /** (1) again, a few reps, with the run's load balancers in the NB and nothing else in flight; null if that failed. */
  quiet: SingleFigures | null;
  quiet_error: string | null;
  /** Reconciliation of the run's load balancers, against the baseline version's; null if that failed. */
  reconcile: ReconcileFigures | null;
  reconcile_error: string | null;
}

async function scale(rig: OvnRig, n: number, p: Params): Promise<ScaleRun> {
  const daemons = ovnDaemons(rig);
  const cpu0 = { ostia: process.cpuUsage(), nb: cpuSeconds(daemons.nbServer), northd: cpuSeconds(daemons.northd) };
  const heapBefore = process.memoryUsage().heapUsed;
  const boundaries = [...new Set(Array.from({ length: BANDS }, (_, k) => Math.ceil(((k + 1) * n) / BANDS)))];
  const t0 = performance.now();
  const stopAt = t0 + p.timeLimitS * 1000;
  const snapshots = [{ done: 0, at: t0, stats: { ...rig.nb.stats } }];
  const activeInOrder: number[] = [];
  const failures: string[] = [];
  let issued = 0;
  let stoppedByTime = false;
  const snapshot = () => snapshots.push({ done: activeInOrder.length, at: performance.now(), stats: { ...rig.nb.stats } });

  const client = async () => {
    while (issued < n && failures.length < MAX_FAILURES) {
      if (performance.now() > stopAt) {
        stoppedByTime = true;
        return;
      }
      const i = issued++;
      try {
        activeInOrder.push((await rig.create(`scale-${i}`, 'ovn', CREATE_TIMEOUT_MS)).activeMs);
      } catch (e) {
        failures.push((e as Error).message);
        continue;
      }
      if (activeInOrder.length === boundaries[snapshots.length - 1]) {
        snapshot();
        const secs = (performance.now() - t0) / 1000;
        progress(`  ${activeInOrder.length}/${n} ACTIVE after ${secs.toFixed(1)} s (${(activeInOrder.length / secs).toFixed(1)} LBs/s)`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(p.concurrency, n) }, client));
  if (snapshots[snapshots.length - 1]!.done < activeInOrder.length) snapshot();
  const seconds = (performance.now() - t0) / 1000;

  const bands: Band[] = snapshots.slice(1).map((s, k) => {
    const prev = snapshots[k]!;
    const count = s.done - prev.done;
    const txns = s.stats.transactions - prev.stats.transactions;
    const txnMs = s.stats.transactMs - prev.stats.transactMs;
    const secs = (s.at - prev.at) / 1000;
    return {
      from: prev.done,
      to: s.done,
      seconds: secs,
      lbs_per_second: count / secs,
      nb_transactions: txns,
      nb_ms_per_transaction: txnMs / txns,
      retries: s.stats.retries - prev.stats.retries,
      create_to_active: summarize(activeInOrder.slice(prev.done, s.done)),
    };
  });
  const cpuOstia = process.cpuUsage(cpu0.ostia);
  const cpuNb = cpuSeconds(daemons.nbServer);
  const cpuNorthd = cpuSeconds(daemons.northd);
  const { stats } = rig.nb;
  const first = bands[0];
  // A run cut short ends with a small band, drained with fewer creates in flight: growth is read from the last full one.
  const last = bands.filter((b) => first && b.to - b.from >= first.to - first.from).pop();
  return {
    requested: n,
    done: activeInOrder.length,
    failed: failures.length,
    failures: failures.slice(0, 3),
    stopped_by_time_limit: stoppedByTime,
    seconds,
    lbs_per_second: activeInOrder.length / seconds,
    nb: { transactions: stats.transactions, transact_ms: stats.transactMs, retries: stats.retries, ms_per_transaction: stats.transactMs / stats.transactions },
    bands,
    nb_growth: first && last ? last.nb_ms_per_transaction / first.nb_ms_per_transaction : NaN,
    active_growth: first && last ? last.create_to_active.median / first.create_to_active.median : NaN,
    nb_file_mib: rig.nbFileBytes() / 2 ** 20,
    cpu_seconds: {
      ostia: (cpuOstia.user + cpuOstia.system) / 1e6,
      nb_ovsdb_server: cpuNb !== null && cpu0.nb !== null ? cpuNb - cpu0.nb : null,
      northd: cpuNorthd !== null && cpu0.northd !== null ? cpuNorthd - cpu0.northd : null,
    },
    ostia_heap_mib: { before: heapBefore / 2 ** 20, after: process.memoryUsage().heapUsed / 2 ** 20 },
    ...(await single(rig, QUIET_REPS).then(
      (quiet) => ({ quiet, quiet_error: null }),
      (e: Error) => ({ quiet: null, quiet_error: e.message }),
    )),
    ...(await measureReconcile(rig.h.runtime.db, await rig.h.runtime.ovn(), p.reconcileReps, p.baselineRef).then(
      (reconcile) => ({ reconcile, reconcile_error: null }),
      (e: Error) => ({ reconcile: null, reconcile_error: e.message }),
    )),
  };
}

// --- report -------------------------------------------------------------------------------

interface Report {
  params: Params;
  machine: { cores: number; load_average_1m: { before: number; after: number } };
  single: SingleFigures;
  scale: ScaleRun[];
}

function renderSingle(s: SingleFigures, reps: number): string[] {
  const w = [52, 12, 12, 12];
  const row = (label: string, f: (x: Summary) => string) => line([label, f(s.ovn), f(s.nbctl), f(s.noop)], w);
  return [
    `(1) create → ACTIVE: LB + TCP listener + SOURCE_IP_PORT pool + 2 members, ${reps} reps, interleaved (target: ovn median under 200 ms)`,
    line(['', 'ovn', 'ovn-nbctl', 'noop'], w),
    row('median (ms)', (x) => num(x.median)),
    row('p90 (ms)', (x) => num(x.p90)),
    row('max (ms)', (x) => num(x.max)),
    line(['  POST answered, median (ms)', num(s.ovn_post.median), '', ''], w),
    line([`  NB transaction, median (ms; ${num(s.ovn_transactions_per_create, 2)} per create)`, num(s.ovn_nb_transact.median), '', ''], w),
    `ovn ÷ upstream-style ovn-nbctl sequence (${s.nbctl_calls} calls, one per Octavia step), medians: ${num(s.ovn_over_nbctl_median, 2)}x`,
    `ovn − noop (what the OVN write adds to the API + worker floor), medians: ${num(s.ovn_minus_noop_median_ms)} ms`,
    'Each timed create starts with ovn-northd caught up (ovn-nbctl --wait=sb sync).',
    `ovn and noop: POST → provisioning_status ACTIVE seen (DB polled every ${SETTLE_POLL_MS} ms). ovn-nbctl: first call → last call returned, no --wait,`,
    'each call a new process that reads the tables it needs; upstream keeps one ovsdbapp connection instead.',
  ];
}

function renderScale(r: ScaleRun, p: Params, empty: SingleFigures): string[] {
  const w = [16, 9, 9, 12, 11, 9, 11, 11];
  const head = r.done < r.requested
    ? `PARTIAL: ${r.done} of ${r.requested} ACTIVE${r.stopped_by_time_limit ? ` (time limit ${p.timeLimitS} s)` : ''}${r.failed ? `, ${r.failed} failed` : ''}`
    : `${r.done} ACTIVE`;
  return [
    `(2) ${r.requested} load balancers, ${p.concurrency} in flight: ${head} in ${num(r.seconds)} s, ${num(r.lbs_per_second)} LBs/s`,
    line(['LBs (by done)', 'secs', 'LBs/s', 'NB txns', 'NB ms/txn', 'retries', 'ACTIVE p50', 'ACTIVE p90'], w),
    ...r.bands.map((b) => line([`${b.from}–${b.to}`, num(b.seconds), num(b.lbs_per_second), b.nb_transactions, num(b.nb_ms_per_transaction, 2), b.retries, num(b.create_to_active.median), num(b.create_to_active.p90)], w)),
    `NB: ${r.nb.transactions} transactions, ${num(r.nb.ms_per_transaction, 2)} ms each on average, ${r.nb.retries} retries; last full band ÷ first: NB ms/txn ${num(r.nb_growth, 2)}x, create → ACTIVE median ${num(r.active_growth, 2)}x`,
    `CPU during the run: Ostia (this process, client included) ${num(r.cpu_seconds.ostia)} s, NB ovsdb-server ${num(r.cpu_seconds.nb_ovsdb_server)} s, ovn-northd ${num(r.cpu_seconds.northd)} s; NB file ${num(r.nb_file_mib)} MiB; Ostia heap ${num(r.ostia_heap_mib.before)} → ${num(r.ostia_heap_mib.after)} MiB`,
    r.quiet
      ? `Alone afterwards, ${r.done} LBs in the NB (${r.quiet.ovn.n} reps, medians, ms; at an empty NB in (1)): ovn create → ACTIVE ${num(r.quiet.ovn.median)} (${num(empty.ovn.median)}), ` +
        `its NB transaction ${num(r.quiet.ovn_nb_transact.median, 2)} (${num(empty.ovn_nb_transact.median, 2)}); upstream-style ovn-nbctl ${num(r.quiet.nbctl.median)} (${num(empty.nbctl.median)}); noop ${num(r.quiet.noop.median)} (${num(empty.noop.median)})`
      : `Alone afterwards: not measured (${r.quiet_error})`,
    r.reconcile
      ? `Reconciling the ${r.reconcile.load_balancers} in sync (${r.reconcile.this_version.runs.length} runs each, interleaved; medians): this version ${num(r.reconcile.this_version.median_ms)} ms, ` +
        `${r.reconcile.this_version.queries} queries, ${r.reconcile.this_version.rows} rows read; ${r.reconcile.before.version} ${num(r.reconcile.before.median_ms)} ms, ${r.reconcile.before.queries} queries, ` +
        `${r.reconcile.before.rows} rows read; ${r.reconcile.before.version} ÷ this version: ${num(r.reconcile.ratios.ms, 2)}x the time, ${num(r.reconcile.ratios.queries, 1)}x the queries`
      : `Reconciliation: not measured (${r.reconcile_error})`,
    ...r.failures.map((f) => `  failure: ${f.slice(0, 200)}`),
  ];
}

function render(r: Report): string {
  return [
    renderSingle(r.single, r.params.reps),
    ...r.scale.map((s) => renderScale(s, r.params, r.single)),
    [
      'NB ms/txn: Northbound.stats (transact round trip as the provider sees it, including waiting behind other in-flight transactions on the one connection). ACTIVE p50/p90: POST → ACTIVE of the LBs that completed in that band (ms), queueing in the worker included.',
      `Load average (1 min): ${num(r.machine.load_average_1m.before, 2)} before, ${num(r.machine.load_average_1m.after, 2)} after, on ${r.machine.cores} cores; the machine is shared, compare within one run.`,
      `Command: node dist/bench/ovn.js ${process.argv.slice(2).join(' ')}`,
    ],
  ].map((lines) => lines.join('\n')).join('\n\n') + '\n';
}

// --- main ---------------------------------------------------------------------------------

function parseParams(): { p: Params; json: boolean } | null {
  const values = benchArgs({
    reps: { type: 'string', default: '30' },
    scale: { type: 'string', default: '1000,10000' },
    concurrency: { type: 'string', default: '16' },
    'time-limit': { type: 'string', default: '600' },
    'reconcile-reps': { type: 'string', default: '3' },
    'baseline-ref': { type: 'string', default: BEFORE_BATCHED_RECONCILE },
  });
  if (!values) return null;
  return {
    p: { reps: positiveInt('reps', values.reps), scale: positiveInts('scale', values.scale), concurrency: positiveInt('concurrency', values.concurrency), timeLimitS: positiveInt('time-limit', values['time-limit']), reconcileReps: positiveInt('reconcile-reps', values['reconcile-reps']), baselineRef: values['baseline-ref'] },
    json: values.json,
  };
}

runBench(HELP, parseParams, async ({ p, json }) => {
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const loadBefore = loadavg()[0]!;
  progress(`(1) ${p.reps} creates each: ovn, upstream-style ovn-nbctl, noop`);
  const singleFigures = await withRig((rig) => single(rig, p.reps));
  const runs: ScaleRun[] = [];
  for (const n of p.scale) {
    progress(`(2) ${n} load balancers, ${p.concurrency} in flight, on a fresh sandbox`);
    runs.push(await withRig((rig) => scale(rig, n, p)));
  }
  const report: Report = { params: p, machine: { cores: availableParallelism(), load_average_1m: { before: loadBefore, after: loadavg()[0]! } }, single: singleFigures, scale: runs };
  process.stdout.write(json ? JSON.stringify(report) + '\n' : render(report));
});

/**
 * Soak: a bounded run of mixed reads and writes over `--lbs` load balancers (noop provider) at
 * `--rate` requests a second, open-loop, against `ostia up` and against the production shape (two
 * `ostia api` + two `ostia worker` on PostgreSQL), one after the other. Per reporting window:
 * requests, errors by kind, p50/p99 latency (from when each request was due), the rate achieved,
 * the server processes' RSS and CPU, PostgreSQL's PSS and CPU apart, the bench's own CPU, the load
 * average. At the end: the servers' memory in the last window against the first (flat: within
 * 10 %), the errors, and the API's whole list checked against the load balancers the soak made.
 * Traffic stays on 127.0.0.1.
 *
 *   npm run bench:soak [-- --minutes 60 --window-minutes 10 --rate 200 --lbs 1000 --target both --json]
 */
import { loadavg } from 'node:os';
import { benchArgs, oneOf, positiveInt } from './support/args.js';
import { runBench } from './support/lab.js';
import { postgresServer } from './support/private-postgres.js';
import { progress } from './support/progress.js';
import { startSplit, startUp, stopAll } from './support/soak-deployments.js';
import { POOLED_EVERY, seedFleet } from './support/soak-fleet.js';
import { WRITE_PERCENT } from './support/soak-mix.js';
import { FLAT_WITHIN, LATE_MS, runSoak, type SoakPlan, type SoakRun } from './support/soak-run.js';
import { grid, num } from './support/table.js';

const TARGETS = ['up', 'split', 'both'] as const;
type Target = (typeof TARGETS)[number];

const HELP = `usage: npm run bench:soak -- [options]
  --minutes N          length of the soak on each target (default 60)
  --window-minutes N   reporting window (default 10); memory is judged on the first and the last
  --rate N             requests a second, issued on a schedule whatever the answers (default 200)
  --lbs N              load balancers seeded, and kept near by the creates and deletes (default 1000)
  --target T           up (ostia up), split (2 ostia api + 2 ostia worker on PostgreSQL) or both,
                       one after the other (default both)
  --database-url URL   for split: a PostgreSQL server whose user may CREATE DATABASE (default:
                       OSTIA_TEST_PG_URL, else a private server started and stopped by the bench)
  --json               print one JSON document instead of text
  --help               this text
`;

interface Params extends SoakPlan {
  target: Target;
  databaseUrl: string | undefined;
  json: boolean;
}

function parse(): Params | null {
  const v = benchArgs({
    minutes: { type: 'string', default: '60' },
    'window-minutes': { type: 'string', default: '10' },
    rate: { type: 'string', default: '200' },
    lbs: { type: 'string', default: '1000' },
    target: { type: 'string', default: 'both' },
    'database-url': { type: 'string' },
  });
  if (!v) return null;
  const p: Params = {
    minutes: positiveInt('minutes', v.minutes),
    windowMinutes: positiveInt('window-minutes', v['window-minutes']),
    rate: positiveInt('rate', v.rate),
    lbs: positiveInt('lbs', v.lbs),
    target: oneOf('target', v.target, TARGETS),
    databaseUrl: v['database-url'] ?? process.env.OSTIA_TEST_PG_URL,
    json: v.json,
  };
  if (p.windowMinutes > p.minutes) throw new Error(`--window-minutes (${p.windowMinutes}) must not exceed --minutes (${p.minutes})`);
  return p;
}

interface TargetReport extends SoakRun {
  target: Exclude<Target, 'both'>;
  deployment: string;
  seed_seconds: number;
  load_average_1m: { before: number; after: number };
}

/** The PostgreSQL server of the split target, once started: a signal must stop it too. */
let postgres: ReturnType<typeof postgresServer> | undefined;

async function soakOn(target: Exclude<Target, 'both'>, p: Params): Promise<TargetReport> {
  const loadBefore = loadavg()[0]!;
  progress(`${target}: starting`);
  const deployment = target === 'up' ? await startUp() : await startSplit((postgres ??= postgresServer(p.databaseUrl)).url);
  try {
    progress(`${target}: seeding ${p.lbs} load balancers`);
    const t0 = performance.now();
    const fleet = await seedFleet(deployment.apis, p.lbs);
    const seedSeconds = (performance.now() - t0) / 1000;
    progress(`${target}: ${p.minutes} min at ${p.rate} requests/s`);
    const run = await runSoak(deployment, fleet, p);
    return { target, deployment: deployment.description, seed_seconds: seedSeconds, ...run, load_average_1m: { before: loadBefore, after: loadavg()[0]! } };
  } finally {
    await deployment.stop();
  }
}

const mibs = (v: number | null) => num(v, 1);

function report(r: TargetReport, p: Params, command: string): string {
  const first = r.windows[0]!;
  const windows = grid([
    ['window', 'minutes', 'answered', 'req/s', 'late', 'errors', 'p50 (ms)', 'p99 (ms)', 'p99 ÷ first', 'server RSS (MiB)', 'max', 'server CPU %', 'ms/request', 'PostgreSQL PSS (MiB)', 'PostgreSQL CPU %', 'bench CPU %', 'LBs', 'load 1m'],
    ...r.windows.map((w) => [
      String(w.window),
      `${num(w.from_minute, 0)}–${num(w.to_minute, 0)}`,
      String(w.requests),
      num(w.achieved_rps),
      String(w.late),
      String(w.errors),
      num(w.p50_ms),
      num(w.p99_ms),
      `${num(w.p99_ms / first.p99_ms, 2)}×`,
      mibs(w.server_rss_mib.mean),
      mibs(w.server_rss_mib.max),
      num(w.server_cpu_percent),
      num(w.server_cpu_ms_per_request, 2),
      mibs(w.database_pss_mib),
      num(w.database_cpu_percent),
      num(w.client_cpu_percent),
      String(w.load_balancers),
      num(w.load_1m, 2),
    ]),
  ]);
  const ops = grid([['request', 'answered', 'errors', 'p50 (ms)', 'p99 (ms)'], ...r.ops.map((o) => [o.op, String(o.requests), String(o.errors), num(o.p50_ms), num(o.p99_ms)])]);
  const m = r.memory;
  const memory = m.flat ? 'flat' : `NOT flat: ${m.ratio > 1 ? 'grew' : 'fell'} ${num(Math.abs(m.ratio - 1) * 100)} %`;
  const c = r.final_check;
  return [
    `Soak of ${r.deployment}, noop provider: ${p.minutes} min at ${p.rate} requests/s (open loop, latency from when each request was due), ${p.lbs} load balancers (every ${POOLED_EVERY}th with listener, pool, monitor and member; seeded in ${num(r.seed_seconds)} s), ${100 - WRITE_PERCENT} % reads, ${WRITE_PERCENT} % writes`,
    '',
    windows,
    '',
    ops,
    '',
    `Errors: ${r.errors}${r.error_kinds.length ? '' : ' (none)'}`,
    ...r.error_kinds.map((e) => `  ${e.count} × ${e.kind} — first: ${e.example}`),
    `Late requests (sent > ${LATE_MS} ms after due): ${r.late}; writes sent as reads because no load balancer could take one: ${r.writes_deferred}`,
    `Memory of the server processes, last window ÷ first: ${num(m.last_window_mib)} ÷ ${num(m.first_window_mib)} MiB = ${num(m.ratio, 3)}× — ${memory} (flat: within ${FLAT_WITHIN * 100} %)`,
    `Final check: ${c.listed} listed, ${c.expected} expected, by status ${JSON.stringify(c.by_status)}, settled in ${num(c.settle_seconds)} s${c.problems.length ? `; PROBLEMS: ${c.problems.join('; ')}` : ''}`,
    `Verdict: ${r.errors} errors, memory ${memory} (${num(m.ratio, 3)}×), final check ${c.problems.length ? 'found problems' : 'clean'}`,
    `Load average (1 min): ${r.load_average_1m.before.toFixed(2)} before, ${r.load_average_1m.after.toFixed(2)} after; the machine is shared, compare within one run.`,
    `Command: ${command}`,
  ].join('\n');
}

runBench(HELP, parse, async (p) => {
  const command = `npm run bench:soak -- --minutes ${p.minutes} --window-minutes ${p.windowMinutes} --rate ${p.rate} --lbs ${p.lbs} --target ${p.target}`;
  const stop = (signal: NodeJS.Signals) => {
    progress(`${signal}: stopping`);
    void stopAll().finally(() => {
      postgres?.stop();
      process.exit(signal === 'SIGINT' ? 130 : 143);
    });
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const reports: TargetReport[] = [];
  try {
    for (const target of p.target === 'both' ? (['up', 'split'] as const) : [p.target]) reports.push(await soakOn(target, p));
  } finally {
    postgres?.stop();
  }
  if (p.json) process.stdout.write(`${JSON.stringify({ plan: { minutes: p.minutes, window_minutes: p.windowMinutes, rate: p.rate, lbs: p.lbs }, targets: reports, command }, null, 2)}\n`);
  else process.stdout.write(`${reports.map((r) => report(r, p, command)).join('\n\n')}\n`);
});

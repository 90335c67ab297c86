/**
 * Throughput of two load balancers compared the way the amphora benches compare them on a shared, noisy
 * machine: a warm-up of each, then repetitions interleaved (repetition → case → target) with the target order
 * alternating from one repetition to the next, and per case the medians of each target's runs and the medians
 * of the per-repetition ratios of the first target to the second — a ratio taken inside one repetition sees
 * the same load on the machine on both sides.
 */
import { progress } from './progress.js';
import { median, medianOrNull } from './stats.js';
import type { WrkResult } from '../../src/cli/baseline/wrk.js';

/** Each warm-up run, on each target. */
const WARMUP_S = 2;

/** One timed run of a load against one target. */
export interface LoadRun extends WrkResult {
  /** HAProxy (master + workers) CPU time per request, µs; null if a process went away. */
  cpu_us_per_request: number | null;
}

/** What a case is run with; a bench adds what else distinguishes its cases (a mode), which its rows then carry. */
export interface LoadCase {
  connections: number;
}

/** One target's runs of one case and their medians; `E` is what a bench adds, medians of its own figures. */
export type ThroughputRow<C extends LoadCase, R extends LoadRun, E = unknown> = C & {
  target: string;
  runs: R[];
  rps: number;
  p50_ms: number;
  p99_ms: number;
  cpu_us_per_request: number | null;
} & E & {
    /** Failed requests of all the runs together. */
    failed: number;
  };

export type ThroughputRatio<C extends LoadCase> = C & {
  /** Median over repetitions of amphora req/s ÷ hand-written req/s in the same repetition. */
  rps: number;
  p99: number;
  /** null when HAProxy's CPU time could not be read in one of the runs. */
  cpu_per_request: number | null;
};

export interface Interleaved<T extends { label: string }, C extends LoadCase, R extends LoadRun, E> {
  /** The amphora first, the hand-written baseline second: ratios are first ÷ second. */
  targets: readonly [T, T];
  /** What every repetition runs, in this order, each case on both targets. */
  cases: readonly C[];
  /** Run on each target, in this order, for WARMUP_S before the repetitions; not reported. */
  warmups: readonly C[];
  reps: number;
  seconds: number;
  /** What the progress lines say of a case besides its connections (a mode); nothing when absent. */
  describe?(c: C): string;
  run(t: T, c: C, seconds: number): Promise<R>;
  /** The medians of a bench's own figures, placed before `failed` in a row. */
  extra?(runs: readonly R[]): E;
}

export async function interleavedThroughput<T extends { label: string }, C extends LoadCase, R extends LoadRun, E = unknown>(
  spec: Interleaved<T, C, R, E>,
): Promise<{ rows: Array<ThroughputRow<C, R, E>>; ratios: Array<ThroughputRatio<C>> }> {
  const { targets, reps, seconds } = spec;
  const what = (c: C) => (spec.describe ? `${spec.describe(c)}, ` : '');
  for (const c of spec.warmups)
    for (const t of targets) {
      progress(`warm-up: ${t.label}, ${what(c)}${WARMUP_S} s`);
      await spec.run(t, c, WARMUP_S);
    }
  // runs[case][target], in repetition order whatever the order the targets ran in.
  const runs = spec.cases.map(() => targets.map((): R[] => []));
  for (let rep = 0; rep < reps; rep++) {
    for (const [i, c] of spec.cases.entries()) {
      // Alternating the order cancels a drift of the machine's load within a repetition.
      const order = rep % 2 === 0 ? [0, 1] : [1, 0];
      for (const j of order) {
        const t = targets[j]!;
        progress(`repetition ${rep + 1}/${reps}: ${t.label}, ${what(c)}c=${c.connections}, ${seconds} s`);
        const run = await spec.run(t, c, seconds);
        progress(`  ${run.rps.toFixed(0)} req/s, ${run.failed} failed`);
        runs[i]![j]!.push(run);
      }
    }
  }
  const rows: Array<ThroughputRow<C, R, E>> = [];
  const ratios: Array<ThroughputRatio<C>> = [];
  for (const [i, c] of spec.cases.entries()) {
    for (const [j, t] of targets.entries()) {
      const rs = runs[i]![j]!;
      rows.push({
        ...c,
        target: t.label,
        runs: rs,
        rps: median(rs.map((r) => r.rps)),
        p50_ms: median(rs.map((r) => r.p50_ms)),
        p99_ms: median(rs.map((r) => r.p99_ms)),
        cpu_us_per_request: medianOrNull(rs.map((r) => r.cpu_us_per_request)),
        ...(spec.extra?.(rs) as E),
        failed: rs.reduce((s, r) => s + r.failed, 0),
      });
    }
    const [first, second] = runs[i]! as [R[], R[]];
    const perRep = (f: (a: R, b: R) => number | null) => medianOrNull(first.map((a, k) => f(a, second[k]!)));
    ratios.push({
      ...c,
      rps: perRep((a, b) => a.rps / b.rps)!,
      p99: perRep((a, b) => a.p99_ms / b.p99_ms)!,
      cpu_per_request: perRep((a, b) => (a.cpu_us_per_request === null || b.cpu_us_per_request === null ? null : a.cpu_us_per_request / b.cpu_us_per_request)),
    });
  }
  return { rows, ratios };
}

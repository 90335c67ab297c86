/**
 * Reconciliation of the load balancers a scale run of bench/ovn.ts left in the Northbound database:
 * this version's `reconcileNorthbound` against a baseline version's (the one before its reads were
 * batched, built once from git and imported into this process), both on the run's database and
 * Northbound connection, interleaved with the order alternating. Both find the rows in sync, so the
 * figures are what reading and comparing cost: wall time, and the database queries and rows read
 * (counted by a Kysely plugin on the same connections).
 */
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pino from 'pino';
import type { Db } from '../../src/db/database.js';
import type { OvnDeps } from '../../src/providers/ovn/deps.js';
import { reconcileNorthbound, type ReconcileReport } from '../../src/providers/ovn/reconcile.js';
import { counted } from '../../test/support/query-counter.js';
import { builtVersion } from './baseline-build.js';
import { progress } from './progress.js';
import { median } from './stats.js';

/** The last version that read each load balancer's tree on its own when reconciling. */
export const BEFORE_BATCHED_RECONCILE = 'f85cc06';

type Reconcile = (db: Db, deps: OvnDeps, log: pino.Logger) => Promise<ReconcileReport>;

export interface ReconcileRuns {
  version: string;
  runs: Array<{ ms: number; queries: number; rows: number; report: ReconcileReport }>;
  median_ms: number;
  /** The same in every run: the database is not changing. */
  queries: number;
  rows: number;
}

export interface ReconcileFigures {
  load_balancers: number;
  baseline: { ref: string; commit: string };
  this_version: ReconcileRuns;
  before: ReconcileRuns;
  /** Baseline ÷ this version. */
  ratios: { ms: number; queries: number };
}

async function baselineReconcile(ref: string): Promise<{ commit: string; reconcile: Reconcile }> {
  const { commit, bin } = builtVersion(ref);
  const module = (await import(pathToFileURL(join(dirname(bin), '..', 'dist', 'src', 'providers', 'ovn', 'reconcile.js')).href)) as { reconcileNorthbound: Reconcile };
  return { commit, reconcile: module.reconcileNorthbound };
}

export async function measureReconcile(db: Db, deps: OvnDeps, reps: number, baselineRef: string): Promise<ReconcileFigures> {
  const before = await baselineReconcile(baselineRef);
  const { db: kysely, counter } = counted(db.kysely);
  const countedDb: Db = { ...db, kysely };
  const log = pino({ level: 'silent' });
  const versions: Array<{ version: string; reconcile: Reconcile; runs: ReconcileRuns['runs'] }> = [
    { version: 'this version', reconcile: (d, n, l) => reconcileNorthbound(d, n, l), runs: [] },
    { version: `${baselineRef} (${before.commit.slice(0, 9)})`, reconcile: before.reconcile, runs: [] },
  ];
  for (let rep = 0; rep < reps; rep++) {
    for (const v of rep % 2 === 0 ? versions : [...versions].reverse()) {
      const t0 = performance.now();
      const { result, queries, rows } = await counter.during(() => v.reconcile(countedDb, deps, log));
      const ms = performance.now() - t0;
      v.runs.push({ ms, queries, rows, report: result });
      progress(`  reconcile ${rep + 1}/${reps}, ${v.version}: ${ms.toFixed(0)} ms, ${queries} queries, ${result.checked} checked, ${result.rewritten} rewritten`);
    }
  }
  const summary = (v: (typeof versions)[number]): ReconcileRuns => ({
    version: v.version,
    runs: v.runs,
    median_ms: median(v.runs.map((r) => r.ms)),
    queries: median(v.runs.map((r) => r.queries)),
    rows: median(v.runs.map((r) => r.rows)),
  });
  const [now, then] = versions.map(summary) as [ReconcileRuns, ReconcileRuns];
  return {
    load_balancers: now.runs[0]?.report.checked ?? 0,
    baseline: { ref: baselineRef, commit: before.commit },
    this_version: now,
    before: then,
    ratios: { ms: then.median_ms / now.median_ms, queries: then.queries / now.queries },
  };
}

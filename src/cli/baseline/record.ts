/**
 * A baseline as stored: when it was taken, by which version of the service, on which configuration (nothing
 * secret), and its figures; and the comparison of one baseline with the one before it.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CliError } from '../command.js';
import type { Measurements } from './mix.js';

/** Which way is good: more requests per second, fewer milliseconds. */
export type Direction = 'higher' | 'lower';

export interface Figure {
  /** Unique within a baseline; the comparison matches figures by it, e.g. "HTTP SINGLE requests/s". */
  name: string;
  unit: string;
  value: number;
  better: Direction;
}

export interface Baseline {
  format: 1;
  /** ISO 8601, UTC. */
  taken_at: string;
  service: { version: string; commit: string | null; url: string };
  configuration: Record<string, unknown>;
  figures: Figure[];
  /** The parts of the mix not run, each with why. */
  skipped: Array<{ part: string; reason: string }>;
  /** What the figures were taken from, per part and per failover. */
  measurements?: Measurements;
}

/** A change smaller than this (in %) is within what two runs on one machine differ by. */
export const NOISE_PERCENT = 10;

export type Change = 'better' | 'worse' | 'unchanged' | 'new' | 'gone';

export interface ComparedFigure {
  name: string;
  unit: string;
  before: number | null;
  now: number | null;
  /** now vs before in %, null when either is missing or before is 0. */
  change_percent: number | null;
  change: Change;
  sentence: string;
}

export interface Comparison {
  /** taken_at of the baseline compared against, null for the first one. */
  previous: string | null;
  figures: ComparedFigure[];
  worse: number;
  better: number;
  verdict: string;
}

const round = (v: number, digits = 1) => Math.round(v * 10 ** digits) / 10 ** digits;

function compareOne(name: string, before: Figure | undefined, now: Figure | undefined): ComparedFigure {
  const unit = (now ?? before)!.unit;
  const base = { name, unit, before: before?.value ?? null, now: now?.value ?? null };
  if (!before) return { ...base, change_percent: null, change: 'new', sentence: `${name} was not measured before: nothing to compare it with.` };
  if (!now) return { ...base, change_percent: null, change: 'gone', sentence: `${name} was measured before but not now: see the skipped parts of the mix.` };
  const delta = now.value - before.value;
  const percent = before.value === 0 ? null : round((delta / Math.abs(before.value)) * 100);
  // From zero, any rise is beyond noise (failed requests from none); staying at zero is no change.
  const beyond = percent === null ? delta !== 0 : Math.abs(percent) >= NOISE_PERCENT;
  const wentUp = delta > 0;
  const change: Change = !beyond ? 'unchanged' : wentUp === (now.better === 'higher') ? 'better' : 'worse';
  const moved = percent === null ? `from ${before.value} to ${now.value} ${unit}` : `${wentUp ? 'up' : 'down'} ${Math.abs(percent)}% (${before.value} → ${now.value} ${unit})`;
  const sentence =
    change === 'unchanged'
      ? `${name} is unchanged: ${percent === null ? 'still 0' : `${percent >= 0 ? '+' : ''}${percent}%`}, within the ±${NOISE_PERCENT}% two runs differ by.`
      : `${name} is ${change}: ${moved}; ${now.better} is better.`;
  return { ...base, change_percent: percent, change, sentence };
}

/** Each figure of `now` against the same of `previous` (none: the first baseline). */
export function compare(previous: Baseline | null, now: Baseline): Comparison {
  if (!previous)
    return { previous: null, figures: now.figures.map((f) => compareOne(f.name, undefined, f)).map((f) => ({ ...f, sentence: `${f.name}: the first baseline, nothing to compare with.` })), worse: 0, better: 0, verdict: 'The first baseline stored here: the next run compares with it.' };
  const names = [...new Set([...now.figures, ...previous.figures].map((f) => f.name))];
  const figures = names.map((name) => compareOne(name, previous.figures.find((f) => f.name === name), now.figures.find((f) => f.name === name)));
  const count = (c: Change) => figures.filter((f) => f.change === c).length;
  const worse = count('worse');
  const better = count('better');
  const versions = previous.service.version === now.service.version && previous.service.commit === now.service.commit ? 'the same version' : `version ${versionText(previous)} then ${versionText(now)}`;
  const verdict =
    worse > 0
      ? `${worse} figure(s) worse than the baseline of ${previous.taken_at} (${versions}) by ${NOISE_PERCENT}% or more: see the rows marked worse; run again to tell a regression from a busy machine.`
      : `Nothing worse than the baseline of ${previous.taken_at} (${versions}) by ${NOISE_PERCENT}% or more${better ? `; ${better} figure(s) better` : ''}.`;
  return { previous: previous.taken_at, figures, worse, better, verdict };
}

export const versionText = (b: Pick<Baseline, 'service'>) => `${b.service.version}${b.service.commit ? ` (${b.service.commit.slice(0, 12)})` : ''}`;

/** The package version of this checkout, and its git commit when it is a git checkout. */
export function serviceVersion(): { version: string; commit: string | null } {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'ostia') {
        let commit: string | null = null;
        try {
          commit = execFileSync('git', ['-C', dir, 'rev-parse', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() || null;
        } catch {
          // an installed copy, not a checkout
        }
        return { version: pkg.version ?? 'unknown', commit };
      }
    } catch {
      // no package.json here: look further up
    }
    const up = dirname(dir);
    if (up === dir) return { version: 'unknown', commit: null };
    dir = up;
  }
}

/** A file name that sorts by time and holds no colon. */
const fileName = (takenAt: string) => `${takenAt.replace(/:/g, '-')}.json`;

/** The stored baselines' files, oldest first. */
function storedFiles(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((f) => /^\d{4}-\d\d-\d\dT[\d-]+(\.\d+)?Z\.json$/.test(f))
      .sort()
      .map((f) => join(dir, f));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new CliError(`cannot list the baselines in ${dir}: ${(e as Error).message}`, 'Give --store a directory you can read.');
  }
}

export function readBaseline(file: string): Baseline {
  try {
    const b = JSON.parse(readFileSync(file, 'utf8')) as Baseline;
    if (b.format !== 1 || !Array.isArray(b.figures)) throw new Error('not a baseline of format 1');
    return b;
  } catch (e) {
    throw new CliError(`cannot read the baseline ${file}: ${(e as Error).message}`, 'Move the file out of the store directory, or give --store another directory.');
  }
}

/** The last `count` stored baselines, oldest first, with their files. */
export function lastBaselines(dir: string, count: number): Array<{ file: string; baseline: Baseline }> {
  return storedFiles(dir)
    .slice(-count)
    .map((file) => ({ file, baseline: readBaseline(file) }));
}

/** Stores `b` in `dir` (made owner-only when new); returns its path. Written whole or not at all. */
export function storeBaseline(dir: string, b: Baseline): string {
  const file = join(dir, fileName(b.taken_at));
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(`${file}.partial`, JSON.stringify(b, null, 2) + '\n', { mode: 0o600 });
    renameSync(`${file}.partial`, file);
  } catch (e) {
    throw new CliError(`cannot store the baseline in ${dir}: ${(e as Error).message}`, 'Give --store a directory you can write to.');
  }
  return file;
}

/**
 * What every check of `ostia doctor` yields: one row, with a verdict and the sentence that explains it
 * and says what to do. The table and the JSON carry the same rows.
 */
import { formatTable } from '../command.js';

export type Result = 'ok' | 'WARN' | 'FAIL';

export interface CheckRow {
  /** What was checked: `agent port`, `heartbeat`, `address pool`, `boot: boot`, … */
  check: string;
  /** What it was checked on: an amphora (id and address), a subnet, a certificate file, the database. */
  target: string;
  result: Result;
  /** One sentence: what was found and, unless ok, what to do. */
  detail: string;
  /** How long it took, for the boot test's steps; null elsewhere. */
  ms: number | null;
}

/** Whole milliseconds: what the table, the JSON and the picture all show. */
export const row = (check: string, target: string, result: Result, detail: string, ms: number | null = null): CheckRow => ({ check, target, result, detail, ms: ms === null ? null : Math.round(ms) });

/** The worst of the results: FAIL over WARN over ok. */
export function worst(results: readonly Result[]): Result {
  return results.includes('FAIL') ? 'FAIL' : results.includes('WARN') ? 'WARN' : 'ok';
}

export function renderChecks(rows: readonly CheckRow[]): string {
  const MS = 3;
  return formatTable([['CHECK', 'TARGET', 'RESULT', 'MS', 'DETAIL'], ...rows.map((r) => [r.check, r.target, r.result, r.ms === null ? '' : String(r.ms), r.detail])], [MS]);
}

export function summary(rows: readonly CheckRow[]): { failed: number; warnings: number } {
  return { failed: rows.filter((r) => r.result === 'FAIL').length, warnings: rows.filter((r) => r.result === 'WARN').length };
}

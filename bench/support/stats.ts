/** The order statistics every bench reports, computed one way so that their figures compare. */

/** Nearest rank; NaN when there are no values. */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export const median = (values: readonly number[]) => percentile(values, 50);

/** The median when every value is known; null when any is not (a run that could not be measured spoils the set). */
export function medianOrNull(values: readonly (number | null)[]): number | null {
  return values.every((v) => v !== null) ? median(values as number[]) : null;
}

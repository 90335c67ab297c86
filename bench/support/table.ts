/** The text tables of the benches' reports. */

/** A figure with `digits` decimals; – for one unknown (null) or not measured (NaN). */
export const num = (v: number | null, digits = 1): string => (v === null || Number.isNaN(v) ? '–' : v.toFixed(digits));

/** One row: the first cell left-aligned, the others right-aligned, each padded to its column's width. */
export const line = (cells: ReadonlyArray<string | number>, widths: readonly number[]): string =>
  cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]!) : String(c).padStart(widths[i]!))).join('');

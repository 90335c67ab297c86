/** The text tables of the benches' reports. */

/** A figure with `digits` decimals; – for one unknown (null) or not measured (NaN). */
export const num = (v: number | null, digits = 1): string => (v === null || Number.isNaN(v) ? '–' : v.toFixed(digits));

/** One row: the first cell left-aligned, the others right-aligned, each padded to its column's width. */
export const line = (cells: ReadonlyArray<string | number>, widths: readonly number[]): string =>
  cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]!) : String(c).padStart(widths[i]!))).join('');

/** Rows as a table: columns three spaces apart, each as wide as its widest cell, aligned as `line` does. */
export function grid(rows: string[][]): string {
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((r) => (r[col] ?? '').length)));
  return rows.map((r) => r.map((cell, col) => (col === 0 ? cell.padEnd(widths[col]!) : cell.padStart(widths[col]!))).join('   ').trimEnd()).join('\n');
}

/** Octavia's wire timestamps: naive UTC, `YYYY-MM-DDTHH:MM:SS`, no zone (gophercloud parses exactly this). */
export function timestamp(d: Date = new Date()): string {
  return d.toISOString().slice(0, 19);
}

/** Millisecond precision for traces, where step durations matter. */
export function preciseTimestamp(d: Date = new Date()): string {
  return d.toISOString().slice(0, 23);
}

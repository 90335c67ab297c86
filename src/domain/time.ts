/** Octavia's wire timestamps: naive UTC, `YYYY-MM-DDTHH:MM:SS`, no zone (gophercloud parses exactly this). */
export function timestamp(d: Date = new Date()): string {
  return d.toISOString().slice(0, 19);
}

/** Millisecond precision for traces, where step durations matter. */
export function preciseTimestamp(d: Date = new Date()): string {
  return d.toISOString().slice(0, 23);
}

/** An epoch-milliseconds column (a heartbeat's arrival) on the wire: ISO 8601 in UTC, to the millisecond. */
export function isoFromEpochMs(ms: number): string {
  return new Date(ms).toISOString();
}

const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?(Z|[+-]\d{2}:\d{2})?$/;

/** The epoch milliseconds of an ISO 8601 date and time; one without a zone is UTC, as every Ostia timestamp. Null if it is none. */
export function epochMsFromIso(text: string): number | null {
  const match = ISO_DATE_TIME.exec(text);
  if (!match) return null;
  const ms = Date.parse(match[1] ? text : `${text}Z`);
  return Number.isNaN(ms) ? null : ms;
}

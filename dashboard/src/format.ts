/** How times and sizes are written on every page. */

/** The API's timestamps carry no zone (Octavia's form) but are UTC. */
export function parseTime(t: string | null | undefined): Date | null {
  if (!t) return null;
  return new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(t) ? t : `${t}Z`);
}

/** Times in UTC, as the API, the CLI and the logs write them: one reading whoever looks, wherever. */
export function when(t: string | null | undefined): string {
  const d = parseTime(t);
  return d ? `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC` : '—';
}

/** "3 min ago", "2 h 5 min", "4 d" */
export function age(t: string | Date | null | undefined, now = new Date()): string {
  const d = t instanceof Date ? t : parseTime(t);
  if (!d) return '—';
  const s = Math.max(0, Math.round((now.getTime() - d.getTime()) / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d`;
}

export function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i ? v.toFixed(1) : v} ${units[i]}`;
}

/** A step's or a job's length: "7.7 ms", "645 ms", "2.9 s", "3 min 5 s". */
export function duration(ms: number): string {
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return s < 3600 ? `${Math.floor(s / 60)} min ${s % 60} s` : age(new Date(Date.now() - ms));
}

/** "12 s ago", or "never" when there is no time (an amphora that has sent no heartbeat yet). */
export function ago(t: string | null | undefined): string {
  return t ? `${age(t)} ago` : 'never';
}

/** The date alone, for a column where the time of day does not matter (a certificate's expiry). */
export function day(t: string | null | undefined): string {
  const d = parseTime(t);
  return d ? d.toISOString().slice(0, 10) : '—';
}

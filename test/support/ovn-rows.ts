/**
 * Northbound rows as ovn-nbctl sees them, decoded from its JSON output into plain values
 * (uuids as strings, sets as arrays, maps as records), for tests that check what a provider
 * wrote without going through Ostia's own OVSDB client.
 */
import type { OvnSandbox } from './ovn-sandbox.js';

export type NbRow = Record<string, unknown>;

/** RFC 7047 datum as ovn-nbctl prints it: a one-element set is printed as its bare atom. */
function decode(value: unknown): unknown {
  if (!Array.isArray(value)) return value;
  const [kind, body] = value as [string, unknown];
  if (kind === 'uuid' || kind === 'named-uuid') return body;
  if (kind === 'set') return (body as unknown[]).map(decode);
  if (kind === 'map') return Object.fromEntries((body as Array<[unknown, unknown]>).map(([k, v]) => [String(decode(k)), decode(v)]));
  throw new Error(`unexpected OVSDB datum ${JSON.stringify(value)}`);
}

/** `ovn-nbctl find TABLE CONDITION...` (or `list TABLE` without conditions), the given columns decoded. */
export async function nbRows(sb: Pick<OvnSandbox, 'nbctl'>, table: string, columns: readonly string[], ...conditions: string[]): Promise<NbRow[]> {
  const verb = conditions.length ? ['find', table, ...conditions] : ['list', table];
  const parsed = JSON.parse(await sb.nbctl('--format=json', `--columns=${columns.join(',')}`, ...verb)) as { headings: string[]; data: unknown[][] };
  return parsed.data.map((row) => Object.fromEntries(parsed.headings.map((h, i) => [h, decode(row[i])])));
}

/** A set column as an array whatever its size (nbctl prints a one-element set as the element). */
export function asSet(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [value];
}

/** The `vips` map of a row: `VIP:port` → `backend:port,...`. */
export function vipsOf(row: NbRow): Record<string, string> {
  return row.vips as Record<string, string>;
}

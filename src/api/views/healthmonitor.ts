/** Rows → the health monitor's wire form. */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { healthMonitorCodec, type HealthMonitorRow } from '../../db/records/health-monitor.js';
import { settingsOf } from '../../db/records/tree-object.js';
import { isHttpMonitor } from '../../domain/rules/healthmonitor.js';
import { readTags } from '../tags.js';
import { wants } from '../listing.js';
import { treeView } from './tree-fields.js';

type Q = Kysely<Database> | Transaction<Database>;

export interface HealthMonitorRelations {
  tags: Map<string, string[]>;
}

/** Everything the views of many monitors need, in one query whatever the page size. */
export async function healthMonitorRelations(db: Q, rows: readonly HealthMonitorRow[], fields?: readonly string[] | null): Promise<HealthMonitorRelations> {
  return { tags: await readTags(db, wants(fields, 'tags') ? rows.map((r) => r.id) : []) };
}

/** The form inside a fully populated LB (graph create response): no `pools`. */
export function healthMonitorFullView(row: HealthMonitorRow, rel: HealthMonitorRelations) {
  const monitor = settingsOf(healthMonitorCodec.decode(row), 'pool_id');
  const http = isHttpMonitor(monitor.type);
  return treeView(row, Object.assign(monitor, {
    // Only HTTP(S) monitors have these; any other type renders them null.
    http_method: http ? monitor.http_method : null,
    url_path: http ? monitor.url_path : null,
    expected_codes: http ? monitor.expected_codes : null,
    tags: rel.tags.get(row.id) ?? [],
  }));
}

export function healthMonitorView(row: HealthMonitorRow, rel: HealthMonitorRelations) {
  return Object.assign(healthMonitorFullView(row, rel), { pools: [{ id: row.pool_id }] });
}

export async function renderHealthMonitors(db: Q, rows: readonly HealthMonitorRow[], fields?: readonly string[] | null) {
  const rel = await healthMonitorRelations(db, rows, fields);
  return rows.map((r) => healthMonitorView(r, rel));
}

export type HealthMonitorView = ReturnType<typeof healthMonitorView>;

/** Rows → the health monitor's wire form. */
import type { Kysely, Transaction } from 'kysely';
import type { Database, HealthMonitorTable } from '../../db/schema.js';
import { isHttpMonitor } from '../../domain/rules/healthmonitor.js';
import { readTags } from '../tags.js';
import { treeFields } from './tree-fields.js';

export type HealthMonitorRow = HealthMonitorTable;

type Q = Kysely<Database> | Transaction<Database>;

export interface HealthMonitorRelations {
  tags: Map<string, string[]>;
}

/** Everything the views of many monitors need, in one query whatever the page size. */
export async function healthMonitorRelations(db: Q, rows: readonly HealthMonitorRow[]): Promise<HealthMonitorRelations> {
  return { tags: await readTags(db, rows.map((r) => r.id)) };
}

/** The form inside a fully populated LB (graph create response): no `pools`. */
export function healthMonitorFullView(row: HealthMonitorRow, rel: HealthMonitorRelations) {
  const http = isHttpMonitor(row.type);
  return {
    ...treeFields(row),
    name: row.name,
    type: row.type,
    delay: row.delay,
    timeout: row.timeout,
    max_retries: row.max_retries,
    max_retries_down: row.max_retries_down,
    // Only HTTP(S) monitors have these; any other type renders them null.
    http_method: http ? row.http_method : null,
    url_path: http ? row.url_path : null,
    expected_codes: http ? row.expected_codes : null,
    tags: rel.tags.get(row.id) ?? [],
    http_version: row.http_version,
    domain_name: row.domain_name,
  };
}

export function healthMonitorView(row: HealthMonitorRow, rel: HealthMonitorRelations) {
  return { ...healthMonitorFullView(row, rel), pools: [{ id: row.pool_id }] };
}

export async function renderHealthMonitors(db: Q, rows: readonly HealthMonitorRow[]) {
  const rel = await healthMonitorRelations(db, rows);
  return rows.map((r) => healthMonitorView(r, rel));
}

export type HealthMonitorView = ReturnType<typeof healthMonitorView>;

/**
 * A monitor's in-memory copy of the rows it watches, kept current from `update` (monitor) or
 * `update2` (monitor_cond) notifications, with one 'change' event per row change.
 */
import { EventEmitter } from 'node:events';
import { applyDiff, datumEquals, decodeDatum, encodeDatum, isMapType, isSetType, Uuid, type ColumnType, type Datum } from './datum.js';
import type { Condition, Row } from './operations.js';
import { columnType, type DatabaseSchema } from './schema.js';

export interface MonitoredTable {
  /** All columns when absent. */
  columns?: string[];
  /** monitor_cond only: the rows to watch; all when absent. */
  where?: Condition[];
}

export type MonitorRequests = Record<string, MonitoredTable>;

export interface RowChange {
  table: string;
  uuid: string;
  kind: 'insert' | 'update' | 'delete';
  /** The row after the change (absent for delete). */
  row?: Row;
  /** The row before the change (absent for insert). */
  old?: Row;
  /** True when the change was found by re-reading the tables after a reconnect. */
  resync: boolean;
}

export interface ResyncReport {
  inserted: number;
  updated: number;
  deleted: number;
}

export type MonitorMethod = 'monitor' | 'monitor_cond';

/** Events: 'change' (RowChange), 'resync' (ResyncReport). */
export class Monitor extends EventEmitter {
  /** table → row uuid → row (every monitored column present, defaults filled in). */
  readonly tables = new Map<string, Map<string, Row>>();

  constructor(
    readonly db: string,
    readonly id: string,
    readonly method: MonitorMethod,
    readonly requests: MonitorRequests,
    private schema: DatabaseSchema,
  ) {
    super();
    for (const t of Object.keys(requests)) this.tables.set(t, new Map());
  }

  rows(table: string): Row[] {
    return [...(this.tables.get(table)?.values() ?? [])];
  }

  /** The params of the monitor request, for the first connection and every reconnection. */
  requestParams(): unknown[] {
    const req: Record<string, unknown> = {};
    for (const [t, r] of Object.entries(this.requests)) {
      const one: Record<string, unknown> = { columns: this.columnsOf(t) };
      if (this.method === 'monitor_cond' && r.where) one.where = r.where.map(([c, f, v]) => [c, f, encodeDatum(v)]);
      req[t] = [one];
    }
    return [this.db, this.id, req];
  }

  /** The first answer: fills the cache, emitting inserts. */
  applyInitial(result: unknown): void {
    this.apply(result, false);
  }

  /**
   * The answer after a reconnect: the rows as they are now. Compares them with what we had and
   * emits the difference (resync: true), so callers learn what changed while we were away.
   */
  applyResync(result: unknown, schema: DatabaseSchema): ResyncReport {
    this.schema = schema;
    const before = new Map([...this.tables].map(([t, rows]) => [t, new Map(rows)]));
    for (const rows of this.tables.values()) rows.clear();
    this.apply(result, true, true);
    const report: ResyncReport = { inserted: 0, updated: 0, deleted: 0 };
    for (const [table, now] of this.tables) {
      const was = before.get(table) ?? new Map<string, Row>();
      for (const [uuid, row] of now) {
        const old = was.get(uuid);
        if (!old) {
          report.inserted++;
          this.emit('change', { table, uuid, kind: 'insert', row, resync: true } satisfies RowChange);
        } else if (!rowEquals(old, row)) {
          report.updated++;
          this.emit('change', { table, uuid, kind: 'update', row, old, resync: true } satisfies RowChange);
        }
      }
      for (const [uuid, old] of was) {
        if (!now.has(uuid)) {
          report.deleted++;
          this.emit('change', { table, uuid, kind: 'delete', old, resync: true } satisfies RowChange);
        }
      }
    }
    this.emit('resync', report);
    return report;
  }

  /** A notification's table-updates (monitor) or table-updates2 (monitor_cond). */
  applyNotification(updates: unknown): void {
    this.apply(updates, false);
  }

  private apply(updates: unknown, resync: boolean, silent = false): void {
    if (typeof updates !== 'object' || updates === null) return;
    for (const [table, rowsRaw] of Object.entries(updates as Record<string, Record<string, unknown>>)) {
      const cache = this.tables.get(table);
      if (!cache) continue;
      for (const [uuid, u] of Object.entries(rowsRaw)) {
        const change = this.method === 'monitor' ? this.applyUpdate(table, cache, uuid, u) : this.applyUpdate2(table, cache, uuid, u);
        if (change && !silent) this.emit('change', { ...change, resync } satisfies RowChange);
      }
    }
  }

  private applyUpdate(table: string, cache: Map<string, Row>, uuid: string, u: unknown): Omit<RowChange, 'resync'> | undefined {
    const { old, new: nu } = u as { old?: Record<string, unknown>; new?: Record<string, unknown> };
    const prev = cache.get(uuid);
    if (nu) {
      const row = this.complete(table, nu);
      cache.set(uuid, row);
      return prev ? { table, uuid, kind: 'update', row, old: prev } : { table, uuid, kind: 'insert', row };
    }
    if (old !== undefined && prev) {
      cache.delete(uuid);
      return { table, uuid, kind: 'delete', old: prev };
    }
    return undefined;
  }

  private applyUpdate2(table: string, cache: Map<string, Row>, uuid: string, u: unknown): Omit<RowChange, 'resync'> | undefined {
    const m = u as { initial?: Record<string, unknown>; insert?: Record<string, unknown>; delete?: unknown; modify?: Record<string, unknown> };
    const prev = cache.get(uuid);
    const fresh = m.initial ?? m.insert;
    if (fresh) {
      const row = this.complete(table, fresh);
      cache.set(uuid, row);
      return prev ? { table, uuid, kind: 'update', row, old: prev } : { table, uuid, kind: 'insert', row };
    }
    if ('delete' in m) {
      if (!prev) return undefined;
      cache.delete(uuid);
      return { table, uuid, kind: 'delete', old: prev };
    }
    if (m.modify && prev) {
      const row: Row = { ...prev };
      for (const [col, raw] of Object.entries(m.modify)) {
        const type = columnType(this.schema, table, col);
        row[col] = applyDiff(prev[col], decodeDatum(raw, type), type);
      }
      cache.set(uuid, row);
      return { table, uuid, kind: 'update', row, old: prev };
    }
    return undefined;
  }

  /** update2 leaves out columns at their default; the cache always holds every monitored column. */
  private complete(table: string, raw: Record<string, unknown>): Row {
    const row: Row = {};
    for (const col of this.columnsOf(table)) {
      const type = columnType(this.schema, table, col);
      row[col] = col in raw ? decodeDatum(raw[col], type) : defaultDatum(type);
    }
    return row;
  }

  private columnsOf(table: string): string[] {
    const cols = this.requests[table]?.columns;
    if (cols) return cols;
    const t = this.schema.tables[table];
    if (!t) throw new Error(`${this.db} has no table ${table}`);
    return Object.keys(t.columns);
  }
}

const ZERO_UUID = '00000000-0000-0000-0000-000000000000';

export function defaultDatum(t: ColumnType): Datum {
  if (isMapType(t)) return new Map();
  if (isSetType(t)) return [];
  switch (t.key) {
    case 'integer':
    case 'real':
      return 0;
    case 'boolean':
      return false;
    case 'string':
      return '';
    case 'uuid':
      return new Uuid(ZERO_UUID);
  }
}

export function rowEquals(a: Row, b: Row): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) {
    if (a[k] === undefined || b[k] === undefined || !datumEquals(a[k] as Datum, b[k] as Datum)) return false;
  }
  return true;
}

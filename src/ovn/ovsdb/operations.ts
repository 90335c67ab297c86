/** Typed OVSDB transact operations (RFC 7047 §5.2) and their results. */
import { decodeDatum, encodeDatum, Uuid, type Atom, type Datum } from './datum.js';
import { columnType, type DatabaseSchema } from './schema.js';

export type Row = Record<string, Datum>;
/** Rows we write may use plain objects for string maps. */
export type RowInput = Record<string, Datum | Record<string, Atom>>;

export type ConditionFn = '==' | '!=' | '<' | '<=' | '>' | '>=' | 'includes' | 'excludes';
export type Condition = [column: string, fn: ConditionFn, value: Datum | Record<string, Atom>];
export type Mutator = '+=' | '-=' | '*=' | '/=' | '%=' | 'insert' | 'delete';
export type Mutation = [column: string, mutator: Mutator, value: Datum | Record<string, Atom>];

export type Operation =
  | { op: 'insert'; table: string; row: RowInput; uuidName?: string }
  | { op: 'select'; table: string; where: Condition[]; columns?: string[] }
  | { op: 'update'; table: string; where: Condition[]; row: RowInput }
  | { op: 'mutate'; table: string; where: Condition[]; mutations: Mutation[] }
  | { op: 'delete'; table: string; where: Condition[] }
  | {
      op: 'wait';
      table: string;
      where: Condition[];
      columns: string[];
      until: '==' | '!=';
      rows: RowInput[];
      timeoutMs?: number;
    }
  | { op: 'comment'; comment: string };

export type OperationResult =
  | { op: 'insert'; uuid: Uuid }
  | { op: 'select'; rows: Row[] }
  | { op: 'update' | 'mutate' | 'delete'; count: number }
  | { op: 'wait' | 'comment' };

/** An operation (or the commit, after the last one) that OVSDB refused. */
export class OvsdbOperationError extends Error {
  constructor(
    readonly index: number,
    readonly op: string,
    readonly table: string | undefined,
    readonly error: string,
    readonly details: string | undefined,
  ) {
    super(
      `OVSDB ${op}${table ? ` on ${table}` : ''} (operation ${index}) failed: ${error}${details ? `: ${details}` : ''}`,
    );
  }
}

function encodeRow(row: RowInput): Record<string, unknown> {
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, encodeDatum(v)]));
}

const encodeWhere = (w: Condition[]) => w.map(([c, f, v]) => [c, f, encodeDatum(v)]);

export function encodeOperation(o: Operation): Record<string, unknown> {
  switch (o.op) {
    case 'insert':
      return { op: 'insert', table: o.table, row: encodeRow(o.row), ...(o.uuidName ? { 'uuid-name': o.uuidName } : {}) };
    case 'select':
      return { op: 'select', table: o.table, where: encodeWhere(o.where), ...(o.columns ? { columns: o.columns } : {}) };
    case 'update':
      return { op: 'update', table: o.table, where: encodeWhere(o.where), row: encodeRow(o.row) };
    case 'mutate':
      return {
        op: 'mutate',
        table: o.table,
        where: encodeWhere(o.where),
        mutations: o.mutations.map(([c, m, v]) => [c, m, encodeDatum(v)]),
      };
    case 'delete':
      return { op: 'delete', table: o.table, where: encodeWhere(o.where) };
    case 'wait':
      return {
        op: 'wait',
        table: o.table,
        where: encodeWhere(o.where),
        columns: o.columns,
        until: o.until,
        rows: o.rows.map(encodeRow),
        ...(o.timeoutMs !== undefined ? { timeout: o.timeoutMs } : {}),
      };
    case 'comment':
      return { op: 'comment', comment: o.comment };
  }
}

export function decodeRow(schema: DatabaseSchema, table: string, raw: Record<string, unknown>): Row {
  const row: Row = {};
  for (const [k, v] of Object.entries(raw)) row[k] = decodeDatum(v, columnType(schema, table, k));
  return row;
}

/** Throws the first refused operation, or the commit's refusal (the extra trailing result). */
export function decodeResults(schema: DatabaseSchema, ops: Operation[], raw: unknown): OperationResult[] {
  if (!Array.isArray(raw)) throw new TypeError(`transact answered ${JSON.stringify(raw)}`);
  for (let i = 0; i < raw.length; i++) {
    const r = raw[i] as { error?: unknown; details?: unknown } | null;
    if (r && typeof r.error === 'string') {
      const o = ops[i];
      throw new OvsdbOperationError(
        i,
        o ? o.op : 'commit',
        o && 'table' in o ? o.table : undefined,
        r.error,
        typeof r.details === 'string' ? r.details : undefined,
      );
    }
  }
  return ops.map((o, i) => {
    const r = (raw[i] ?? {}) as Record<string, unknown>;
    switch (o.op) {
      case 'insert':
        return { op: o.op, uuid: decodeDatum(r.uuid) as Uuid };
      case 'select':
        return { op: o.op, rows: (r.rows as Record<string, unknown>[]).map((row) => decodeRow(schema, o.table, row)) };
      case 'update':
      case 'mutate':
      case 'delete':
        return { op: o.op, count: Number(r.count) };
      default:
        return { op: o.op };
    }
  });
}

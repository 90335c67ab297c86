/**
 * What the client and provider need from an OVSDB schema (RFC 7047 §3.2): column types for
 * decoding, column presence for feature checks, and the version.
 */
import type { AtomicType, ColumnType } from './datum.js';

export interface DatabaseSchema {
  name: string;
  version: string;
  tables: Record<string, { columns: Record<string, { type: unknown }>; isRoot?: boolean }>;
}

/** Upstream ovn-octavia-provider's words when the Northbound schema has no health checks. */
export const HEALTH_CHECK_UNSUPPORTED_TEXT =
  'OVN Load Balancer supports Health Check provider from version 2.12. Upgrade OVN in order to use it.';

export class HealthCheckUnsupportedError extends Error {
  constructor() {
    super(HEALTH_CHECK_UNSUPPORTED_TEXT);
  }
}

export class SchemaError extends Error {}

export function hasTable(schema: DatabaseSchema, table: string): boolean {
  return Object.hasOwn(schema.tables, table);
}

export function hasColumn(schema: DatabaseSchema, table: string, column: string): boolean {
  if (column === '_uuid' || column === '_version') return hasTable(schema, table);
  return hasTable(schema, table) && Object.hasOwn(schema.tables[table]!.columns, column);
}

/** [major, minor, patch] of the schema's "x.y.z" version. */
export function schemaVersion(schema: DatabaseSchema): [number, number, number] {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(schema.version ?? '');
  if (!m) throw new SchemaError(`schema ${schema.name} has no x.y.z version: ${JSON.stringify(schema.version)}`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

export function versionAtLeast(schema: DatabaseSchema, min: [number, number, number]): boolean {
  const v = schemaVersion(schema);
  for (let i = 0; i < 3; i++) {
    if (v[i]! !== min[i]!) return v[i]! > min[i]!;
  }
  return true;
}

/** Upstream asks for the column `Load_Balancer.health_check`; its table has to exist as well. */
export function supportsHealthChecks(schema: DatabaseSchema): boolean {
  return hasColumn(schema, 'Load_Balancer', 'health_check') && hasTable(schema, 'Load_Balancer_Health_Check');
}

export function assertHealthChecksSupported(schema: DatabaseSchema): void {
  if (!supportsHealthChecks(schema)) throw new HealthCheckUnsupportedError();
}

const UUID_COLUMN: ColumnType = { key: 'uuid', min: 1, max: 1 };

export function columnType(schema: DatabaseSchema, table: string, column: string): ColumnType {
  if (column === '_uuid' || column === '_version') return UUID_COLUMN;
  const col = schema.tables[table]?.columns[column];
  if (!col) throw new SchemaError(`${schema.name} has no column ${table}.${column}`);
  return parseType(col.type);
}

function atomicOf(x: unknown): AtomicType {
  const t = typeof x === 'string' ? x : (x as { type?: unknown })?.type;
  if (t === 'integer' || t === 'real' || t === 'boolean' || t === 'string' || t === 'uuid') return t;
  throw new SchemaError(`unknown atomic type ${JSON.stringify(x)}`);
}

export function parseType(t: unknown): ColumnType {
  if (typeof t === 'string') return { key: atomicOf(t), min: 1, max: 1 };
  const o = t as { key?: unknown; value?: unknown; min?: unknown; max?: unknown };
  if (typeof o !== 'object' || o === null || o.key === undefined) throw new SchemaError(`bad column type ${JSON.stringify(t)}`);
  const out: ColumnType = {
    key: atomicOf(o.key),
    min: typeof o.min === 'number' ? o.min : 1,
    max: o.max === 'unlimited' ? 'unlimited' : typeof o.max === 'number' ? o.max : 1,
  };
  if (o.value !== undefined) out.value = atomicOf(o.value);
  return out;
}

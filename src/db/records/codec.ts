/**
 * A record is a table's row as the code reads it: booleans as booleans, lists and maps as
 * values, enums as the domain's. A row is how the same record is stored so that one set of rows
 * and queries works on SQLite and PostgreSQL: booleans as 0/1 integers, lists and maps as JSON
 * text, every other value as it is. The row type is derived from the record, and the one
 * conversion between them is a table's codec, so a new plain column is a new record field and
 * nothing else.
 */

/** How one record field is stored. */
export type Column<T> = T extends boolean ? number : T extends null ? null : T extends object ? string : T;

export type Row<R> = { [K in keyof R]: Column<R[K]> };

type Stored<T> = [NonNullable<T>] extends [boolean] ? 'bool' : [NonNullable<T>] extends [object] ? 'json' : never;

/** Exactly the fields a row stores differently: the compiler refuses a missing or extra one. */
export type Conversions<R> = { [K in keyof R as [Stored<R[K]>] extends [never] ? never : K]-?: Stored<R[K]> };

/** A row, a selection of its columns or a join's result, its record's columns decoded and the rest as they are. */
type Decoded<R, T> = { [K in keyof T]: K extends keyof R ? R[K] : T[K] };
type Encoded<R, T> = { [K in keyof T]: K extends keyof R ? Column<R[K]> : T[K] };

export interface Codec<R> {
  decode<T extends Partial<Row<R>>>(row: T): Decoded<R, T>;
  encode<T extends Partial<R>>(record: T): Encoded<R, T>;
}

export function codec<R>(conversions: Conversions<R>): Codec<R> {
  const fields = Object.entries(conversions) as Array<[string, 'bool' | 'json']>;
  const convert = (source: object, to: Record<'bool' | 'json', (v: unknown) => unknown>) => {
    const out: Record<string, unknown> = { ...source };
    for (const [field, kind] of fields) {
      const value = out[field];
      if (value !== undefined && value !== null) out[field] = to[kind](value);
    }
    return out;
  };
  // Most list columns are empty: '[]' read without the parser (a fresh array each time, as the parser gives).
  const decoders = { bool: (v: unknown) => v === 1 || v === true, json: (v: unknown) => (v === '[]' ? [] : (JSON.parse(v as string) as unknown)) };
  const encoders = { bool: (v: unknown) => (v ? 1 : 0), json: (v: unknown) => JSON.stringify(v) };
  return {
    decode: <T extends Partial<Row<R>>>(row: T) => convert(row, decoders) as Decoded<R, T>,
    encode: <T extends Partial<R>>(record: T) => convert(record, encoders) as Encoded<R, T>,
  };
}

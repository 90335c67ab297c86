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

export interface Codec<R> {
  /** A whole row or a selection of its columns. */
  decode<K extends keyof R>(row: Pick<Row<R>, K>): Pick<R, K>;
  encode<K extends keyof R>(record: Pick<R, K>): Pick<Row<R>, K>;
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
  const decoders = { bool: (v: unknown) => v === 1 || v === true, json: (v: unknown) => JSON.parse(v as string) as unknown };
  const encoders = { bool: (v: unknown) => (v ? 1 : 0), json: (v: unknown) => JSON.stringify(v) };
  return {
    decode: <K extends keyof R>(row: Pick<Row<R>, K>) => convert(row, decoders) as Pick<R, K>,
    encode: <K extends keyof R>(record: Pick<R, K>) => convert(record, encoders) as Pick<Row<R>, K>,
  };
}

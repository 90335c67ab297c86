/**
 * The SQLite binding (@rocicorp/zero-sqlite3, better-sqlite3's code with its binary in the package)
 * as Kysely's SqliteDialect sees it, made cheaper for reads. Prepared statements are
 * kept per SQL text, since API reads repeat the same few. Rows are read as arrays and built into
 * objects by a function compiled once per statement: the binding's own object rows cost ~1.4 µs a
 * cell here (a property set on a fresh object each), twice the array plus one object literal with the
 * statement's columns, and that was the largest part of a list of load balancers.
 */
import type BetterSqlite3 from '@rocicorp/zero-sqlite3';

type Params = unknown[];

/** The part of a prepared statement Kysely's SqliteDialect calls. */
export interface DialectStatement {
  readonly reader: boolean;
  all(params: Params): unknown[];
  run(params: Params): BetterSqlite3.RunResult;
  iterate(params: Params): IterableIterator<unknown>;
}

/** Builds one row object from a raw row: `{"c0": v[0], "c1": v[1], …}`, a literal, so every row shares one shape. */
function rowBuilder(columns: readonly string[]): (values: unknown[]) => Record<string, unknown> {
  // A duplicate name keeps its last value, as the binding's object rows do.
  const body = `return {${columns.map((name, i) => `${JSON.stringify(name)}: v[${i}]`).join(', ')}};`;
  return new Function('v', body) as (values: unknown[]) => Record<string, unknown>;
}

/** Kysely writes every parameter as `?`, and never a `?` inside a literal (values are parameters). */
function parameters(sql: string): number {
  let n = 0;
  for (let i = sql.indexOf('?'); i >= 0; i = sql.indexOf('?', i + 1)) n++;
  return n;
}

function dialectStatement(stmt: BetterSqlite3.Statement): DialectStatement {
  if (!stmt.reader) return stmt as DialectStatement;
  const build = rowBuilder(stmt.columns().map((c) => c.name));
  stmt.raw(true);
  return {
    reader: true,
    all: (p) => (stmt.all(p) as unknown[][]).map(build),
    run: (p) => stmt.run(p),
    *iterate(p) {
      for (const values of stmt.iterate(p) as IterableIterator<unknown[]>) yield build(values);
    },
  };
}

/**
 * A statement with more parameters than this is not kept: its SQL is one of many (an `in (…)`
 * list as long as a page), so it would rarely be asked for again, and a compiled statement holds
 * native memory by its length (measured: ~67 KB for a list of 250, so a cache full of them would
 * hold ~33 MiB outside the JS heap). Preparing it again costs little beside reading its rows.
 */
const KEPT_MAX_PARAMETERS = 32;

/** `db` with `prepare` answering array-reading statements, the short ones cached; bounded, oldest evicted first. */
export function withFastStatements(db: BetterSqlite3.Database, max = 500): BetterSqlite3.Database {
  const cache = new Map<string, DialectStatement>();
  const prepare = (sql: string) => {
    let stmt = cache.get(sql);
    if (stmt === undefined) {
      stmt = dialectStatement(db.prepare(sql));
      if (parameters(sql) > KEPT_MAX_PARAMETERS) return stmt;
      if (cache.size >= max) cache.delete(cache.keys().next().value!);
      cache.set(sql, stmt);
    }
    return stmt;
  };
  return new Proxy(db, { get: (target, prop, receiver) => (prop === 'prepare' ? prepare : Reflect.get(target, prop, receiver)) });
}

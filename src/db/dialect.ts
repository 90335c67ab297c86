/** What differs between the two databases where a query is written once for both. */
import { PostgresAdapter, sql, type Expression, type Kysely, type SqlBool } from 'kysely';

export function onPostgres(db: Kysely<unknown>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/**
 * `column IN (ids)` with one parameter however many ids: a page's lookups (up to a thousand ids)
 * keep one SQL text, so their statement is prepared once and cached, where a parameter per id made
 * a new statement for every page (preparing it, and Kysely compiling a node per id, were ~8 % of
 * the CPU of a list of 1,000 load balancers).
 */
export function inIds<DB>(db: Kysely<DB>, column: string, ids: readonly string[]): Expression<SqlBool> {
  return onPostgres(db as Kysely<unknown>)
    ? sql<SqlBool>`${sql.ref(column)} = any(${[...ids]}::varchar[])`
    : sql<SqlBool>`${sql.ref(column)} in (select value from json_each(${JSON.stringify(ids)}))`;
}

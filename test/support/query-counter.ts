/**
 * Counts the queries a Kysely instance runs and the rows they return: `withPlugin` gives a
 * counting view of a database whose work a test (or a bench) wants to bound, sharing its
 * connections.
 */
import type { Kysely, KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';

export class QueryCounter implements KyselyPlugin {
  queries = 0;
  rows = 0;

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    this.queries++;
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    this.rows += args.result.rows.length;
    return args.result;
  }

  /** What `fn` ran: its queries and the rows they returned. */
  async during<T>(fn: () => Promise<T>): Promise<{ result: T; queries: number; rows: number }> {
    const before = { queries: this.queries, rows: this.rows };
    const result = await fn();
    return { result, queries: this.queries - before.queries, rows: this.rows - before.rows };
  }
}

/** `db` with a counter on every query it runs. */
export function counted<DB>(db: Kysely<DB>): { db: Kysely<DB>; counter: QueryCounter } {
  const counter = new QueryCounter();
  return { db: db.withPlugin(counter), counter };
}

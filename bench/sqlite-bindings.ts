/**
 * SQLite bindings compared on the queries a list of load balancers runs: the page of load_balancer
 * rows (every column) and the listener, pool and tag lookups of its ids (`IN (…)`), the SQL Kysely
 * compiles for src/api/listing.ts and src/api/views/loadbalancer.ts. Each binding opens the same
 * file, prepares each statement once and runs it in the binding's object mode (`all()`) and as the
 * API does (withFastStatements: rows read as arrays, objects built by a compiled function).
 * Repetitions interleave the bindings, alternating their order; ratios are per repetition, first
 * binding ÷ second.
 *
 *   npm run build && node dist/bench/sqlite-bindings.js [--json] [--reps 15] [--lbs 1000] [--sizes 100,1000] [--bindings @rocicorp/zero-sqlite3,better-sqlite3]
 *
 * Every named binding must be installed: `npm install --no-save better-sqlite3@12.11.1 libsql@0.5.29` adds the others measured (better-sqlite3 compiles SQLite, minutes).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql, type Kysely } from 'kysely';
import { migrate, openDatabase } from '../src/db/database.js';
import type { Database } from '../src/db/schema.js';
import { withFastStatements } from '../src/db/sqlite-statements.js';
import { benchArgs, positiveInt, positiveInts } from './support/args.js';
import { median } from './support/stats.js';
import { grid, num } from './support/table.js';

const USAGE = `Usage: node dist/bench/sqlite-bindings.js [--json] [--reps 15] [--lbs 1000] [--sizes 100,1000] [--bindings A,B]

The queries of a list of --sizes load balancers (of --lbs stored, each with a listener, a pool and two
tags) on two SQLite bindings, interleaved over --reps repetitions; ratios are A ÷ B.
`;
const PROJECT = 'bench-project';
/** Each timing is the median of this many runs, so that one repetition takes about as long for each size. */
const RUNS_PER_ROW = 20_000;

/** What the bench needs of a binding: better-sqlite3's API, which every binding measured here has. */
type Binding = Parameters<typeof withFastStatements>[0];
type Open = new (path: string) => Binding;

interface Query {
  name: string;
  sql: string;
  params: unknown[];
}

async function populate(db: Kysely<Database>, lbs: number): Promise<string[]> {
  // Columns as the migrations made them, so the rows are as wide as real ones.
  const columns = (await sql<{ name: string; type: string }>`select name, type from pragma_table_info('load_balancer')`.execute(db)).rows;
  const ids: string[] = [];
  const start = Date.parse('2025-01-01T00:00:00Z');
  for (let i = 0; i < lbs; i++) {
    const id = randomUUID();
    ids.push(id);
    const row: Record<string, unknown> = {};
    for (const c of columns) {
      if (c.name === 'id') row[c.name] = id;
      else if (c.name === 'project_id') row[c.name] = PROJECT;
      else if (c.name === 'created_at' || c.name === 'updated_at') row[c.name] = new Date(start + i * 1000).toISOString().slice(0, 19);
      else if (c.name === 'vip_sg_ids' || c.name === 'additional_vips') row[c.name] = '[]';
      else if (c.type.startsWith('integer')) row[c.name] = 1;
      else row[c.name] = c.name.endsWith('_id') ? randomUUID() : `${c.name}-${i}`;
    }
    await db.insertInto('load_balancer').values(row as never).execute();
  }
  const copyOf = async (table: 'listener' | 'pool', lbId: string) => {
    // A child row copies the columns it must have from a template: the bench reads only id and load_balancer_id.
    const cols = (await sql<{ name: string; type: string; notnull: number }>`select name, type, "notnull" from pragma_table_info(${table})`.execute(db)).rows;
    const row: Record<string, unknown> = {};
    for (const c of cols) {
      if (c.name === 'id') row[c.name] = randomUUID();
      else if (c.name === 'load_balancer_id') row[c.name] = lbId;
      else if (c.name === 'project_id') row[c.name] = PROJECT;
      else if (c.name === 'created_at') row[c.name] = new Date().toISOString().slice(0, 19);
      else if (c.notnull) row[c.name] = c.type.startsWith('integer') ? 1 : '[]';
    }
    await db.insertInto(table).values(row as never).execute();
  };
  for (const id of ids) {
    await copyOf('listener', id);
    await copyOf('pool', id);
    await db.insertInto('tag').values([{ resource_id: id, tag: 'web' }, { resource_id: id, tag: `n${id.slice(0, 4)}` }]).execute();
  }
  return ids;
}

/** The SQL of one list page of `size` load balancers, as Kysely compiles it for the API. */
function listQueries(db: Kysely<Database>, ids: string[]): Query[] {
  const page = db
    .selectFrom('load_balancer')
    .selectAll('load_balancer')
    .where('project_id', '=', PROJECT)
    .orderBy(sql.raw('load_balancer.created_at asc nulls first'))
    .orderBy(sql.raw('load_balancer.id asc nulls first'))
    .limit(ids.length)
    .compile();
  const listener = db.selectFrom('listener').select(['id', 'load_balancer_id']).where('load_balancer_id', 'in', ids).orderBy('created_at').orderBy('id').compile();
  const pool = db.selectFrom('pool').select(['id', 'load_balancer_id']).where('load_balancer_id', 'in', ids).orderBy('created_at').orderBy('id').compile();
  const tag = db.selectFrom('tag').select(['resource_id', 'tag']).where('resource_id', 'in', ids).orderBy('tag').compile();
  return [
    { name: 'load_balancer', sql: page.sql, params: [...page.parameters] },
    { name: 'listener IN', sql: listener.sql, params: [...listener.parameters] },
    { name: 'pool IN', sql: pool.sql, params: [...pool.parameters] },
    { name: 'tag IN', sql: tag.sql, params: [...tag.parameters] },
  ];
}

interface Case {
  size: number;
  mode: 'object' | 'api';
}

/** One binding's prepared statements per size, and a timing of one case (ms, median of `runs`). */
function prepared(open: Open, file: string, pages: Map<number, Query[]>) {
  const db = new open(file);
  db.pragma('journal_mode = WAL');
  const fast = withFastStatements(db);
  const stmts = new Map([...pages].map(([size, qs]) => [size, qs.map((q) => ({ q, object: db.prepare(q.sql), api: fast.prepare(q.sql) }))]));
  const once = (c: Case) => {
    let n = 0;
    for (const s of stmts.get(c.size)!) n += (c.mode === 'object' ? s.object.all(s.q.params) : s.api.all(s.q.params)).length;
    return n;
  };
  return {
    rowsOf: (c: Case) => once(c),
    time(c: Case, runs: number): number {
      const ms: number[] = [];
      for (let i = 0; i < runs; i++) {
        const t0 = performance.now();
        once(c);
        ms.push(performance.now() - t0);
      }
      return median(ms);
    },
    close: () => db.close(),
  };
}

async function main() {
  const values = benchArgs({
    reps: { type: 'string', default: '15' },
    lbs: { type: 'string', default: '1000' },
    sizes: { type: 'string', default: '100,1000' },
    bindings: { type: 'string', default: '@rocicorp/zero-sqlite3,better-sqlite3' },
  });
  if (!values) {
    process.stdout.write(USAGE);
    return;
  }
  const reps = positiveInt('reps', values.reps);
  const lbs = positiveInt('lbs', values.lbs);
  const sizes = positiveInts('sizes', values.sizes);
  if (sizes.some((s) => s > lbs)) throw new Error(`--sizes must not exceed --lbs (${lbs})`);
  const names = values.bindings.split(',').map((s) => s.trim());
  if (names.length !== 2) throw new Error(`--bindings names two bindings, got '${values.bindings}'`);
  const require = createRequire(import.meta.url);
  const opens = names.map((n) => {
    try {
      return require(n) as Open;
    } catch (e) {
      throw new Error(`cannot load the binding '${n}' (${e instanceof Error ? e.message.split('\n')[0] : String(e)}); install it beside Ostia's with: npm install --no-save ${n}`);
    }
  });

  const dir = mkdtempSync(join(tmpdir(), 'ostia-sqlite-bench-'));
  const file = join(dir, 'ostia.db');
  try {
    const db = await openDatabase(`sqlite:${file}`);
    await migrate(db);
    const ids = await populate(db.kysely, lbs);
    const pages = new Map(sizes.map((size) => [size, listQueries(db.kysely, ids.slice(0, size))]));
    await db.close();

    const targets = opens.map((open) => prepared(open, file, pages));
    const cases: Case[] = sizes.flatMap((size) => (['object', 'api'] as const).map((mode) => ({ size, mode })));
    for (const c of cases) {
      const counts = targets.map((t) => t.rowsOf(c));
      if (counts[0] !== counts[1]) throw new Error(`the bindings read ${counts.join(' and ')} rows for ${c.size} ${c.mode}`);
    }
    const load0 = loadavg()[0]!;
    // times[case][target][rep]
    const times = cases.map(() => targets.map((): number[] => []));
    for (const c of cases) for (const t of targets) t.time(c, 50); // warm-up
    for (let rep = 0; rep < reps; rep++) {
      const order = rep % 2 === 0 ? [0, 1] : [1, 0];
      for (const [i, c] of cases.entries()) for (const j of order) times[i]![j]!.push(targets[j]!.time(c, Math.max(5, Math.round(RUNS_PER_ROW / c.size))));
    }
    const load1 = loadavg()[0]!;
    for (const t of targets) t.close();

    const rows = cases.map((c, i) => {
      const [a, b] = times[i]! as [number[], number[]];
      return { size: c.size, mode: c.mode, [`${names[0]}_ms`]: median(a), [`${names[1]}_ms`]: median(b), ratio: median(a.map((x, k) => x / b[k]!)) };
    });
    const result = { bindings: names, lbs, reps, load_average: [load0, load1], rows, command: `node dist/bench/sqlite-bindings.js --reps ${reps} --lbs ${lbs} --sizes ${sizes.join(',')} --bindings ${names.join(',')}` };
    if (values.json) {
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      return;
    }
    process.stdout.write(
      `${grid([
        ['list of', 'mode', `${names[0]} ms`, `${names[1]} ms`, `${names[0]} ÷ ${names[1]}`],
        ...rows.map((r) => [String(r.size), r.mode, num(r[`${names[0]}_ms`] as number, 3), num(r[`${names[1]}_ms`] as number, 3), num(r.ratio, 2)]),
      ])}\n\n4 queries per list (load_balancer page, listener/pool/tag IN); median of ${reps} interleaved repetitions; load average ${load0.toFixed(2)} → ${load1.toFixed(2)}\n${result.command}\n`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`sqlite-bindings: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});

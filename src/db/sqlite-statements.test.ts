import { test } from 'node:test';
import assert from 'node:assert/strict';
import SQLite from '@rocicorp/zero-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { withFastStatements } from './sqlite-statements.js';

function pair() {
  const plain = new SQLite(':memory:');
  plain.exec(`create table t (id integer primary key, name text, n real, b blob, x text);
    insert into t (name, n, b, x) values ('a', 1.5, x'00ff', null), ('b', null, null, 'é');`);
  return { plain, fast: withFastStatements(plain) };
}

test('rows read as arrays are the objects the binding builds, duplicate names and all', () => {
  const { plain, fast } = pair();
  for (const text of ['select * from t order by id', 'select t.id, u.id, t.name from t join t u on u.id = t.id', 'select count(*), max(n) from t', 'select * from t where id = ?']) {
    const params = text.includes('?') ? [2] : [];
    assert.deepEqual(fast.prepare(text).all(params), plain.prepare(text).all(...params), text);
    assert.deepEqual([...fast.prepare(text).iterate(params)], plain.prepare(text).all(...params), text);
  }
});

test('writes and RETURNING go through, and a statement is prepared once per text', async () => {
  const { fast } = pair();
  const db = new Kysely<{ t: { id: number; name: string | null; n: number | null; b: Buffer | null; x: string | null } }>({ dialect: new SqliteDialect({ database: fast }) });
  const inserted = await db.insertInto('t').values({ id: 3, name: 'c', n: 2, b: null, x: null }).returning(['id', 'name']).executeTakeFirstOrThrow();
  assert.deepEqual(inserted, { id: 3, name: 'c' });
  const updated = await db.updateTable('t').set({ x: 'y' }).where('id', '>', 1).executeTakeFirstOrThrow();
  assert.equal(updated.numUpdatedRows, 2n);
  assert.equal(fast.prepare('select 1 as one'), fast.prepare('select 1 as one'));
  assert.deepEqual((await sql<{ one: number }>`select 1 as one`.execute(db)).rows, [{ one: 1 }]);
  await db.destroy();
});

test('a statement with a page-long list of parameters is not kept, a short one is', () => {
  const { fast } = pair();
  const short = `select * from t where id in (${Array(32).fill('?').join(', ')})`;
  const long = `select * from t where id in (${Array(33).fill('?').join(', ')})`;
  assert.equal(fast.prepare(short), fast.prepare(short));
  assert.notEqual(fast.prepare(long), fast.prepare(long));
  assert.deepEqual(fast.prepare(long).all([1, ...Array(32).fill(0)]), [{ id: 1, name: 'a', n: 1.5, b: Buffer.from([0, 255]), x: null }]);
});

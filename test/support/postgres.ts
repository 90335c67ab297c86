/** A throw-away database per test file on the PostgreSQL server named by a URL. */
import { randomBytes } from 'node:crypto';
import { migrate, openDatabase, type Db } from '../../src/db/database.js';

export async function freshPostgresDatabase(serverUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const pg = await import('pg');
  const name = `ostia_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.default.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.default.Client({ connectionString: serverUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/**
 * A migrated database for one test, closed (and dropped) after it: SQLite in memory, or a fresh
 * PostgreSQL database when OSTIA_TEST_DATABASE_URL names a server (npm test's second pass).
 */
export async function testDatabase(t: { after(fn: () => Promise<void>): void }): Promise<Db> {
  const server = process.env.OSTIA_TEST_DATABASE_URL;
  const pg = server ? await freshPostgresDatabase(server) : null;
  const db = await openDatabase(pg?.url ?? 'sqlite:');
  await migrate(db);
  t.after(async () => {
    await db.close();
    await pg?.drop();
  });
  return db;
}

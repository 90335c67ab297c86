/** Opens the database named by a URL: `sqlite:<path>` (embedded default) or `postgres://…`. */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FileMigrationProvider, Kysely, Migrator, PostgresDialect, SqliteDialect } from 'kysely';
import type { Database } from './schema.js';
import { openPostgresPool } from './postgres-pool.js';
import { withFastStatements } from './sqlite-statements.js';
import { postgresStatusFeed, sqliteStatusFeed, type StatusFeed } from './status-feed.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Db {
  readonly kysely: Kysely<Database>;
  readonly dialect: Dialect;
  /** Status changes of load balancer trees, as the database announces them. */
  readonly status: StatusFeed;
  close(): Promise<void>;
}

/** Every file of migrations/, applied in name order: a new migration is a new file and nothing else. */
const provider = new FileMigrationProvider({ fs, path, migrationFolder: fileURLToPath(new URL('./migrations', import.meta.url)) });

export async function openDatabase(url: string): Promise<Db> {
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    const pg = await import('pg');
    // BIGINT columns (job leases) hold epoch milliseconds: safe as JS numbers.
    pg.default.types.setTypeParser(20, (v: string) => Number(v));
    const { pool, end } = await openPostgresPool(url, 10);
    // Kysely's destroy() would end the pool without waiting for its connections to close: it gets
    // a pool whose end is a no-op, and close() ends the real one with end(), which waits.
    const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool: { connect: () => pool.connect(), end: () => Promise.resolve() } }) });
    const status = postgresStatusFeed(url);
    return {
      kysely,
      dialect: 'postgres',
      status,
      async close() {
        await status.close();
        await kysely.destroy();
        await end();
      },
    };
  }
  const path = url.replace(/^sqlite:(\/\/)?/, '');
  const { default: SQLite } = await import('@rocicorp/zero-sqlite3');
  const sqlite = new SQLite(path === '' ? ':memory:' : path);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = OFF');
  const kysely = new Kysely<Database>({ dialect: new SqliteDialect({ database: withFastStatements(sqlite) }) });
  const status = sqliteStatusFeed(sqlite);
  return {
    kysely,
    dialect: 'sqlite',
    status,
    async close() {
      await status.close();
      await kysely.destroy();
    },
  };
}

/** Brings the schema to the newest version; a lock table keeps concurrent starters apart. */
export async function migrate(db: Db): Promise<void> {
  const migrator = new Migrator({ db: db.kysely, provider, migrationTableName: 'ostia_migration', migrationLockTableName: 'ostia_migration_lock' });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
}

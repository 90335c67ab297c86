import type { Kysely } from 'kysely';
import { onPostgres } from '../dialect.js';
import { createPostgresStatusTriggers, dropPostgresStatusTriggers } from '../status-triggers.js';

// PostgreSQL announces status changes itself (status-triggers.ts); SQLite's triggers are each connection's own.

export async function up(db: Kysely<unknown>): Promise<void> {
  if (onPostgres(db)) await createPostgresStatusTriggers(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (onPostgres(db)) await dropPostgresStatusTriggers(db);
}

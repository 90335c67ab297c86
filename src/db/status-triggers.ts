/**
 * Status changes announced by the database itself, so that every writer (API, worker, health
 * manager, OVN watcher, housekeeping, an operator's SQL) is heard without each remembering to
 * say so. A trigger on each object of a load balancer's tree names the load balancer and its
 * project when a status (or a status reason) changes, a row is inserted or deleted:
 * PostgreSQL sends it with NOTIFY on STATUS_CHANNEL at commit (doubles within one transaction
 * merged); SQLite calls STATUS_FUNCTION, which its connection's opener registers, from TEMP
 * triggers that the same opener creates (so another program opening the file without that
 * function still writes freely).
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.js';

export const STATUS_CHANNEL = 'ostia_status';
export const STATUS_FUNCTION = 'ostia_status_changed';

interface Watched {
  table: string;
  /** The load balancer of row `r` (NEW or OLD). */
  lb(r: string): string;
  /** Columns whose change is announced. */
  columns: readonly string[];
}

const STATUSES = ['provisioning_status', 'operating_status'] as const;

const WATCHED: readonly Watched[] = [
  { table: 'load_balancer', lb: (r) => `${r}.id`, columns: [...STATUSES, 'status_reason'] },
  { table: 'listener', lb: (r) => `${r}.load_balancer_id`, columns: [...STATUSES, 'status_reason'] },
  { table: 'pool', lb: (r) => `${r}.load_balancer_id`, columns: STATUSES },
  { table: 'member', lb: (r) => `(SELECT load_balancer_id FROM pool WHERE id = ${r}.pool_id)`, columns: STATUSES },
  { table: 'health_monitor', lb: (r) => `(SELECT load_balancer_id FROM pool WHERE id = ${r}.pool_id)`, columns: STATUSES },
  { table: 'l7policy', lb: (r) => `(SELECT load_balancer_id FROM listener WHERE id = ${r}.listener_id)`, columns: STATUSES },
  {
    table: 'l7rule',
    lb: (r) => `(SELECT l.load_balancer_id FROM listener l JOIN l7policy p ON p.listener_id = l.id WHERE p.id = ${r}.l7policy_id)`,
    columns: STATUSES,
  },
];

const changed = (columns: readonly string[]) => columns.map((c) => `OLD.${c} IS DISTINCT FROM NEW.${c}`).join(' OR ');
const sqliteChanged = (columns: readonly string[]) => columns.map((c) => `OLD.${c} IS NOT NEW.${c}`).join(' OR ');

type Event = 'INSERT' | 'UPDATE' | 'DELETE';
const EVENTS: readonly Event[] = ['INSERT', 'UPDATE', 'DELETE'];
const rowOf = (event: Event) => (event === 'DELETE' ? 'OLD' : 'NEW');

/** PostgreSQL: one function per table (its load balancer expression differs), one trigger per event. */
export async function createPostgresStatusTriggers(db: Kysely<unknown>): Promise<void> {
  for (const w of WATCHED) {
    const fn = `ostia_status_${w.table}`;
    const body = (r: string) => `PERFORM pg_notify('${STATUS_CHANNEL}', lb || ' ' || ${r}.project_id) FROM (SELECT ${w.lb(r)} AS lb) AS t WHERE lb IS NOT NULL;`;
    await sql
      .raw(
        `CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF TG_OP = 'DELETE' THEN ${body('OLD')} RETURN OLD; END IF;
          ${body('NEW')} RETURN NEW;
        END $$`,
      )
      .execute(db);
    for (const event of EVENTS) {
      const of = event === 'UPDATE' ? ` OF ${w.columns.join(', ')}` : '';
      const when = event === 'UPDATE' ? ` WHEN (${changed(w.columns)})` : '';
      await sql.raw(`CREATE TRIGGER ${fn}_${event.toLowerCase()} AFTER ${event}${of} ON ${w.table} FOR EACH ROW${when} EXECUTE FUNCTION ${fn}()`).execute(db);
    }
  }
}

export async function dropPostgresStatusTriggers(db: Kysely<unknown>): Promise<void> {
  for (const w of WATCHED) await sql.raw(`DROP FUNCTION IF EXISTS ostia_status_${w.table}() CASCADE`).execute(db);
}

/** SQLite: the TEMP triggers of one connection, calling STATUS_FUNCTION(load balancer, project). */
export function sqliteStatusTriggers(): string[] {
  const statements: string[] = [];
  for (const w of WATCHED) {
    for (const event of EVENTS) {
      const r = rowOf(event);
      const of = event === 'UPDATE' ? ` OF ${w.columns.join(', ')}` : '';
      const when = event === 'UPDATE' ? ` WHEN ${sqliteChanged(w.columns)}` : '';
      statements.push(
        `CREATE TEMP TRIGGER IF NOT EXISTS ostia_status_${w.table}_${event.toLowerCase()} AFTER ${event}${of} ON main.${w.table}${when} ` +
          `BEGIN SELECT ${STATUS_FUNCTION}(${w.lb(r)}, ${r}.project_id); END`,
      );
    }
  }
  return statements;
}

/** The load balancer whose tree holds row `id` of `table` (the same look-up as the triggers'); null for another table or a row gone. */
export async function loadBalancerIdOf(db: Kysely<Database>, table: string, id: string): Promise<string | null> {
  const w = WATCHED.find((x) => x.table === table);
  if (!w) return null;
  const { rows } = await sql<{ lb: string | null }>`SELECT ${sql.raw(w.lb('r'))} AS lb FROM ${sql.table(table)} r WHERE r.id = ${id}`.execute(db);
  return rows[0]?.lb ?? null;
}

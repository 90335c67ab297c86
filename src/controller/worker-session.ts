/**
 * A worker's life as PostgreSQL sees it. Each worker holds a connection of its own for as long as
 * it runs, and on it a session-level advisory lock whose key its worker_session row names; the jobs
 * it claims name that row's owner. When the process dies (SIGKILL, a crash, the OOM killer) the
 * kernel closes its socket, the server ends the session and the lock is free at once: the other
 * workers adopt its jobs without waiting for their lease. A worker that is alive but slow keeps its
 * session, so its jobs stay its own however long a step takes. The lease remains for what the server
 * cannot see at once (a machine that stops answering keeps its session until TCP gives up on it)
 * and for owners without a row (SQLite, workers of an earlier version).
 */
import { randomInt } from 'node:crypto';
import { setTimeout as pause } from 'node:timers/promises';
import { sql, type Expression, type RawBuilder } from 'kysely';
import type { Logger } from 'pino';
import type { Db } from '../db/database.js';
import { preciseTimestamp } from '../domain/time.js';

/** The first key of every worker's lock, in PostgreSQL's two-key advisory space, so other uses of advisory locks never meet ours. */
const LOCK_CLASS = 0x05714a;

/** How long a worker waits before opening its session again after it ended or failed to open. */
const REOPEN_MS = 1_000;

/** True when `owner` (a lease owner) is a worker session whose lock no session holds: that worker is gone. */
export function sessionEnded(owner: Expression<string | null>): RawBuilder<boolean> {
  return sql<boolean>`exists (
    select 1 from worker_session s
    where s.owner = ${owner} and not exists (
      select 1 from pg_locks l
      where l.locktype = 'advisory' and l.granted and l.objsubid = 2
        and l.database = (select oid from pg_database where datname = current_database())
        and l.classid = ${sql.lit(LOCK_CLASS)} and l.objid = s.lock_key))`;
}

/** Forgets the sessions that ended and own no running job any more (their jobs were adopted or finished). */
export async function forgetEndedSessions(db: Db): Promise<void> {
  await db.kysely
    .deleteFrom('worker_session as w')
    .where(sessionEnded(sql.ref('w.owner')))
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('job').select('id').whereRef('lease_owner', '=', 'w.owner').where('state', '=', 'running'))))
    .execute();
}

export class WorkerSession {
  private closing = false;
  private readonly endedBy = new AbortController();
  /** Aborted when the session ends under us (a server restart, an administrator, the network): from then on our jobs may be adopted. */
  readonly ended = this.endedBy.signal;

  private constructor(
    readonly owner: string,
    private readonly db: Db,
    private readonly client: import('pg').Client,
  ) {
    const end = (reason: Error) => {
      if (!this.closing) this.endedBy.abort(reason);
    };
    client.on('error', end);
    client.on('end', () => end(new Error('the connection ended')));
  }

  /** Opens a connection, takes a lock no other session holds, and records it under `owner`. */
  static async open(db: Db, url: string, owner: string): Promise<WorkerSession> {
    const pg = await import('pg');
    const client = new pg.default.Client({ connectionString: url, application_name: 'ostia worker' });
    const session = new WorkerSession(owner, db, client);
    try {
      await client.connect();
      let key: number;
      do key = randomInt(1, 2 ** 31);
      while (!(await client.query<{ held: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS held', [LOCK_CLASS, key])).rows[0]!.held);
      // Only once the lock is held: a row whose lock is free means a dead worker.
      await db.kysely.insertInto('worker_session').values({ owner, lock_key: key, started_at: preciseTimestamp() }).execute();
    } catch (e) {
      await session.close().catch(() => undefined);
      throw e;
    }
    return session;
  }

  /** Removes the row, then the session: no one sees it as dead meanwhile. Our jobs were handed back before. */
  async close(): Promise<void> {
    this.closing = true;
    try {
      if (!this.ended.aborted) await this.db.kysely.deleteFrom('worker_session').where('owner', '=', this.owner).execute();
    } finally {
      await this.client.end().catch(() => undefined);
    }
  }
}

/**
 * Keeps a worker's session open. One that ended is replaced by a session of a new owner name (the
 * worker's id and a count), since the old one's jobs may already be another worker's by then.
 */
export class WorkerSessions {
  private session: WorkerSession | undefined;
  private opening: Promise<WorkerSession | undefined> | undefined;
  private opened = 0;

  constructor(private readonly opts: { db: Db; url: string; id: string; log: Logger; stop: AbortSignal }) {}

  /** The open session, opening one when none is (retrying until it opens); undefined once the worker stops. */
  async current(): Promise<WorkerSession | undefined> {
    if (this.session && !this.session.ended.aborted) return this.session;
    this.opening ??= this.open().finally(() => (this.opening = undefined));
    return this.opening;
  }

  private async open(): Promise<WorkerSession | undefined> {
    const { db, url, id, log, stop } = this.opts;
    const ended = this.session;
    this.session = undefined;
    if (ended) {
      log.warn({ owner: ended.owner, err: ended.ended.reason }, 'the worker lost its database session: its running jobs are interrupted and resumed by whichever worker adopts them');
      await ended.close();
      await pause(REOPEN_MS, undefined, { signal: stop }).catch(() => undefined);
    }
    while (!stop.aborted) {
      this.opened++;
      const owner = this.opened === 1 ? id : `${id}/${this.opened}`;
      try {
        const session = await WorkerSession.open(db, url, owner);
        if (!stop.aborted) return (this.session = session);
        await session.close();
      } catch (err) {
        log.error({ err }, `opening the worker's database session failed; trying again in ${REOPEN_MS} ms`);
        await pause(REOPEN_MS, undefined, { signal: stop }).catch(() => undefined);
      }
    }
    return undefined;
  }

  async close(): Promise<void> {
    await this.opening;
    await this.session?.close();
    this.session = undefined;
  }
}

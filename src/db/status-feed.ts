/**
 * What a process hears of the database's status triggers (status-triggers.ts): for each change,
 * the load balancer whose tree changed and its project, after the change committed. On
 * PostgreSQL every process hears every writer (LISTEN); on SQLite, the writers of its own
 * connection, which for `ostia up` is everyone.
 */
import { PgListener } from './pg-listener.js';
import { STATUS_CHANNEL, STATUS_FUNCTION, sqliteStatusTriggers } from './status-triggers.js';

export interface StatusListener {
  changed(loadBalancerId: string, projectId: string): void;
  /** Changes may have been missed (a lost LISTEN connection, now back): read again what you watch. */
  resync(): void;
}

export interface StatusFeed {
  /** Starts hearing changes (the first call opens what it needs); resolves to the way to stop. */
  watch(listener: StatusListener): Promise<() => void>;
  close(): Promise<void>;
}

class Listeners {
  private readonly all = new Set<StatusListener>();
  add(l: StatusListener): () => void {
    this.all.add(l);
    return () => this.all.delete(l);
  }
  get size(): number {
    return this.all.size;
  }
  changed(lb: string, project: string): void {
    for (const l of this.all) l.changed(lb, project);
  }
  resync(): void {
    for (const l of this.all) l.resync();
  }
  clear(): void {
    this.all.clear();
  }
}

/** The part of a SQLite connection the feed uses (better-sqlite3's API). */
export interface SqliteHandle {
  function(name: string, options: { deterministic: boolean; directOnly: boolean }, fn: (lb: unknown, project: unknown) => null): unknown;
  exec(sql: string): unknown;
}

/**
 * The trigger function runs inside the writing statement, before its transaction commits: the
 * changes are handed on at the next turn of the event loop, when a reader (who shares the one
 * connection and so queues behind the transaction) can only see them committed or rolled back.
 */
export function sqliteStatusFeed(sqlite: SqliteHandle): StatusFeed {
  const listeners = new Listeners();
  let pending = new Set<string>();
  let flush: NodeJS.Immediate | undefined;
  let triggers = false;
  sqlite.function(STATUS_FUNCTION, { deterministic: false, directOnly: false }, (lb, project) => {
    if (listeners.size && typeof lb === 'string' && typeof project === 'string') {
      pending.add(`${lb} ${project}`);
      flush ??= setImmediate(() => {
        flush = undefined;
        const changes = pending;
        pending = new Set();
        for (const c of changes) listeners.changed(...split(c));
      });
    }
    return null;
  });
  return {
    async watch(listener) {
      // The tables exist once the process has migrated, which it does before it serves.
      if (!triggers) for (const statement of sqliteStatusTriggers()) sqlite.exec(statement);
      triggers = true;
      return listeners.add(listener);
    },
    async close() {
      clearImmediate(flush);
      listeners.clear();
    },
  };
}

function split(payload: string): [string, string] {
  const at = payload.indexOf(' ');
  return [payload.slice(0, at), payload.slice(at + 1)];
}

/** One LISTEN connection per process, opened by the first watcher. */
export function postgresStatusFeed(url: string): StatusFeed {
  const listeners = new Listeners();
  let opening: Promise<PgListener> | undefined;
  return {
    async watch(listener) {
      opening ??= PgListener.open(url, STATUS_CHANNEL, {
        notified: (payload) => {
          if (payload.includes(' ')) listeners.changed(...split(payload));
        },
        resumed: () => listeners.resync(),
      });
      try {
        await opening;
      } catch (e) {
        opening = undefined;
        throw e;
      }
      return listeners.add(listener);
    },
    async close() {
      listeners.clear();
      await (await opening?.catch(() => undefined))?.close();
    },
  };
}

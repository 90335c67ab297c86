/**
 * Wakes idle workers when jobs are enqueued, so no worker sleep-polls the queue. In one
 * process an EventEmitter carries the wake-up; across processes on PostgreSQL, LISTEN/NOTIFY.
 * Workers still re-scan on a timer to pick up the jobs of dead peers (on PostgreSQL every
 * worker.adoptCheckSeconds, waking only their own waiters: every worker looks).
 */
import { EventEmitter } from 'node:events';
import { openPostgresPool, type ClosablePool } from '../db/postgres-pool.js';

export interface JobSignal {
  /** Called after the enqueuing transaction commits. */
  notify(): void;
  /** Wakes this process's waiters only. */
  wake(): void;
  /** Resolves on the next notify, or after `ms`, or when `signal` aborts. */
  wait(ms: number, signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

export const CHANNEL = 'ostia_jobs';

export class LocalJobSignal implements JobSignal {
  protected readonly emitter = new EventEmitter();
  constructor() {
    this.emitter.setMaxListeners(0);
  }
  notify(): void {
    this.wake();
  }
  wake(): void {
    this.emitter.emit('job');
  }
  wait(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.emitter.off('job', done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.emitter.once('job', done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }
  async close(): Promise<void> {
    this.emitter.removeAllListeners();
  }
}

/** How long a lost LISTEN connection waits before it is opened again. */
const RELISTEN_MS = 1_000;

export class PostgresJobSignal extends LocalJobSignal {
  private listener: import('pg').Client | undefined;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;

  private constructor(
    private readonly url: string,
    private readonly sender: ClosablePool,
  ) {
    super();
  }

  static async connect(url: string): Promise<PostgresJobSignal> {
    const s = new PostgresJobSignal(url, await openPostgresPool(url, 1));
    try {
      await s.listen();
    } catch (e) {
      await s.close();
      throw e;
    }
    return s;
  }

  /**
   * A LISTEN connection the server drops (a restart, a failover) is opened again; until then
   * workers fall back on their re-scan timer, and they re-scan once it is back, since
   * notifications sent meanwhile are lost.
   */
  private async listen(): Promise<void> {
    const pg = await import('pg');
    const listener = new pg.default.Client({ connectionString: this.url });
    listener.on('error', () => this.lost(listener));
    listener.on('end', () => this.lost(listener));
    listener.on('notification', () => this.emitter.emit('job'));
    this.listener = listener;
    try {
      await listener.connect();
      await listener.query(`LISTEN ${CHANNEL}`);
    } catch (e) {
      this.lost(listener);
      throw e;
    }
  }

  private lost(listener: import('pg').Client): void {
    if (this.listener !== listener) return;
    this.listener = undefined;
    listener.end().catch(() => undefined);
    if (this.closed) return;
    this.retry = setTimeout(() => this.listen().then(() => this.emitter.emit('job'), () => undefined), RELISTEN_MS);
  }

  override notify(): void {
    super.notify();
    this.sender.pool.query(`NOTIFY ${CHANNEL}`).catch(() => undefined);
  }

  override async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    await super.close();
    const listener = this.listener;
    this.listener = undefined;
    await Promise.all([listener?.end().catch(() => undefined), this.sender.end()]);
  }
}

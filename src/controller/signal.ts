/**
 * Wakes idle workers when jobs are enqueued, so no worker sleep-polls the queue. In one
 * process an EventEmitter carries the wake-up; across processes on PostgreSQL, LISTEN/NOTIFY.
 * Workers still re-scan on a timer to pick up the jobs of dead peers (on PostgreSQL every
 * worker.adoptCheckSeconds, waking only their own waiters: every worker looks).
 */
import { EventEmitter } from 'node:events';
import { openPostgresPool, type ClosablePool } from '../db/postgres-pool.js';
import { PgListener } from '../db/pg-listener.js';

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

export class PostgresJobSignal extends LocalJobSignal {
  private listener: PgListener | undefined;

  private constructor(private readonly sender: ClosablePool) {
    super();
  }

  /**
   * A LISTEN connection the server drops is opened again (PgListener); until then workers fall
   * back on their re-scan timer, and they re-scan once it is back.
   */
  static async connect(url: string): Promise<PostgresJobSignal> {
    const s = new PostgresJobSignal(await openPostgresPool(url, 1));
    try {
      const wake = () => s.emitter.emit('job');
      s.listener = await PgListener.open(url, CHANNEL, { notified: wake, resumed: wake });
    } catch (e) {
      await s.close();
      throw e;
    }
    return s;
  }

  override notify(): void {
    super.notify();
    this.sender.pool.query(`NOTIFY ${CHANNEL}`).catch(() => undefined);
  }

  override async close(): Promise<void> {
    await super.close();
    await Promise.all([this.listener?.close(), this.sender.end()]);
  }
}

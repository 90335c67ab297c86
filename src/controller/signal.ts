/**
 * Wakes idle workers when jobs are enqueued, so no worker sleep-polls the queue. In one
 * process an EventEmitter carries the wake-up; across processes on PostgreSQL, LISTEN/NOTIFY.
 * Workers still re-scan on a long timer to pick up expired leases of dead peers.
 */
import { EventEmitter } from 'node:events';

export interface JobSignal {
  /** Called after the enqueuing transaction commits. */
  notify(): void;
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

/** Minimal slice of pg's Client that we call, so this file does not depend on pg's types. */
interface PgListener {
  connect(): Promise<unknown>;
  query(sql: string): Promise<unknown>;
  on(event: 'notification', cb: () => void): unknown;
  end(): Promise<void>;
}

export class PostgresJobSignal extends LocalJobSignal {
  private constructor(
    private readonly send: () => Promise<unknown>,
    private readonly disconnect: () => Promise<unknown>,
  ) {
    super();
  }

  static async connect(url: string): Promise<PostgresJobSignal> {
    const pg = await import('pg');
    const listener: PgListener = new pg.default.Client({ connectionString: url });
    await listener.connect();
    const sender = new pg.default.Pool({ connectionString: url, max: 1 });
    const s = new PostgresJobSignal(
      () => sender.query(`NOTIFY ${CHANNEL}`),
      () => Promise.all([listener.end(), sender.end()]),
    );
    listener.on('notification', () => s.emitter.emit('job'));
    await listener.query(`LISTEN ${CHANNEL}`);
    return s;
  }

  override notify(): void {
    super.notify();
    this.send().catch(() => undefined);
  }

  override async close(): Promise<void> {
    await super.close();
    await this.disconnect();
  }
}

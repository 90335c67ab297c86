/**
 * One PostgreSQL connection that LISTENs on a channel and is opened again when the server drops
 * it (a restart, a failover). Notifications sent while it was away are lost, so `resumed` is
 * called once it listens again: the owner re-reads what it may have missed.
 */
import type { Client } from 'pg';

/** How long a lost LISTEN connection waits before it is opened again. */
const RELISTEN_MS = 1_000;

export interface ListenerHandlers {
  notified(payload: string): void;
  resumed(): void;
}

export class PgListener {
  private client: Client | undefined;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;

  private constructor(
    private readonly url: string,
    private readonly channel: string,
    private readonly handlers: ListenerHandlers,
  ) {}

  /** Resolves once listening; a first connection that fails rejects (and retries nothing). */
  static async open(url: string, channel: string, handlers: ListenerHandlers): Promise<PgListener> {
    const l = new PgListener(url, channel, handlers);
    try {
      await l.listen();
    } catch (e) {
      await l.close();
      throw e;
    }
    return l;
  }

  private async listen(): Promise<void> {
    const pg = await import('pg');
    const client = new pg.default.Client({ connectionString: this.url });
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    client.on('notification', (n) => this.handlers.notified(n.payload ?? ''));
    this.client = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${this.channel}`);
    } catch (e) {
      this.lost(client);
      throw e;
    }
  }

  private lost(client: Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => undefined);
    if (this.closed) return;
    this.retry = setTimeout(() => this.listen().then(() => this.handlers.resumed(), () => undefined), RELISTEN_MS);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}

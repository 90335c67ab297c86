/**
 * OvsdbClient: one logical session to an OVSDB server over tcp:, ssl: or unix:, that survives
 * the server going away. Requests made while disconnected fail at once (a transaction is not
 * safely repeatable without the caller's knowledge); monitors are re-issued after reconnecting
 * and report what changed in between, so callers can reconcile.
 */
import { EventEmitter } from 'node:events';
import { DisconnectedError, JsonRpcConnection, openStream } from './json-rpc.js';
import { Monitor, type MonitorMethod, type MonitorRequests } from './monitor.js';
import { decodeResults, encodeOperation, type Operation, type OperationResult } from './operations.js';
import { backoffDelay, resolveOptions, type OvsdbClientOptions } from './options.js';
import type { DatabaseSchema } from './schema.js';

export interface ReconnectReport {
  remote: string;
  /** Failed attempts before this one succeeded. */
  attempts: number;
  disconnectedAt: Date;
  reconnectedAt: Date;
}

export class OvsdbClosedError extends Error {}

/**
 * Events: 'disconnected' (Error | undefined), 'reconnected' (ReconnectReport) — after every
 * monitor is re-established —, 'reconnect-failed' (Error, attempt), 'server-echo' (we answered
 * the server's inactivity probe). 'error' is never emitted.
 */
export class OvsdbClient extends EventEmitter {
  private conn: JsonRpcConnection | undefined;
  private readonly schemas = new Map<string, DatabaseSchema>();
  private readonly monitors = new Map<string, Monitor>();
  private nextMonitor = 1;
  private closed = false;
  private remoteIndex = 0;
  private wakeUp: (() => void) | undefined;
  private readonly onAbort = () => this.close();

  private constructor(
    readonly remotes: string[],
    readonly options: OvsdbClientOptions,
  ) {
    super();
  }

  /**
   * Tries the remotes in turn with back-off until one answers or connectTimeoutMs passes.
   * `remote` is one or several of tcp:HOST:PORT, ssl:HOST:PORT, unix:PATH (the upstream
   * ovn_nb_connection list).
   */
  static async connect(remote: string | string[], options: Partial<OvsdbClientOptions> = {}): Promise<OvsdbClient> {
    const remotes = Array.isArray(remote) ? remote : remote.split(',').map((r) => r.trim()).filter(Boolean);
    if (remotes.length === 0) throw new TypeError('no OVSDB remote given');
    const client = new OvsdbClient(remotes, resolveOptions(options));
    client.options.signal?.addEventListener('abort', client.onAbort, { once: true });
    if (client.options.signal?.aborted) throw new OvsdbClosedError('aborted before connecting');
    const deadline = Date.now() + client.options.connectTimeoutMs;
    let lastError: Error | undefined;
    for (let attempt = 0; !client.closed; attempt++) {
      try {
        await client.open(Math.max(1, deadline - Date.now()));
        return client;
      } catch (e) {
        lastError = e as Error;
      }
      const wait = Math.min(backoffDelay(client.options, attempt), deadline - Date.now());
      if (wait <= 0) break;
      await client.sleep(wait);
    }
    client.close();
    throw new DisconnectedError(`could not connect to ${remotes.join(',')}: ${lastError?.message ?? 'closed'}`);
  }

  get connected(): boolean {
    return this.conn !== undefined && !this.conn.isClosed;
  }

  async getSchema(db: string): Promise<DatabaseSchema> {
    const cached = this.schemas.get(db);
    if (cached) return cached;
    const schema = (await this.call('get_schema', [db])) as DatabaseSchema;
    this.schemas.set(db, schema);
    return schema;
  }

  async listDbs(): Promise<string[]> {
    return (await this.call('list_dbs', [])) as string[];
  }

  async echo(payload: unknown[] = ['ostia']): Promise<unknown[]> {
    return (await this.call('echo', payload)) as unknown[];
  }

  /** All operations commit together or not at all; a refused one throws OvsdbOperationError. */
  async transact(db: string, ops: Operation[]): Promise<OperationResult[]> {
    const schema = await this.getSchema(db);
    const raw = await this.call('transact', [db, ...ops.map(encodeOperation)]);
    return decodeResults(schema, ops, raw);
  }

  /** monitor_cond (update2 notifications) by default; 'monitor' for servers without it. */
  async monitor(db: string, requests: MonitorRequests, method: MonitorMethod = 'monitor_cond'): Promise<Monitor> {
    const schema = await this.getSchema(db);
    const m = new Monitor(db, `ostia-${this.nextMonitor++}`, method, requests, schema);
    const result = await this.call(method, m.requestParams());
    m.applyInitial(result);
    this.monitors.set(m.id, m);
    return m;
  }

  async cancelMonitor(m: Monitor): Promise<void> {
    this.monitors.delete(m.id);
    if (this.connected) await this.call('monitor_cancel', [m.id]);
  }

  /** Closes the connection and stops reconnecting; pending requests fail. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.options.signal?.removeEventListener('abort', this.onAbort);
    this.wakeUp?.();
    this.conn?.close();
  }

  private call(method: string, params: unknown[]): Promise<unknown> {
    if (this.closed) return Promise.reject(new OvsdbClosedError(`${method}: client closed`));
    if (!this.conn) return Promise.reject(new DisconnectedError(`${method}: not connected`));
    return this.conn.request(method, params);
  }

  private async open(timeoutMs: number): Promise<string> {
    const remote = this.remotes[this.remoteIndex % this.remotes.length] as string;
    this.remoteIndex++;
    const stream = await openStream(remote, this.options.tls, timeoutMs);
    if (this.closed) {
      stream.destroy();
      throw new OvsdbClosedError('closed while connecting');
    }
    const conn = new JsonRpcConnection(stream, { probeIntervalMs: this.options.probeIntervalMs });
    conn.on('notification', (method: string, params: unknown[]) => this.onNotification(method, params));
    conn.on('server-echo', () => this.emit('server-echo'));
    conn.once('close', (err: Error | undefined) => this.onClose(conn, err));
    this.conn = conn;
    this.options.logger?.info({ remote }, 'ovsdb connected');
    return remote;
  }

  private onNotification(method: string, params: unknown[]): void {
    if (method !== 'update' && method !== 'update2') return;
    const m = this.monitors.get(params[0] as string);
    try {
      m?.applyNotification(params[1]);
    } catch (e) {
      // An update we cannot apply leaves the cache wrong: reconnecting re-reads it whole.
      this.options.logger?.error({ err: (e as Error).message, monitor: m?.id }, 'ovsdb update not applicable; resyncing');
      this.conn?.close();
    }
  }

  private onClose(conn: JsonRpcConnection, err: Error | undefined): void {
    if (this.conn !== conn) return;
    this.conn = undefined;
    if (this.closed) return;
    this.options.logger?.warn({ err: err?.message }, 'ovsdb connection lost; reconnecting');
    this.emit('disconnected', err);
    void this.reconnect(new Date());
  }

  private async reconnect(disconnectedAt: Date): Promise<void> {
    for (let attempt = 0; !this.closed; attempt++) {
      await this.sleep(backoffDelay(this.options, attempt));
      if (this.closed) return;
      let opened = false;
      try {
        const remote = await this.open(this.options.connectTimeoutMs);
        opened = true;
        // The server may have been upgraded while we were away.
        this.schemas.clear();
        for (const m of this.monitors.values()) {
          const schema = await this.getSchema(m.db);
          m.applyResync(await this.call(m.method, m.requestParams()), schema);
        }
        const report: ReconnectReport = { remote, attempts: attempt, disconnectedAt, reconnectedAt: new Date() };
        this.options.logger?.info({ remote, attempts: attempt }, 'ovsdb reconnected');
        this.emit('reconnected', report);
        return;
      } catch (e) {
        this.emit('reconnect-failed', e, attempt);
        // A connection that opened but failed while re-monitoring reconnects through its own
        // close (onClose starts the next round), so this round ends here.
        if (opened) {
          this.conn?.close();
          return;
        }
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.wakeUp = done;
    });
  }
}

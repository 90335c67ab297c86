/**
 * The heartbeat receiver as the main thread sees it: the socket and every judgement of a
 * datagram live on a worker thread (receiver-thread.ts); here arrive only batches of accepted
 * reports, at most one being written at a time, and snapshots of the counters. A flood of
 * refused datagrams shows in the counters (exported by metrics.ts) and in a warning at most
 * once a minute, never as lost genuine reports; reports that were lost (queue overflow,
 * kernel drops, failed writes) make `healthySince` false, which holds failovers back.
 */
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { noRefusals } from './judge.js';
import type { AcceptedHeartbeat, FromThread, ThreadCounters, ThreadOptions, ToThread } from './receiver-thread.js';

export type { AcceptedHeartbeat } from './receiver-thread.js';

export interface ReceiverCounters extends ThreadCounters {
  writeFailures: number;
}

export interface ReceiverOptions extends Omit<ThreadOptions, 'secret'> {
  /** `amphora.heartbeatSecret`: every amphora's key is derived from it. */
  heartbeatSecret: string;
  /** Writes a batch; resolves with the amphorae that are not live (their reports were refused as unknown). */
  write(batch: AcceptedHeartbeat[]): Promise<{ unknown: readonly string[] }>;
  log: Logger;
  now?: () => number;
}

/** Refusals within FLOOD_WINDOW_MS at which a flood is logged (10/s): genuine senders are refused one now and then at most. */
const FLOOD_REFUSALS = 20;
const FLOOD_WINDOW_MS = 2000;
const FLOOD_LOG_EVERY_MS = 60_000;

export class HeartbeatReceiver {
  private thread: Worker | undefined;
  private fromThread: ThreadCounters | undefined;
  private unknownAmphora = 0;
  private writeFailures = 0;
  private writing: Promise<void> = Promise.resolve();
  private closed: Promise<void> | undefined;
  /** Last time a report was lost: the stale detector holds back after it. */
  private lastTrouble = -Infinity;
  private floodWindow = { from: -Infinity, refused: 0 };
  private lastFloodLog = -Infinity;
  private readonly now: () => number;

  constructor(private readonly opts: ReceiverOptions) {
    this.now = opts.now ?? Date.now;
  }

  async start(): Promise<{ address: string; port: number }> {
    const { listen, heartbeatSecret, maxSkewMs, flushMs, maxPending } = this.opts;
    const workerData: ThreadOptions = { listen, secret: heartbeatSecret, maxSkewMs, flushMs, maxPending };
    const thread = new Worker(new URL('./receiver-thread.js', import.meta.url), { workerData });
    this.thread = thread;
    const exited = new Promise<void>((resolve) => thread.once('exit', () => resolve()));
    const bound = await new Promise<{ address: string; port: number }>((resolve, reject) => {
      thread.once('error', reject);
      thread.on('message', (message: FromThread) => {
        if (message.kind === 'listening') resolve(message);
        else if (message.kind === 'failed') reject(Object.assign(new Error(message.message), { code: message.code }));
        else this.receive(message);
      });
    }).catch(async (e: unknown) => {
      this.thread = undefined;
      await exited;
      throw e;
    });
    thread.on('error', (err) => {
      // Every amphora now looks silent: failing them over would only make it worse.
      this.lastTrouble = Infinity;
      this.opts.log.error({ err }, 'heartbeat receiver thread failed: no heartbeat is received and no amphora is failed over');
    });
    this.closed = exited.then(() => this.writing);
    return bound;
  }

  get counters(): ReceiverCounters {
    const thread = this.fromThread ?? { received: 0, accepted: 0, refused: noRefusals(), overflowDropped: 0, socketDropped: 0 };
    return { ...thread, refused: { ...thread.refused, unknownAmphora: thread.refused.unknownAmphora + this.unknownAmphora }, writeFailures: this.writeFailures };
  }

  /** No report lost within the last `ms`: silence means the amphora, not us. */
  healthySince(ms: number): boolean {
    return this.now() - this.lastTrouble > ms;
  }

  /** Stops receiving and writes what was pending. */
  async close(): Promise<void> {
    this.thread?.postMessage({ kind: 'close' } satisfies ToThread);
    await this.closed;
  }

  private receive(message: FromThread): void {
    if (message.kind === 'socket-error') {
      this.opts.log.error({ message: message.message }, 'heartbeat socket error');
      return;
    }
    if (message.kind !== 'batch') return;
    const before = this.fromThread;
    this.fromThread = message.counters;
    if (before && (message.counters.overflowDropped > before.overflowDropped || message.counters.socketDropped > before.socketDropped)) this.lastTrouble = this.now();
    this.watchForFlood(message.counters);
    if (message.batch.length) this.writing = this.writing.then(() => this.write(message.batch, !message.last));
  }

  private async write(batch: AcceptedHeartbeat[], ack: boolean): Promise<void> {
    try {
      this.unknownAmphora += (await this.opts.write(batch)).unknown.length;
    } catch (err) {
      this.writeFailures++;
      this.lastTrouble = this.now();
      this.opts.log.error({ err }, 'writing heartbeats failed; their reports are lost');
    }
    if (ack) this.thread?.postMessage({ kind: 'written' } satisfies ToThread);
  }

  private watchForFlood(counters: ThreadCounters): void {
    const now = this.now();
    const refused = Object.values(counters.refused).reduce((a, b) => a + b, 0);
    if (now - this.floodWindow.from < FLOOD_WINDOW_MS) return;
    const inWindow = refused - this.floodWindow.refused;
    if (Number.isFinite(this.floodWindow.from) && inWindow >= FLOOD_REFUSALS && now - this.lastFloodLog >= FLOOD_LOG_EVERY_MS) {
      this.lastFloodLog = now;
      this.opts.log.warn(
        { refusedPerSecond: Math.round((inWindow * 1000) / (now - this.floodWindow.from)), refused: counters.refused, accepted: counters.accepted },
        'heartbeat datagrams are being refused in bulk: a flood of forged or replayed datagrams, or a misconfigured sender; genuine heartbeats are still accepted',
      );
    }
    this.floodWindow = { from: now, refused };
  }
}

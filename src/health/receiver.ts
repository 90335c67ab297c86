/**
 * The heartbeat socket. Each datagram is verified with its amphora's own key, then dropped
 * if it is a replay (sequence not above the last accepted) or stale (sent too long ago, or
 * from the future). Accepted reports wait in a bounded queue, latest per amphora, for the
 * next batched database write: the socket loop never waits on the database, and when the
 * database falls behind the oldest reports are dropped and counted.
 */
import { createSocket, type Socket } from 'node:dgram';
import { parseHostPort } from '../domain/net.js';
import type { Logger } from 'pino';
import type { Heartbeat } from '../domain/amphora-config.js';
import { decodeHeartbeat } from '../amphora/heartbeat.js';
import { addDelta, type StatsDelta } from './stats.js';

export interface KeyEntry {
  /** Hex HMAC key. */
  key: string;
  /** Highest sequence number accepted so far; -1 before the first. */
  lastSeq: number;
}

/** One amphora's reports since the last write: the newest, and the sum of their stats deltas. */
export interface AcceptedHeartbeat {
  heartbeat: Heartbeat;
  /** Controller clock, epoch ms: liveness is judged on it, never on the sender's. */
  receivedAt: number;
  stats: Map<string, StatsDelta>;
}

export interface ReceiverCounters {
  received: number;
  accepted: number;
  /** Undecodable, or the signature does not verify. */
  rejected: number;
  unknownAmphora: number;
  replayed: number;
  stale: number;
  /** Reports dropped because the queue was full (the database is too slow). */
  overflowDropped: number;
  writeFailures: number;
}

export interface ReceiverOptions {
  /** `host:port`, `[v6]:port`; port 0 picks a free one. */
  listen: string;
  /** Reports sent more than this far from our clock are stale. */
  maxSkewMs: number;
  flushMs: number;
  /** Amphorae with reports waiting to be written, at most. */
  maxPending: number;
  /** Keys and last sequence numbers of these amphorae, as stored (absent = unknown). */
  loadKeys(ids: readonly string[]): Promise<Map<string, KeyEntry>>;
  write(batch: AcceptedHeartbeat[]): Promise<void>;
  log: Logger;
  now?: () => number;
}

/** Datagrams of amphorae whose key is being looked up, at most. */
const MAX_AWAITING_KEY = 1024;
/** Keys of amphorae silent this long leave the cache (they were failed over or deleted long ago). */
const KEY_IDLE_MS = 10 * 60_000;

export class HeartbeatReceiver {
  readonly counters: ReceiverCounters = { received: 0, accepted: 0, rejected: 0, unknownAmphora: 0, replayed: 0, stale: 0, overflowDropped: 0, writeFailures: 0 };
  private socket: Socket | undefined;
  private readonly keys = new Map<string, KeyEntry & { seenAt: number }>();
  private lastPrune = 0;
  /** Ids looked up and not found, until when: garbage ids must not cost a query each. */
  private readonly unknownUntil = new Map<string, number>();
  private readonly awaitingKey: Array<{ id: string; datagram: Buffer }> = [];
  private lookup: Promise<void> | undefined;
  private pending = new Map<string, AcceptedHeartbeat>();
  private flushing: Promise<void> = Promise.resolve();
  private writing = false;
  private timer: NodeJS.Timeout | undefined;
  /** Last time a report was dropped or a write failed: the stale detector holds back after it. */
  private lastTrouble = -Infinity;
  private readonly now: () => number;

  constructor(private readonly opts: ReceiverOptions) {
    this.now = opts.now ?? Date.now;
  }

  async start(): Promise<{ address: string; port: number }> {
    const { host, port } = parseHostPort(this.opts.listen, 'amphora.healthListen');
    const socket = createSocket({ type: host.includes(':') ? 'udp6' : 'udp4', recvBufferSize: 4 * 1024 * 1024 });
    socket.on('message', (datagram) => this.receive(datagram));
    socket.on('error', (err) => this.opts.log.error({ err }, 'heartbeat socket error'));
    await new Promise<void>((resolve, reject) => {
      const refused = (err: Error) => {
        socket.close();
        reject(err);
      };
      socket.once('error', refused);
      socket.bind(port, host, () => {
        socket.off('error', refused);
        resolve();
      });
    });
    this.socket = socket;
    this.timer = setInterval(() => this.flush(), this.opts.flushMs);
    const bound = socket.address();
    return { address: bound.address, port: bound.port };
  }

  /** No report dropped and no write failed within the last `ms`: silence means the amphora, not us. */
  healthySince(ms: number): boolean {
    return this.now() - this.lastTrouble > ms;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    const socket = this.socket;
    this.socket = undefined;
    if (socket) await new Promise<void>((resolve) => socket.close(() => resolve()));
    await this.lookup;
    await this.flushing;
    await this.flush();
  }

  /** Writes what is queued; one write at a time, so a slow database only makes batches bigger. */
  flush(): Promise<void> {
    if (!this.writing) this.flushing = this.writeQueued();
    return this.flushing;
  }

  private async writeQueued(): Promise<void> {
    this.writing = true;
    try {
      this.pruneKeys();
      if (!this.pending.size) return;
      const batch = [...this.pending.values()];
      this.pending = new Map();
      await this.opts.write(batch);
    } catch (err) {
      this.counters.writeFailures++;
      this.lastTrouble = this.now();
      this.opts.log.error({ err }, 'writing heartbeats failed; their reports are lost');
    } finally {
      this.writing = false;
    }
  }

  private pruneKeys(): void {
    const now = this.now();
    if (now - this.lastPrune < KEY_IDLE_MS) return;
    this.lastPrune = now;
    for (const [id, entry] of this.keys) if (now - entry.seenAt > KEY_IDLE_MS) this.keys.delete(id);
  }

  private receive(datagram: Buffer): void {
    this.counters.received++;
    this.verify(datagram, true);
  }

  private verify(datagram: Buffer, mayLookUp: boolean): void {
    let missing: string | undefined;
    const heartbeat = decodeHeartbeat(datagram, (id) => {
      const entry = this.keys.get(id);
      if (!entry) missing = id;
      return entry?.key;
    });
    if (heartbeat) this.accept(heartbeat);
    else if (missing === undefined) this.counters.rejected++;
    else if (mayLookUp) this.awaitKey(missing, datagram);
    else this.counters.unknownAmphora++;
  }

  private accept(heartbeat: Heartbeat): void {
    const entry = this.keys.get(heartbeat.amphoraId)!;
    const now = this.now();
    if (Math.abs(now - heartbeat.sentAt) > this.opts.maxSkewMs) {
      this.counters.stale++;
      return;
    }
    if (heartbeat.seq <= entry.lastSeq) {
      this.counters.replayed++;
      return;
    }
    entry.lastSeq = heartbeat.seq;
    entry.seenAt = now;
    this.counters.accepted++;
    this.enqueue(heartbeat, now);
  }

  private enqueue(heartbeat: Heartbeat, receivedAt: number): void {
    const queued = this.pending.get(heartbeat.amphoraId);
    if (!queued && this.pending.size >= this.opts.maxPending) {
      const oldest = this.pending.keys().next().value!;
      this.pending.delete(oldest);
      this.counters.overflowDropped++;
      this.lastTrouble = receivedAt;
    }
    const stats = queued?.stats ?? new Map<string, StatsDelta>();
    for (const [listenerId, report] of Object.entries(heartbeat.listeners)) stats.set(listenerId, addDelta(stats.get(listenerId), report.stats));
    this.pending.set(heartbeat.amphoraId, { heartbeat, receivedAt, stats });
  }

  /** First report of an amphora this process has not seen: fetch its key, then verify the datagram. */
  private awaitKey(id: string, datagram: Buffer): void {
    const until = this.unknownUntil.get(id);
    if ((until !== undefined && until > this.now()) || this.awaitingKey.length >= MAX_AWAITING_KEY) {
      this.counters.unknownAmphora++;
      return;
    }
    this.awaitingKey.push({ id, datagram });
    this.lookup ??= this.lookUpWaitingKeys();
  }

  private async lookUpWaitingKeys(): Promise<void> {
    while (this.awaitingKey.length) {
      const waiting = this.awaitingKey.splice(0);
      const ids = [...new Set(waiting.map((w) => w.id))];
      let found = new Map<string, KeyEntry>();
      try {
        found = await this.opts.loadKeys(ids);
      } catch (err) {
        this.opts.log.error({ err }, 'loading heartbeat keys failed');
      }
      const now = this.now();
      for (const [id, until] of this.unknownUntil) if (until <= now) this.unknownUntil.delete(id);
      for (const id of ids) {
        const entry = found.get(id);
        if (entry) this.keys.set(id, { ...entry, seenAt: now });
        else this.unknownUntil.set(id, now + this.opts.maxSkewMs);
      }
      for (const { datagram } of waiting) this.verify(datagram, false);
    }
    this.lookup = undefined;
  }
}

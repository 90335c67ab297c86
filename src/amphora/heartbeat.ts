/**
 * Heartbeats: every interval the amphora sends one UDP datagram to the next health manager
 * in its list (round robin), saying which config version it runs and what HAProxy reports.
 *
 * Wire format (Octavia's v3 framing): zlib-deflated JSON `Heartbeat`, followed by the
 * HMAC-SHA256 of the compressed bytes as 64 hex characters, keyed with the amphora's own key.
 * Authenticated, not encrypted. Unlike Octavia, `seq` (strictly increasing, persisted across
 * agent restarts) and `sentAt` let the receiver drop replays and stale messages.
 *
 * Listener counters are deltas since the previous heartbeat (except the current connection
 * count), so the receiver can add them up; the last absolute values are persisted with `seq`
 * so an agent restart does not count twice. A counter that went down means HAProxy started
 * afresh: its current value is the delta.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { existsSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { deflateSync, inflateSync } from 'node:zlib';
import { Heartbeat } from '../domain/amphora-config.js';
import { writeFileAtomically } from './atomic-file.js';
import { parseBackendName, parseFrontendName, parseServerName } from './haproxy/names.js';
import type { StatRow } from './haproxy/runtime.js';
import { conforms } from './typed-check.js';

const MAC_HEX_LENGTH = 64;
/** A heartbeat of a very large amphora inflates to well under this; anything bigger is refused unread. */
const MAX_INFLATED_BYTES = 4 * 1024 * 1024;

export type ListenerCounters = Heartbeat['listeners'][string]['stats'];

// ---------------------------------------------------------------------------------------
// Wire format

export function encodeHeartbeat(heartbeat: Heartbeat, key: string): Buffer {
  // Level 1: every amphora sends one a second; level 9 cost ~4x the CPU for a few bytes less.
  const compressed = deflateSync(Buffer.from(JSON.stringify(heartbeat), 'utf8'), { level: 1 });
  return Buffer.concat([compressed, Buffer.from(mac(compressed, key).toString('hex'), 'ascii')]);
}

/**
 * The heartbeat in `datagram` if it is well-formed and signed with the key `keyLookup` gives
 * for the amphora it names; null otherwise (unknown amphora, bad signature, bad shape). The
 * amphora id is read before the signature is checked, since the key depends on it.
 */
export function decodeHeartbeat(datagram: Buffer, keyLookup: (amphoraId: string) => string | null | undefined): Heartbeat | null {
  if (datagram.length <= MAC_HEX_LENGTH) return null;
  const compressed = datagram.subarray(0, datagram.length - MAC_HEX_LENGTH);
  const macHex = datagram.subarray(datagram.length - MAC_HEX_LENGTH).toString('ascii');
  if (!/^[0-9a-f]{64}$/.test(macHex)) return null;
  let message: unknown;
  try {
    message = JSON.parse(inflateSync(compressed, { maxOutputLength: MAX_INFLATED_BYTES }).toString('utf8'));
  } catch {
    return null;
  }
  const amphoraId = (message as { amphoraId?: unknown } | null)?.amphoraId;
  if (typeof amphoraId !== 'string') return null;
  const key = keyLookup(amphoraId);
  if (!key) return null;
  if (!timingSafeEqual(mac(compressed, key), Buffer.from(macHex, 'hex'))) return null;
  return conforms(Heartbeat, message) ? message : null;
}

function mac(data: Buffer, key: string): Buffer {
  return createHmac('sha256', key).update(data).digest();
}

// ---------------------------------------------------------------------------------------
// What HAProxy reports, by API object id

export interface StatusSnapshot {
  listeners: Record<string, { status: string; stats: ListenerCounters }>;
  /** Keyed by backend name, `<pool id>:<listener id>`, as Octavia does. */
  pools: Heartbeat['pools'];
}

/** Maps `show stat` rows of the proxies the renderer named to listener, pool and member ids; counters are absolute. */
export function snapshotFromStats(rows: readonly StatRow[]): StatusSnapshot {
  const snapshot: StatusSnapshot = { listeners: {}, pools: {} };
  for (const row of rows) {
    if (row.type === 'frontend') {
      const listenerId = parseFrontendName(row.pxname);
      if (listenerId)
        snapshot.listeners[listenerId] = {
          status: row.status,
          stats: { bytesIn: row.bin, bytesOut: row.bout, activeConnections: row.scur, totalConnections: row.stot, requestErrors: row.ereq },
        };
    } else if (parseBackendName(row.pxname)) {
      const pool = (snapshot.pools[row.pxname] ??= { status: 'DOWN', members: {} });
      if (row.type === 'backend') pool.status = row.status.startsWith('UP') ? 'UP' : 'DOWN';
      const memberId = row.type === 'server' ? parseServerName(row.svname) : null;
      if (memberId) pool.members[memberId] = memberStatus(row);
    }
  }
  return snapshot;
}

/**
 * UP, DOWN, DRAIN, MAINT or `no check`. HAProxy's transitional `UP 1/3` / `DOWN 1/2` count as
 * what they still are; an UP member with weight 0 takes no new traffic: DRAIN, as in Octavia.
 */
export function memberStatus(row: Pick<StatRow, 'status' | 'weight'>): string {
  const status = row.status;
  if (status.startsWith('MAINT')) return 'MAINT';
  if (status.startsWith('DRAIN') || status === 'NOLB') return 'DRAIN';
  if (status.startsWith('DOWN')) return 'DOWN';
  if (status.startsWith('UP') || status === 'no check') {
    if (row.weight === 0) return 'DRAIN';
    return status === 'no check' ? status : 'UP';
  }
  return status;
}

/** Per listener: current minus previous, or current where there is no previous or it went down. */
export function counterDeltas(current: Record<string, ListenerCounters>, previous: Record<string, ListenerCounters>): Record<string, ListenerCounters> {
  const out: Record<string, ListenerCounters> = {};
  for (const [id, now] of Object.entries(current)) {
    const before = previous[id];
    const delta = (field: Exclude<keyof ListenerCounters, 'activeConnections'>): number =>
      before && now[field] >= before[field] ? now[field] - before[field] : now[field];
    out[id] = {
      bytesIn: delta('bytesIn'),
      bytesOut: delta('bytesOut'),
      activeConnections: now.activeConnections,
      totalConnections: delta('totalConnections'),
      requestErrors: delta('requestErrors'),
    };
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// The sender

export interface HeartbeatSenderOptions {
  amphoraId: string;
  key: string;
  /** `host:port` (IPv6 as `[addr]:port`). */
  targets: readonly string[];
  intervalMs: number;
  /** Where `seq` and the last absolute counters survive agent restarts. */
  stateFile: string;
  /** HAProxy's `show stat`, or null when it is not running (the heartbeat then reports no listeners). */
  readStats(): Promise<StatRow[] | null>;
  configVersion(): number;
  log: Pick<Console, 'warn'>;
}

interface SenderState {
  seq: number;
  counters: Record<string, ListenerCounters>;
}

interface Target {
  host: string;
  port: number;
  family: 'udp4' | 'udp6';
}

export function parseTarget(text: string): Target {
  const found = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  const host = found?.[1] ?? found?.[2];
  const port = Number(found?.[3]);
  if (!host || !(port >= 1 && port <= 65535)) throw new Error(`heartbeat target '${text}' is not host:port`);
  return { host, port, family: isIP(host) === 6 ? 'udp6' : 'udp4' };
}

export class HeartbeatSender {
  private readonly targets: Target[];
  private readonly sockets = new Map<Target['family'], Socket>();
  private state: SenderState;
  private next = 0;
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private stopped = false;

  constructor(private readonly opts: HeartbeatSenderOptions) {
    if (opts.targets.length === 0) throw new Error('no heartbeat targets');
    this.targets = opts.targets.map(parseTarget);
    this.state = loadState(opts.stateFile);
  }

  /** Sends the first heartbeat now, then one every interval until `stop`. */
  start(): void {
    if (this.running || this.stopped) return;
    this.running = true;
    const tick = async (): Promise<void> => {
      const startedAt = Date.now();
      await this.beat().catch((e: Error) => this.opts.log.warn(`heartbeat not sent: ${e.message}`));
      if (this.running) this.timer = setTimeout(tick, Math.max(0, startedAt + this.opts.intervalMs - Date.now()));
    };
    void tick();
  }

  /** Final: a heartbeat being built while it stops is not sent. */
  stop(): void {
    this.running = false;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const socket of this.sockets.values()) socket.close();
    this.sockets.clear();
  }

  /** Builds, signs and sends one heartbeat to the next target; resolves with what was sent. */
  async beat(): Promise<Heartbeat> {
    const rows = await this.opts.readStats().catch(() => null);
    const snapshot = rows ? snapshotFromStats(rows) : { listeners: {}, pools: {} };
    const absolute = Object.fromEntries(Object.entries(snapshot.listeners).map(([id, l]) => [id, l.stats]));
    const deltas = counterDeltas(absolute, this.state.counters);
    const heartbeat: Heartbeat = {
      amphoraId: this.opts.amphoraId,
      seq: this.state.seq + 1,
      sentAt: Date.now(),
      configVersion: this.opts.configVersion(),
      listeners: Object.fromEntries(Object.entries(snapshot.listeners).map(([id, l]) => [id, { status: l.status, stats: deltas[id]! }])),
      pools: snapshot.pools,
    };
    // Counted as sent before the send: a datagram lost after this is lost, never counted twice.
    this.state = { seq: heartbeat.seq, counters: rows ? absolute : this.state.counters };
    writeFileAtomically(this.opts.stateFile, JSON.stringify(this.state));
    await this.send(encodeHeartbeat(heartbeat, this.opts.key));
    return heartbeat;
  }

  private send(datagram: Buffer): Promise<void> {
    if (this.stopped) return Promise.resolve();
    const target = this.targets[this.next++ % this.targets.length]!;
    let socket = this.sockets.get(target.family);
    if (!socket) {
      socket = createSocket(target.family);
      // A health manager that is down or unreachable must not take the agent down with it.
      socket.on('error', (e) => this.opts.log.warn(`heartbeat socket: ${e.message}`));
      this.sockets.set(target.family, socket);
    }
    const via = socket;
    return new Promise((resolve) => {
      via.send(datagram, target.port, target.host, (e) => {
        if (e) this.opts.log.warn(`heartbeat to ${target.host}:${target.port} not sent: ${e.message}`);
        resolve();
      });
    });
  }
}

function loadState(file: string): SenderState {
  if (!existsSync(file)) return { seq: 0, counters: {} };
  try {
    const stored = JSON.parse(readFileSync(file, 'utf8')) as Partial<SenderState>;
    return { seq: Number.isSafeInteger(stored.seq) ? stored.seq! : 0, counters: stored.counters ?? {} };
  } catch {
    // A torn file cannot happen (rename), but a hand-edited one can: start above any seq used today.
    return { seq: Date.now(), counters: {} };
  }
}


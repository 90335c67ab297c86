/**
 * Heartbeats: every interval the amphora sends one UDP datagram to the next health manager
 * in its list (round robin), saying which config version it runs and what HAProxy reports.
 *
 * Wire format, version 2 (ours alone: no Octavia framing), integers big-endian:
 *
 *   offset size
 *        0    4  "OHB" and the version byte 0x02
 *        4   16  amphora id (the UUID's 16 bytes)
 *       20    8  boot epoch: when the agent started, ms since the Unix epoch
 *       28    8  seq: 1, 2, 3 … within that boot
 *       36    8  sentAt, ms since the Unix epoch
 *       44    4  length of the body (must be every byte after the MAC)
 *       48    4  length of the report once inflated (at most MAX_INFLATED_BYTES)
 *       52   32  HMAC-SHA256, keyed with the amphora's own key, over bytes 0–51 and the body
 *       84    …  the JSON `HeartbeatReport`, zlib-deflated when it is DEFLATE_FROM_BYTES or more
 *
 * A report under that size is sent as it is (its first byte is `{`, never a zlib stream's):
 * deflating a few hundred bytes saved few of them, and zlib setting up its state anew for each
 * was a quarter of an idle agent's CPU. A large amphora's report is deflated to fit a datagram.
 *
 * Authenticated, not encrypted. Everything the receiver judges a datagram by is in the header,
 * outside the compressed body, so a forged, replayed, stale or oversized datagram is refused
 * after one HMAC, before anything is inflated or parsed: refusing costs next to nothing. The
 * key is derived from the amphora id (heartbeat-key.ts), so no lookup precedes the check.
 *
 * Listener counters are deltas since the previous heartbeat (except the current connection
 * count), so the receiver can add them up; the last absolute values are persisted so an agent
 * restart does not count twice. A counter that went down means HAProxy started afresh: its
 * current value is the delta.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { existsSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { deflateSync, inflateSync } from 'node:zlib';
import { HEARTBEAT_MIN_INTERVAL_MS, HeartbeatReport, type Heartbeat } from '../domain/amphora-config.js';
import { writeFileAtomically } from './atomic-file.js';
import { parseBackendName, parseFrontendName, parseServerName } from './haproxy/names.js';
import type { StatRow } from './haproxy/runtime.js';
import { conforms } from './typed-check.js';

const MAGIC = Buffer.from('OHB\x02', 'latin1');
const SIGNED_HEADER_BYTES = 52;
const MAC_BYTES = 32;
const BODY_OFFSET = SIGNED_HEADER_BYTES + MAC_BYTES;
/** A heartbeat of a very large amphora inflates to well under this; anything bigger is refused uninflated. */
export const MAX_INFLATED_BYTES = 4 * 1024 * 1024;
/** Reports this long or longer are deflated; shorter ones go as they are (see the wire format). */
export const DEFLATE_FROM_BYTES = 1024;
const RAW_BODY_FIRST_BYTE = '{'.charCodeAt(0);

export type ListenerCounters = Heartbeat['listeners'][string]['stats'];

/** What the signed header says: enough to judge a datagram without its body. */
export type HeartbeatHeader = Pick<Heartbeat, 'amphoraId' | 'epoch' | 'seq' | 'sentAt'>;

/** Why a datagram was refused; each is counted apart (health/receiver.ts). */
export const REFUSALS = ['malformed', 'badMac', 'oversize', 'replay', 'stale', 'unknownAmphora'] as const;
export type Refusal = (typeof REFUSALS)[number];

export type Decoded = { heartbeat: Heartbeat } | { refused: Refusal };

// ---------------------------------------------------------------------------------------
// Wire format

export function encodeHeartbeat(heartbeat: Heartbeat, key: string): Buffer {
  const { amphoraId, epoch, seq, sentAt, ...report } = heartbeat;
  const json = Buffer.from(JSON.stringify(report), 'utf8');
  // Level 1: every amphora sends one a second; level 9 cost ~4x the CPU for a few bytes less.
  const body = json.length < DEFLATE_FROM_BYTES ? json : deflateSync(json, { level: 1 });
  const id = amphoraId.replaceAll('-', '');
  if (!/^[0-9a-f]{32}$/i.test(id)) throw new Error(`amphora id '${amphoraId}' is not a UUID`);
  const header = Buffer.alloc(SIGNED_HEADER_BYTES);
  MAGIC.copy(header, 0);
  Buffer.from(id, 'hex').copy(header, 4);
  header.writeBigUInt64BE(BigInt(epoch), 20);
  header.writeBigUInt64BE(BigInt(seq), 28);
  header.writeBigUInt64BE(BigInt(sentAt), 36);
  header.writeUInt32BE(body.length, 44);
  header.writeUInt32BE(json.length, 48);
  return Buffer.concat([header, mac(key, header, body), body]);
}

/**
 * Judges `datagram` in order of cost: its shape, then its MAC with the key `keyFor` gives for
 * the amphora the header names, then its size, then what `admit` says of the header (replay,
 * staleness); only then is the body inflated (never beyond the size the header declares) and
 * checked. Returns the heartbeat, or why it was refused.
 */
export function decodeHeartbeat(datagram: Buffer, keyFor: (amphoraId: string) => string | undefined, admit?: (header: HeartbeatHeader) => Refusal | null): Decoded {
  const header = readHeader(datagram);
  if (!header) return { refused: 'malformed' };
  const key = keyFor(header.amphoraId);
  if (!key) return { refused: 'unknownAmphora' };
  const signed = datagram.subarray(0, SIGNED_HEADER_BYTES);
  const body = datagram.subarray(BODY_OFFSET);
  if (!timingSafeEqual(mac(key, signed, body), datagram.subarray(SIGNED_HEADER_BYTES, BODY_OFFSET))) return { refused: 'badMac' };
  if (header.inflatedLength > MAX_INFLATED_BYTES) return { refused: 'oversize' };
  const { inflatedLength, ...judged } = header;
  const refusal = admit?.(judged);
  if (refusal) return { refused: refusal };
  let report: unknown;
  try {
    const json = body[0] === RAW_BODY_FIRST_BYTE ? body : inflateSync(body, { maxOutputLength: Math.max(1, inflatedLength) });
    if (json.length !== inflatedLength) return { refused: 'malformed' };
    report = JSON.parse(json.toString('utf8'));
  } catch (e) {
    return { refused: (e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' ? 'oversize' : 'malformed' };
  }
  return conforms(HeartbeatReport, report) ? { heartbeat: { ...judged, ...report } } : { refused: 'malformed' };
}

/** The header of a version-2 datagram whose body length is what it says, or null. */
function readHeader(datagram: Buffer): (HeartbeatHeader & { inflatedLength: number }) | null {
  if (datagram.length < BODY_OFFSET || !datagram.subarray(0, MAGIC.length).equals(MAGIC)) return null;
  if (datagram.readUInt32BE(44) !== datagram.length - BODY_OFFSET) return null;
  const [epoch, seq, sentAt] = [20, 28, 36].map((offset) => datagram.readBigUInt64BE(offset));
  if (seq! < 1n || [epoch!, seq!, sentAt!].some((n) => n > BigInt(Number.MAX_SAFE_INTEGER))) return null;
  const hex = datagram.toString('hex', 4, 20);
  const amphoraId = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return { amphoraId, epoch: Number(epoch), seq: Number(seq), sentAt: Number(sentAt), inflatedLength: datagram.readUInt32BE(48) };
}

function mac(key: string, header: Buffer, body: Buffer): Buffer {
  return createHmac('sha256', key).update(header).update(body).digest();
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
  /** Where the boot epoch and the last absolute counters survive agent restarts. */
  stateFile: string;
  /** HAProxy's `show stat`, or null when it is not running (the heartbeat then reports no listeners). */
  readStats(): Promise<StatRow[] | null>;
  /** What is served outside HAProxy (UDP listeners, ./udp/), reported beside it. */
  readOtherStatus?(): Promise<StatusSnapshot>;
  configVersion(): number;
  log: Pick<Console, 'warn'>;
}

interface SenderState {
  /** This boot's: above every earlier boot's, even if the clock went back. */
  epoch: number;
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
  /** What the state file holds, as written. */
  private persisted: string | null = null;

  constructor(private readonly opts: HeartbeatSenderOptions) {
    if (opts.targets.length === 0) throw new Error('no heartbeat targets');
    this.targets = opts.targets.map(parseTarget);
    this.state = bootState(opts.stateFile, Date.now());
  }

  /** Sends the first heartbeat now, then one every interval until `stop`. */
  start(): void {
    if (this.running || this.stopped) return;
    this.running = true;
    const tick = async (): Promise<void> => {
      const startedAt = Date.now();
      await this.beat().catch((e: Error) => this.opts.log.warn(`heartbeat not sent: ${e.message}`));
      // Never faster than the receiver's bound on how far a boot's sequence can have got.
      const intervalMs = Math.max(this.opts.intervalMs, HEARTBEAT_MIN_INTERVAL_MS);
      if (this.running) this.timer = setTimeout(tick, Math.max(0, startedAt + intervalMs - Date.now()));
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
    const served = rows ? snapshotFromStats(rows) : { listeners: {}, pools: {} };
    const other = (await this.opts.readOtherStatus?.().catch((e: Error) => this.opts.log.warn(`UDP status not read: ${e.message}`))) ?? { listeners: {}, pools: {} };
    const snapshot: StatusSnapshot = { listeners: { ...served.listeners, ...other.listeners }, pools: { ...served.pools, ...other.pools } };
    const absolute = Object.fromEntries(Object.entries(snapshot.listeners).map(([id, l]) => [id, l.stats]));
    const deltas = counterDeltas(absolute, this.state.counters);
    const heartbeat: Heartbeat = {
      amphoraId: this.opts.amphoraId,
      epoch: this.state.epoch,
      seq: this.state.seq + 1,
      sentAt: Date.now(),
      configVersion: this.opts.configVersion(),
      listeners: Object.fromEntries(Object.entries(snapshot.listeners).map(([id, l]) => [id, { status: l.status, stats: deltas[id]! }])),
      pools: snapshot.pools,
    };
    // Counted as sent before the send: a datagram lost after this is lost, never counted twice.
    this.state = { ...this.state, seq: heartbeat.seq, counters: rows ? absolute : { ...this.state.counters, ...absolute } };
    this.persist();
    await this.send(encodeHeartbeat(heartbeat, this.opts.key));
    return heartbeat;
  }

  /**
   * Only the epoch and the counters outlive a restart (a new boot numbers its heartbeats anew), so the file is
   * rewritten only when they changed: an idle amphora writes nothing, where a write and a rename every
   * interval were a fifth of its agent's idle CPU.
   */
  private persist(): void {
    const text = JSON.stringify({ epoch: this.state.epoch, counters: this.state.counters });
    if (text === this.persisted) return;
    writeFileAtomically(this.opts.stateFile, text);
    this.persisted = text;
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

/** A new boot: a new epoch (now, or just above the last one if the clock went back), seq from 1, the counters as last reported. */
function bootState(file: string, now: number): SenderState {
  let stored: Partial<SenderState> = {};
  try {
    if (existsSync(file)) stored = JSON.parse(readFileSync(file, 'utf8')) as Partial<SenderState>;
  } catch {
    // A torn file cannot happen (rename), but a hand-edited one can: a new epoch is all it takes.
  }
  const last = Number.isSafeInteger(stored.epoch) ? stored.epoch! : -1;
  return { epoch: Math.max(now, last + 1), seq: 0, counters: stored.counters ?? {} };
}

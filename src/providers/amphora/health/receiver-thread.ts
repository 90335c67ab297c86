/**
 * The heartbeat socket, on its own thread (started by receiver.ts): receiving, signature
 * checks, inflating, parsing and replay judgement never run on the event loop that answers
 * the API, so no flood of datagrams can delay it. Accepted reports wait here, newest per
 * amphora with their statistics summed, until the main thread has written the previous
 * batch; then they go over as one message, with a snapshot of the counters. When writes fall
 * behind, the oldest amphora's report is dropped (and counted) to make room.
 */
import { createSocket } from 'node:dgram';
import { parentPort, workerData } from 'node:worker_threads';
import type { Heartbeat } from '../../../domain/amphora-config.js';
import { parseHostPort } from '../../../domain/net.js';
import { HeartbeatJudge, type JudgeCounters } from './judge.js';
import { readSocketDrops } from './socket-drops.js';
import { addDelta, type StatsDelta } from './stats.js';

export interface ThreadOptions {
  listen: string;
  secret: string;
  maxSkewMs: number;
  flushMs: number;
  maxPending: number;
}

/** One amphora's reports since the last batch: the newest, and the sum of their stats deltas. */
export interface AcceptedHeartbeat {
  heartbeat: Heartbeat;
  /** Controller clock, epoch ms: liveness is judged on it, never on the sender's. */
  receivedAt: number;
  stats: Map<string, StatsDelta>;
}

export interface ThreadCounters extends JudgeCounters {
  /** Reports dropped because the main thread had not written the earlier ones (the database is too slow). */
  overflowDropped: number;
  /** Datagrams the kernel dropped because the socket's buffer was full (Linux; 0 where unknown). */
  socketDropped: number;
}

export type FromThread =
  | { kind: 'listening'; address: string; port: number }
  | { kind: 'failed'; code: string | undefined; message: string }
  | { kind: 'socket-error'; message: string }
  /** `last`: the socket is closed and this is everything that was pending. */
  | { kind: 'batch'; batch: AcceptedHeartbeat[]; counters: ThreadCounters; last: boolean };

export type ToThread = { kind: 'written' } | { kind: 'close' };

const port = parentPort!;
const opts = workerData as ThreadOptions;
const judge = new HeartbeatJudge(opts.secret, opts.maxSkewMs);
const counters: ThreadCounters = { ...judge.counters, overflowDropped: 0, socketDropped: 0 };
let pending = new Map<string, AcceptedHeartbeat>();
/** The main thread has written the last batch: the next may go. */
let mayPost = true;
let posted = '';
let dropsAtStart: number | null = null;
let bound: { address: string; port: number } | undefined;

const { host, port: listenPort } = parseHostPort(opts.listen, 'amphora.healthListen');
const socket = createSocket({ type: host.includes(':') ? 'udp6' : 'udp4', recvBufferSize: 4 * 1024 * 1024 });
socket.on('message', (datagram) => {
  const now = Date.now();
  const heartbeat = judge.judge(datagram, now);
  if (heartbeat) enqueue(heartbeat, now);
});
socket.once('error', (e: NodeJS.ErrnoException) => {
  send({ kind: 'failed', code: e.code, message: e.message });
  port.close();
});
socket.bind(listenPort, host, () => {
  socket.removeAllListeners('error');
  socket.on('error', (e) => send({ kind: 'socket-error', message: e.message }));
  bound = socket.address();
  dropsAtStart = readSocketDrops(bound.address, bound.port);
  const timer = setInterval(flush, opts.flushMs);
  port.on('message', (message: ToThread) => {
    if (message.kind === 'written') {
      mayPost = true;
    } else {
      clearInterval(timer);
      socket.close(() => {
        flush(true);
        port.close();
      });
    }
  });
  send({ kind: 'listening', address: bound.address, port: bound.port });
});

function send(message: FromThread): void {
  port.postMessage(message);
}

function enqueue(heartbeat: Heartbeat, receivedAt: number): void {
  const queued = pending.get(heartbeat.amphoraId);
  if (!queued && pending.size >= opts.maxPending) {
    pending.delete(pending.keys().next().value!);
    counters.overflowDropped++;
  }
  const stats = queued?.stats ?? new Map<string, StatsDelta>();
  for (const [listenerId, report] of Object.entries(heartbeat.listeners)) stats.set(listenerId, addDelta(stats.get(listenerId), report.stats));
  // Deleted first so the map's order stays oldest-first by newest report.
  pending.delete(heartbeat.amphoraId);
  pending.set(heartbeat.amphoraId, { heartbeat, receivedAt, stats });
}

/** Posts what is pending if the last batch is written (or this is the last); else only counters that changed. */
function flush(last = false): void {
  Object.assign(counters, judge.counters);
  if (bound && dropsAtStart !== null) {
    counters.socketDropped = (readSocketDrops(bound.address, bound.port) ?? dropsAtStart) - dropsAtStart;
  }
  const snapshot = JSON.stringify(counters);
  const batch = (mayPost || last) && pending.size ? [...pending.values()] : [];
  if (!batch.length && !last && snapshot === posted) return;
  if (batch.length) {
    pending = new Map();
    mayPost = false;
  }
  posted = snapshot;
  send({ kind: 'batch', batch, counters: JSON.parse(snapshot) as ThreadCounters, last });
}

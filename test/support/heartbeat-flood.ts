/**
 * Forged heartbeat datagrams and a sender that floods a health port with them at a steady
 * rate: what someone without the heartbeat secret can send (garbage, a genuine header with a
 * body and MAC of their own, a zip bomb, replays of captured datagrams). Shared by the flood
 * tests, the security suite and the flood benchmark (which runs it as a separate process,
 * `node dist/test/support/heartbeat-flood.js HOST:PORT PER_SECOND AMPHORA_ID`).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { deflateSync } from 'node:zlib';
import { pathToFileURL } from 'node:url';
import { encodeHeartbeat, parseTarget } from '../../src/amphora-agent/heartbeat.js';

/** The size of each forged datagram, as in the report that prompted this (4 KB). */
export const FORGED_BYTES = 4096;

/** A genuine-looking heartbeat for `amphoraId`, signed with a key that is not its own. */
function wronglySigned(amphoraId: string): Buffer {
  const now = Date.now();
  return encodeHeartbeat({ amphoraId, epoch: now - 1000, seq: 1, sentAt: now, configVersion: 0, listeners: {}, pools: {} }, randomBytes(32).toString('hex'));
}

/** Each kind of forgery once, FORGED_BYTES long, naming `amphoraId` where the kind has a header; plus `captured` (replays) if given. */
export function forgedDatagrams(amphoraId: string, captured: readonly Buffer[] = []): Buffer[] {
  const header = wronglySigned(amphoraId).subarray(0, 84);
  const withBody = (body: Buffer) => {
    const datagram = Buffer.concat([header, body]);
    datagram.writeUInt32BE(body.length, 44);
    return datagram;
  };
  const bomb = deflateSync(Buffer.alloc(16 * 1024 * 1024)).subarray(0, FORGED_BYTES - 84);
  const padded = (d: Buffer) => Buffer.concat([d, randomBytes(Math.max(0, FORGED_BYTES - d.length))]);
  return [
    randomBytes(FORGED_BYTES),
    withBody(randomBytes(FORGED_BYTES - 84)),
    withBody(bomb),
    padded(wronglySigned(randomUUID())),
    ...captured,
  ];
}

export interface Flooder {
  /** Datagrams sent so far. */
  readonly sent: number;
  stop(): Promise<number>;
}

/** Sends `datagrams` round robin to `target` at `perSecond`, in small bursts every 10 ms, from one socket. */
export function flood(target: string, perSecond: number, datagrams: readonly Buffer[]): Flooder {
  const { host, port, family } = parseTarget(target);
  const socket = createSocket(family);
  const started = Date.now();
  let sent = 0;
  const timer = setInterval(() => {
    const due = Math.floor(((Date.now() - started) * perSecond) / 1000);
    for (; sent < due; sent++) socket.send(datagrams[sent % datagrams.length]!, port, host);
  }, 10);
  return {
    get sent() {
      return sent;
    },
    async stop() {
      clearInterval(timer);
      await new Promise<void>((resolve) => socket.close(() => resolve()));
      return sent;
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [target, perSecond, amphoraId] = process.argv.slice(2);
  if (!target || !perSecond || !amphoraId) throw new Error('usage: heartbeat-flood.js HOST:PORT PER_SECOND AMPHORA_ID');
  const flooder = flood(target, Number(perSecond), forgedDatagrams(amphoraId));
  const stop = () => void flooder.stop().then((sent) => {
    process.stdout.write(`${JSON.stringify({ sent })}\n`);
    process.exit(0);
  });
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

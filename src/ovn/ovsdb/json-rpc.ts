/**
 * JSON-RPC 1.0 as OVSDB speaks it (RFC 7047 §4): objects back to back on a stream with no
 * delimiter, requests answered by id, notifications with id null, and `echo` in both directions
 * as the liveness probe.
 */
import { EventEmitter } from 'node:events';
import net from 'node:net';
import tls from 'node:tls';
import type { Duplex } from 'node:stream';

/**
 * Splits a byte stream into top-level JSON texts. It works on bytes: the structural characters
 * ({ } [ ] " \) are ASCII and never occur inside a UTF-8 multibyte sequence, so a chunk boundary
 * inside a character cannot confuse it, and each text is decoded only once it is complete.
 */
export class JsonStreamSplitter {
  private buf: Buffer = Buffer.alloc(0);
  private scanned = 0;
  private depth = 0;
  private inString = false;
  private escaped = false;
  private start = -1;

  constructor(private readonly maxBytes = 64 * 1024 * 1024) {}

  /** Returns the texts completed by this chunk, parsed. Throws on malformed input. */
  push(chunk: Buffer): unknown[] {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    const out: unknown[] = [];
    let i = this.scanned;
    for (; i < this.buf.length; i++) {
      const c = this.buf[i] as number;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === 0x5c) this.escaped = true;
        else if (c === 0x22) this.inString = false;
        continue;
      }
      if (this.depth === 0) {
        if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
        if (c !== 0x7b && c !== 0x5b) throw new SyntaxError(`unexpected byte 0x${c.toString(16)} between JSON texts`);
        this.start = i;
      }
      if (c === 0x22) this.inString = true;
      else if (c === 0x7b || c === 0x5b) this.depth++;
      else if (c === 0x7d || c === 0x5d) {
        this.depth--;
        if (this.depth === 0) {
          out.push(JSON.parse(this.buf.subarray(this.start, i + 1).toString('utf8')));
          this.buf = this.buf.subarray(i + 1);
          i = -1;
          this.start = -1;
        }
      }
    }
    this.scanned = this.buf.length;
    if (this.start > 0) {
      this.buf = this.buf.subarray(this.start);
      this.scanned -= this.start;
      this.start = 0;
    } else if (this.start < 0) {
      this.buf = Buffer.alloc(0);
      this.scanned = 0;
    }
    if (this.buf.length > this.maxBytes) throw new RangeError(`JSON text larger than ${this.maxBytes} bytes`);
    return out;
  }
}

export class JsonRpcError extends Error {
  constructor(
    readonly method: string,
    readonly error: unknown,
  ) {
    super(`${method}: ${typeof error === 'string' ? error : JSON.stringify(error)}`);
  }
}

export class DisconnectedError extends Error {}

export interface JsonRpcOptions {
  /** Send our own echo after this long without traffic; disconnect if the next interval is silent too. 0: never. */
  probeIntervalMs: number;
}

interface Pending {
  method: string;
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
}

/**
 * Events: 'notification' (method, params), 'server-echo' (we answered the server's probe),
 * 'close' (error | undefined) — once.
 */
export class JsonRpcConnection extends EventEmitter {
  private readonly splitter = new JsonStreamSplitter();
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;
  private heardSinceTick = false;
  private probeOutstanding = false;
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly stream: Duplex,
    options: JsonRpcOptions,
  ) {
    super();
    stream.on('data', (chunk: Buffer) => this.onData(chunk));
    stream.on('error', (e) => this.shutdown(e));
    stream.on('close', () => this.shutdown(new DisconnectedError('connection closed by peer')));
    stream.on('end', () => this.shutdown(new DisconnectedError('connection closed by peer')));
    if (options.probeIntervalMs > 0) {
      this.timer = setInterval(() => this.tick(), options.probeIntervalMs);
      this.timer.unref();
    }
  }

  get isClosed(): boolean {
    return this.closed;
  }

  request(method: string, params: unknown[]): Promise<unknown> {
    if (this.closed) return Promise.reject(new DisconnectedError(`${method}: not connected`));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { method, resolve, reject });
      this.send({ method, params, id });
    });
  }

  close(): void {
    this.shutdown(undefined);
  }

  private send(msg: unknown): void {
    if (!this.closed) this.stream.write(JSON.stringify(msg));
  }

  private tick(): void {
    if (this.heardSinceTick) {
      this.heardSinceTick = false;
      return;
    }
    if (this.probeOutstanding) {
      this.shutdown(new DisconnectedError('no answer to the inactivity probe (echo)'));
      return;
    }
    this.probeOutstanding = true;
    this.request('echo', ['ostia-probe']).catch(() => undefined);
  }

  private onData(chunk: Buffer): void {
    this.heardSinceTick = true;
    this.probeOutstanding = false;
    let messages: unknown[];
    try {
      messages = this.splitter.push(chunk);
    } catch (e) {
      this.shutdown(e as Error);
      return;
    }
    for (const m of messages) this.dispatch(m as Record<string, unknown>);
  }

  private dispatch(m: Record<string, unknown>): void {
    if (typeof m !== 'object' || m === null || Array.isArray(m)) return;
    if (typeof m.method === 'string') {
      const params = Array.isArray(m.params) ? m.params : [];
      if (m.id !== null && m.id !== undefined) {
        // The server's echo is its inactivity probe: unanswered, it drops us.
        if (m.method === 'echo') {
          this.send({ id: m.id, result: params, error: null });
          this.emit('server-echo');
        }
        else this.send({ id: m.id, result: null, error: `unknown method ${m.method}` });
        return;
      }
      this.emit('notification', m.method, params);
      return;
    }
    if (typeof m.id !== 'number') return;
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    if (m.error !== null && m.error !== undefined) p.reject(new JsonRpcError(p.method, m.error));
    else p.resolve(m.result);
  }

  private shutdown(err: Error | undefined): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.stream.destroy();
    const reason = err ?? new DisconnectedError('connection closed');
    for (const p of this.pending.values()) p.reject(new DisconnectedError(`${p.method}: ${reason.message}`));
    this.pending.clear();
    this.emit('close', err);
  }
}

export interface TlsFiles {
  /** PEM contents, not paths: the caller decides where they come from. */
  key: string | Buffer;
  cert: string | Buffer;
  ca: string | Buffer;
}

export interface ParsedRemote {
  kind: 'tcp' | 'ssl' | 'unix';
  host?: string;
  port?: number;
  path?: string;
}

/** `tcp:HOST:PORT`, `ssl:HOST:PORT` (IPv6 as `[addr]`), `unix:PATH` — ovsdb-client's syntax. */
export function parseRemote(remote: string): ParsedRemote {
  const unix = /^unix:(.+)$/.exec(remote);
  if (unix) return { kind: 'unix', path: unix[1] as string };
  const inet = /^(tcp|ssl):(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(remote);
  if (inet) {
    const port = Number(inet[4]);
    if (port < 1 || port > 65535) throw new TypeError(`bad port in remote ${remote}`);
    return { kind: inet[1] as 'tcp' | 'ssl', host: (inet[2] ?? inet[3]) as string, port };
  }
  throw new TypeError(`unsupported OVSDB remote ${JSON.stringify(remote)} (tcp:HOST:PORT, ssl:HOST:PORT or unix:PATH)`);
}

/** Resolves once the stream is connected (and, for ssl, the handshake verified the server against ca). */
export function openStream(remote: string, tlsFiles: TlsFiles | undefined, timeoutMs: number): Promise<Duplex> {
  const r = parseRemote(remote);
  return new Promise((resolve, reject) => {
    let s: net.Socket;
    const ready = r.kind === 'ssl' ? 'secureConnect' : 'connect';
    if (r.kind === 'unix') s = net.connect({ path: r.path as string });
    else if (r.kind === 'tcp') s = net.connect({ host: r.host as string, port: r.port as number });
    else {
      if (!tlsFiles) {
        reject(new TypeError(`${remote}: ssl remotes need key, cert and ca`));
        return;
      }
      s = tls.connect({
        host: r.host as string,
        port: r.port as number,
        key: tlsFiles.key,
        cert: tlsFiles.cert,
        ca: tlsFiles.ca,
        // OVS PKI certificates name the entity, not the host: trust is the CA, as in ovsdb-client.
        checkServerIdentity: () => undefined,
      });
    }
    const timer = setTimeout(() => {
      s.destroy();
      reject(new DisconnectedError(`${remote}: connect timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    s.once(ready, () => {
      clearTimeout(timer);
      s.removeAllListeners('error');
      s.setNoDelay?.(true);
      resolve(s);
    });
    s.once('error', (e) => {
      clearTimeout(timer);
      s.destroy();
      reject(e);
    });
  });
}

/**
 * A Server-Sent Events answer (text/event-stream) on a reply taken over from Fastify: named
 * events with a JSON `data` line and an increasing `id`, keep-alive comments so proxies keep
 * the connection, and an end when the client goes or stops reading.
 */
import type { FastifyReply } from 'fastify';
import type { ApiDeps } from './context.js';
import { clientGone } from './wait.js';

/** A client this far behind (not reading) is ended rather than buffered for without bound. */
const MAX_BUFFERED_BYTES = 1 << 20;

export const EVENT_STREAM_TYPE = 'text/event-stream';

export class EventStream {
  private next = 1;
  /** Aborts when the client goes away or the API closes. */
  readonly closed: AbortSignal;

  constructor(
    deps: ApiDeps,
    private readonly reply: FastifyReply,
  ) {
    this.closed = clientGone(deps, reply);
    reply.hijack();
    reply.raw.writeHead(200, {
      ...(reply.getHeaders() as Record<string, string>),
      'content-type': `${EVENT_STREAM_TYPE}; charset=utf-8`,
      'cache-control': 'no-cache',
      // nginx and its kin would otherwise hold events back in their buffers.
      'x-accel-buffering': 'no',
    });
    reply.raw.flushHeaders();
  }

  send(event: string, data: unknown): void {
    this.write(`id: ${this.next++}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  keepAlive(): void {
    this.write(':\n\n');
  }

  end(): void {
    if (!this.reply.raw.writableEnded) this.reply.raw.end();
  }

  private write(text: string): void {
    const raw = this.reply.raw;
    if (this.closed.aborted || raw.writableEnded) return;
    raw.write(text);
    if (raw.writableLength > MAX_BUFFERED_BYTES) raw.destroy();
  }
}

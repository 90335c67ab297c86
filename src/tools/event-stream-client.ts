/**
 * Reads an Ostia event stream (text/event-stream) with fetch, so it can send the X-Auth-Token
 * header that the browsers' EventSource cannot: events arrive in order through `next`.
 */

export interface StreamEvent {
  id: string | null;
  event: string;
  data: unknown;
}

/** Splits a text/event-stream body into events (comments and keep-alives dropped). */
export class EventParser {
  private buffer = '';
  push(text: string): StreamEvent[] {
    this.buffer += text.replace(/\r\n?/g, '\n');
    const events: StreamEvent[] = [];
    let end: number;
    while ((end = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      let id: string | null = null;
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') id = value;
        else if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
      if (data.length) events.push({ id, event, data: JSON.parse(data.join('\n')) });
    }
    return events;
  }
}

export class EventStreamClient {
  private readonly queue: StreamEvent[] = [];
  private waiter: (() => void) | undefined;
  private ended: Error | null = null;
  private readonly abort = new AbortController();

  private constructor() {}

  /** Opens the stream; a refusal (4xx, 5xx) rejects with the API's error body in its message. */
  static async open(url: string, headers: Record<string, string>): Promise<EventStreamClient> {
    const c = new EventStreamClient();
    const res = await fetch(url, { headers: { ...headers, accept: 'text/event-stream' }, signal: c.abort.signal });
    if (!res.ok || !res.body) throw new Error(`GET ${url}: HTTP ${res.status} ${await res.text()}`);
    void c.read(res.body);
    return c;
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const parser = new EventParser();
    const decoder = new TextDecoder();
    try {
      for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
        this.queue.push(...parser.push(decoder.decode(chunk, { stream: true })));
        this.waiter?.();
      }
      this.ended = new Error('the stream ended');
    } catch (e) {
      this.ended = e as Error;
    }
    this.waiter?.();
  }

  /** The next event, or a rejection when the stream ends first or `timeoutMs` passes. */
  async next(timeoutMs: number): Promise<StreamEvent> {
    const deadline = Date.now() + timeoutMs;
    while (!this.queue.length) {
      if (this.ended) throw this.ended;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no event within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiter = () => (clearTimeout(t), resolve());
      });
      this.waiter = undefined;
    }
    return this.queue.shift()!;
  }

  /** Events until one satisfies `match` (returned), within `timeoutMs` in all. */
  async until(match: (e: StreamEvent) => boolean, timeoutMs: number): Promise<StreamEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const e = await this.next(Math.max(1, deadline - Date.now()));
      if (match(e)) return e;
    }
  }

  close(): void {
    this.abort.abort();
  }
}

/**
 * One connection to HAProxy's stats socket kept open in prompt mode, for the `show stat` every
 * heartbeat makes: a connection per read cost the agent ~0.4 ms of CPU and HAProxy ~0.06 ms each
 * second, a good part of an idle amphora's whole cost. In prompt mode HAProxy ends each reply with
 * "\n> ".
 *
 * The connection belongs to the worker that accepted it, so the owner drops it after a reload
 * (an old worker would go on answering with its own, frozen, counters). HAProxy closes it after
 * `stats timeout` of silence; a read then finds it closed and opens another.
 */
import { createConnection, type Socket } from 'node:net';

/** What ends each reply in prompt mode: the reply's own last newline, then the prompt. */
const PROMPT = '\n> ';

export class StatsSession {
  private socket: Socket | null = null;
  private reply = '';
  private waiting: { resolve(text: string): void; reject(e: Error): void } | null = null;
  /** Commands run one at a time: replies carry no tag. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly socketPath: string,
    private readonly timeoutMs: number,
  ) {}

  /** HAProxy's reply to `command`, without the prompt. A connection found closed is reopened once. */
  run(command: string): Promise<string> {
    const next = this.queue.then(async () => {
      const reused = this.socket !== null;
      try {
        return await this.send(command);
      } catch (e) {
        if (!reused) throw e;
        return this.send(command);
      }
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Closes the connection; the next command opens a new one (to the worker serving then). */
  drop(): void {
    this.socket?.destroy();
    this.socket = null;
  }

  private async send(command: string): Promise<string> {
    const socket = this.socket ?? (await this.open());
    const reply = await this.exchange(socket, `${command}\n`);
    return reply.slice(0, reply.length - PROMPT.length + 1);
  }

  private async open(): Promise<Socket> {
    const socket = createConnection(this.socketPath);
    socket.setEncoding('utf8');
    socket.setTimeout(this.timeoutMs, () => socket.destroy(new Error(`haproxy stats socket ${this.socketPath}: no reply within ${this.timeoutMs} ms`)));
    // A dropped connection's late data and close must not touch the one that replaced it.
    socket.on('data', (chunk: string) => {
      if (this.socket !== socket) return;
      this.reply += chunk;
      if (!this.reply.endsWith(PROMPT) || !this.waiting) return;
      const { resolve } = this.waiting;
      const reply = this.reply;
      this.waiting = null;
      this.reply = '';
      resolve(reply);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (this.socket !== null && this.socket !== socket) return;
      this.socket = null;
      this.reply = '';
      this.waiting?.reject(new Error(`haproxy stats socket ${this.socketPath} closed`));
      this.waiting = null;
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('close', () => reject(new Error(`haproxy stats socket ${this.socketPath}: connection refused`)));
    });
    this.socket = socket;
    await this.exchange(socket, 'prompt\n');
    return socket;
  }

  private exchange(socket: Socket, text: string): Promise<string> {
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      socket.write(text);
    });
  }
}

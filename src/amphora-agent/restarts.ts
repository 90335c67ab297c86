/**
 * The crash restarts of a child the agent supervises (HAProxy, keepalived): whether it is wanted
 * running, an exponential backoff over the crashes in a row, the timer waiting it out, and the
 * re-spawn it then runs among the supervisor's other operations, one at a time.
 */
import type { OneAtATime } from './one-at-a-time.js';

export interface RestartBackoff {
  initialMs: number;
  maxMs: number;
}

export interface RestartsOptions {
  /** The child's name in log lines, e.g. `haproxy`. */
  name: string;
  log: Pick<Console, 'info' | 'error'>;
  restartBackoff?: RestartBackoff;
  /** The supervisor's operations (start, reload, stop): a restart runs among them, alone. */
  operations: OneAtATime;
  /** Whether the child runs (again), once the restart's turn comes. */
  running: () => boolean;
  /** Starts the child; rejects when it did not start (its exit then schedules the next attempt). */
  spawn: () => Promise<void>;
}

/** A crash after this much uptime starts the backoff from the beginning again. */
const STABLE_UPTIME_MS = 30_000;
const DEFAULT_BACKOFF: RestartBackoff = { initialMs: 200, maxMs: 10_000 };

export class Restarts {
  private wanted = false;
  private startedAt = 0;
  private crashesInARow = 0;
  private timer: NodeJS.Timeout | null = null;
  /** Times the child was started again after exiting on its own. */
  count = 0;

  constructor(private readonly options: RestartsOptions) {}

  /** From a start on, until `letStop`, the child is restarted whenever it exits. */
  keepRunning(): void {
    this.wanted = true;
    this.cancel();
  }

  /** Its exits are no longer crashes: the supervisor is stopping it. */
  letStop(): void {
    this.wanted = false;
    this.cancel();
  }

  /** Whether an exit now is a crash, to be restarted. */
  get keptRunning(): boolean {
    return this.wanted;
  }

  /** To be called as the child is spawned: its uptime at the next crash decides the backoff. */
  spawned(): void {
    this.startedAt = Date.now();
  }

  /** After the child exited on its own: spawns it again once the backoff its crashes in a row call for has passed. */
  schedule(): void {
    this.crashesInARow = Date.now() - this.startedAt > STABLE_UPTIME_MS ? 1 : this.crashesInARow + 1;
    const { initialMs, maxMs } = this.options.restartBackoff ?? DEFAULT_BACKOFF;
    const delay = Math.min(maxMs, initialMs * 2 ** Math.max(0, this.crashesInARow - 1));
    const { name, log } = this.options;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.options.operations.run(async () => {
        if (!this.wanted || this.options.running()) return;
        this.count++;
        try {
          await this.options.spawn();
          log.info(`${name} restarted (restart ${this.count})`);
        } catch (e) {
          // Its exit has scheduled the next attempt already.
          log.error(`${name} restart failed: ${(e as Error).message}`);
        }
      });
    }, delay);
  }

  /** A pending restart is dropped: the supervisor is starting or stopping the child itself. */
  private cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

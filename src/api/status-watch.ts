/**
 * The waits and event streams of one API process, woken by the database's status feed: each
 * registers the load balancer (or the project) it watches, and a change wakes only those. The
 * feed is opened by the first watcher and shared by all of them.
 */
import type { StatusFeed } from '../db/status-feed.js';

/** Woken with the load balancer that changed, or null when changes may have been missed (read everything again). */
export type Wake = (loadBalancerId: string | null) => void;

class Registry<K> {
  private readonly byKey = new Map<K, Set<Wake>>();
  add(key: K, wake: Wake): () => void {
    let set = this.byKey.get(key);
    if (!set) this.byKey.set(key, (set = new Set()));
    set.add(wake);
    return () => {
      set.delete(wake);
      if (!set.size) this.byKey.delete(key);
    };
  }
  wake(key: K, lb: string | null): void {
    for (const w of this.byKey.get(key) ?? []) w(lb);
  }
  wakeAll(): void {
    for (const set of this.byKey.values()) for (const w of set) w(null);
  }
  get size(): number {
    let n = 0;
    for (const set of this.byKey.values()) n += set.size;
    return n;
  }
}

export class StatusWatch {
  private readonly lbs = new Registry<string>();
  /** Keyed by project; null: every project (an admin's stream). */
  private readonly projects = new Registry<string | null>();
  private started: Promise<unknown> | undefined;
  private readonly closing = new AbortController();

  constructor(private readonly feed: StatusFeed) {}

  /** Aborts when the API closes: held GETs answer and streams end, so that closing does not wait on them. */
  get shutdown(): AbortSignal {
    return this.closing.signal;
  }

  close(): void {
    this.closing.abort();
  }

  private start(): Promise<unknown> {
    this.started ??= this.feed
      .watch({
        changed: (lb, project) => {
          this.lbs.wake(lb, lb);
          this.projects.wake(project, lb);
          this.projects.wake(null, lb);
        },
        resync: () => {
          this.lbs.wakeAll();
          this.projects.wakeAll();
        },
      })
      .catch((e: unknown) => {
        this.started = undefined;
        throw e;
      });
    return this.started;
  }

  /** Wakes `wake` on every change of load balancer `id`'s tree; resolves to the way to stop. */
  async loadBalancer(id: string, wake: Wake): Promise<() => void> {
    await this.start();
    return this.lbs.add(id, wake);
  }

  /** Wakes `wake` on every change in project `id` (null: in every project). */
  async project(id: string | null, wake: Wake): Promise<() => void> {
    await this.start();
    return this.projects.add(id, wake);
  }

  /** How many waits and streams are open (a gauge of /metrics). */
  get watchers(): number {
    return this.lbs.size + this.projects.size;
  }
}

/**
 * A reader's doorbell: `ring` may come at any time, even while the reader is reading; `next`
 * returns at once if it rang since the last `next`, else at the next ring, after `ms`, or when
 * `signal` aborts, and says whether it rang. So a change between a read and the wait is never
 * slept through.
 */
export class Doorbell {
  private rang = false;
  private answer: (() => void) | undefined;
  readonly ring = (): void => {
    this.rang = true;
    this.answer?.();
  };
  async next(ms: number, signal: AbortSignal): Promise<boolean> {
    if (!this.rang && !signal.aborted) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.max(0, ms));
        const self = this;
        function done() {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          self.answer = undefined;
          resolve();
        }
        this.answer = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
    const rang = this.rang;
    this.rang = false;
    return rang;
  }
}

const watches = new WeakMap<StatusFeed, StatusWatch>();

/** The one StatusWatch of a database's feed, however many route plugins ask. */
export function statusWatchOf(feed: StatusFeed): StatusWatch {
  let w = watches.get(feed);
  if (!w) watches.set(feed, (w = new StatusWatch(feed)));
  return w;
}

/**
 * Live data of a view: ONE request (a list, a status tree, a batched extension), never one
 * request per object, made again at once when the page's event stream (status-events.ts) says a
 * status changed, and otherwise after a pause, for what changes without a status event
 * (counters, traces); while the stream is down the pause is short, as polling. The next request
 * starts its pause after the previous one ended, stretched to twice its duration when the API is
 * slow to answer it (a list of thousands), so a page never stacks requests on a busy API.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.js';
import { subscribeStatusChanges } from './status-events.js';

/** Between the end of one refresh and the start of the next while no event stream is open: a status change shows within about this plus one request. */
export const LIVE_PAUSE_MS = 500;
/** The same while the event stream is open: status changes come as events, counters at this pace. */
export const STREAMED_PAUSE_MS = 5_000;

export interface Live<T> {
  data: T | undefined;
  error: ApiError | null;
  /** Fetch now (after a write), without waiting for the next tick. */
  refresh(): void;
  /** When the data shown was fetched. */
  at: Date | null;
}

export function useLive<T>(fetcher: (signal: AbortSignal) => Promise<T>, deps: unknown[], pauseMs = LIVE_PAUSE_MS): Live<T> {
  const [state, setState] = useState<{ data: T | undefined; error: ApiError | null; at: Date | null }>({ data: undefined, error: null, at: null });
  const kick = useRef<() => void>(() => undefined);
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let inflight: AbortController | null = null;
    let again = false;
    let streamed = false;
    const tick = async () => {
      timer = undefined;
      if (stopped) return;
      if (inflight) {
        again = true;
        return;
      }
      if (document.hidden) return;
      inflight = new AbortController();
      const t0 = performance.now();
      try {
        const data = await fetcher(inflight.signal);
        if (!stopped) setState({ data, error: null, at: new Date() });
      } catch (e) {
        if ((e as Error).name !== 'AbortError' && !stopped) {
          const error = e instanceof ApiError ? e : new ApiError(0, (e as Error).message, null);
          setState((s) => ({ ...s, error }));
        }
      } finally {
        inflight = null;
      }
      if (!stopped) timer = setTimeout(tick, again ? 0 : Math.max(streamed ? Math.max(pauseMs, STREAMED_PAUSE_MS) : pauseMs, 2 * (performance.now() - t0)));
      again = false;
    };
    kick.current = () => {
      if (timer) clearTimeout(timer);
      void tick();
    };
    const onVisible = () => {
      if (!document.hidden && !timer && !inflight) void tick();
    };
    document.addEventListener('visibilitychange', onVisible);
    const unsubscribe = subscribeStatusChanges(
      () => kick.current(),
      (open) => (streamed = open),
    );
    void tick();
    return () => {
      stopped = true;
      unsubscribe();
      if (timer) clearTimeout(timer);
      inflight?.abort();
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, deps);
  return { ...state, refresh: () => kick.current() };
}

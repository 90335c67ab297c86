/**
 * Live data of a view: ONE request (a list, a status tree, a batched extension) repeated while
 * the view is open and the tab visible, never one request per object. The next request starts
 * a fixed pause after the previous one ended, stretched to twice its duration when the API is
 * slow to answer it (a list of thousands), so a page never stacks requests on a busy API.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.js';

/** Between the end of one refresh and the start of the next: a status change shows within about this plus one request. */
export const LIVE_PAUSE_MS = 500;

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
      if (!stopped) timer = setTimeout(tick, again ? 0 : Math.max(pauseMs, 2 * (performance.now() - t0)));
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
    void tick();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      inflight?.abort();
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, deps);
  return { ...state, refresh: () => kick.current() };
}

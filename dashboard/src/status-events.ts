/**
 * The page's one event stream (`GET /v2/ostia/events`, the session project's load balancers, or
 * every project's for those who may list them): open while a live view is shown, it tells the
 * views when a status changed, so they refresh then instead of polling for it. Read with fetch,
 * since EventSource cannot send the token; opened again after a drop, and with the new token
 * when the session changes.
 */
import { effect } from '@preact/signals';
import { EventParser } from '../../src/tools/event-stream-client.js';
import { ostia, send } from './api.js';
import { session } from './session.js';

/** After a dropped stream, the pause before opening it again (views poll meanwhile). */
const REOPEN_MS = 2_000;

const listeners = new Set<() => void>();
const stateListeners = new Set<(open: boolean) => void>();
let connection: AbortController | null = null;
let open = false;

function setOpen(now: boolean): void {
  if (open === now) return;
  open = now;
  for (const l of stateListeners) l(now);
}

async function run(abort: AbortController): Promise<void> {
  while (!abort.signal.aborted) {
    try {
      const res = await send('GET', ostia('events'), { signal: abort.signal });
      const parser = new EventParser();
      const decoder = new TextDecoder();
      const reader = res.body!.getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        for (const e of parser.push(decoder.decode(value, { stream: true }))) {
          if (e.event === 'ready') setOpen(true);
          // A change, a deletion, or changes missed (resync): every view reads again.
          else for (const l of listeners) l();
        }
      }
    } catch {
      // Dropped or refused: the views poll until it is back.
    }
    setOpen(false);
    await new Promise((resolve) => setTimeout(resolve, REOPEN_MS));
  }
}

function connect(): void {
  connection = new AbortController();
  void run(connection);
}

function disconnect(): void {
  connection?.abort();
  connection = null;
  setOpen(false);
}

// A new session (log in, project switch, log out) streams with its own token, or not at all.
effect(() => {
  const s = session.value;
  if (!connection) return;
  disconnect();
  if (s && listeners.size) connect();
});

/** Calls `onChange` at each status change while subscribed, and `onState` when the stream opens or drops. */
export function subscribeStatusChanges(onChange: () => void, onState: (open: boolean) => void): () => void {
  listeners.add(onChange);
  stateListeners.add(onState);
  onState(open);
  if (!connection && session.value) connect();
  return () => {
    listeners.delete(onChange);
    stateListeners.delete(onState);
    if (!listeners.size) disconnect();
  };
}

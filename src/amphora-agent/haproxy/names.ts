/**
 * HAProxy proxy and server names, and the way back. Names are the objects' ids, so the stats
 * socket's rows (`pxname`, `svname`) map to API objects without a lookup table, and no
 * user-chosen name ever reaches the configuration.
 *
 * A backend is one pool as seen through one listener (`<pool id>:<listener id>`, as Octavia
 * names them): a pool may serve several listeners — the default pool of two, the redirect
 * target of a third — and the mode, timeouts and inserted headers of its backend are the
 * listener's. Runtime changes to a pool's members go to every backend of that pool.
 */
import { uuid } from './encoders.js';

export function frontendName(listenerId: string): string {
  return uuid('listener id', listenerId);
}

export function backendName(poolId: string, listenerId: string): string {
  return `${uuid('pool id', poolId)}:${uuid('listener id', listenerId)}`;
}

export function serverName(memberId: string): string {
  return uuid('member id', memberId);
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const ID = new RegExp(`^${UUID}$`);
const BACKEND = new RegExp(`^(${UUID}):(${UUID})$`);

/** The listener id of a frontend row, or null for a proxy the renderer did not name. */
export function parseFrontendName(name: string): string | null {
  return ID.test(name) ? name : null;
}

/** The pool and listener ids of a backend row, or null for a proxy the renderer did not name. */
export function parseBackendName(name: string): { poolId: string; listenerId: string } | null {
  const m = BACKEND.exec(name);
  return m ? { poolId: m[1]!, listenerId: m[2]! } : null;
}

/** The member id of a server row, or null (e.g. the `FRONTEND`/`BACKEND` summary rows). */
export function parseServerName(name: string): string | null {
  return ID.test(name) ? name : null;
}

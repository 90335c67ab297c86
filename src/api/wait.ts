/**
 * `GET /<object>/{id}?wait=N` (an Ostia extension): the answer is held while the object is
 * PENDING_*, for at most N seconds, and sent as soon as a change of its load balancer's tree
 * leaves it otherwise (or deletes it: a 404, as a poller would get). Each read is the GET's own
 * (same loader, same policy check), so waiting sees exactly what polling would.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiDeps } from './context.js';
import { apiError } from '../domain/errors.js';
import { StatusWaiting } from '../domain/defaults.js';
import { PendingStatuses } from '../domain/enums.js';
import { loadBalancerIdOf } from '../db/status-triggers.js';
import type { TableName } from '../db/schema.js';
import { Doorbell, statusWatchOf } from './status-watch.js';

const pending = (status: string) => (PendingStatuses as readonly string[]).includes(status);

/** The `wait` query in seconds (0 when absent); anything but whole seconds up to the maximum is a 400. */
export function waitSeconds(req: FastifyRequest): number {
  const raw = [(req.query as Record<string, string | string[] | undefined>).wait ?? []].flat().at(-1);
  if (raw === undefined) return 0;
  if (!/^\d{1,6}$/.test(raw) || Number(raw) > StatusWaiting.maxWaitSeconds) throw apiError('INVALID_WAIT', raw, StatusWaiting.maxWaitSeconds);
  return Number(raw);
}

/** Aborts when the client goes away, so a held answer stops reading for nobody, or when the API closes. */
export function clientGone(deps: ApiDeps, reply: FastifyReply): AbortSignal {
  const gone = new AbortController();
  reply.raw.once('close', () => gone.abort());
  return AbortSignal.any([gone.signal, statusWatchOf(deps.db.status).shutdown]);
}

export async function loadWaiting<Row extends { id: string; provisioning_status: string }>(
  deps: ApiDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  table: TableName,
  load: () => Promise<Row>,
): Promise<Row> {
  const seconds = waitSeconds(req);
  const first = await load();
  if (!seconds || !pending(first.provisioning_status)) return first;
  const lbId = await loadBalancerIdOf(deps.db.kysely, table, first.id);
  if (lbId === null) return first;
  const bell = new Doorbell();
  const stop = await statusWatchOf(deps.db.status).loadBalancer(lbId, bell.ring);
  const gone = clientGone(deps, reply);
  const deadline = Date.now() + seconds * 1000;
  try {
    for (;;) {
      // The first pass reads again after the watch began: a change since `first` is not missed.
      const row = await load();
      if (!pending(row.provisioning_status) || Date.now() >= deadline || gone.aborted) return row;
      await bell.next(deadline - Date.now(), gone);
    }
  } finally {
    stop();
  }
}

/**
 * Status changes as Server-Sent Events (Ostia extensions), instead of polling:
 * `GET /lbaas/loadbalancers/{id}/events` streams a load balancer's status tree each time a status
 * in it changes, and `GET /ostia/events[?project_id=]` every load balancer of a project (or, for
 * those who may list every project, of all of them) whose statuses change. Each is authorized
 * as its GET is (`/status`, the list of load balancers), and again every
 * `api.eventStreamRecheckSeconds` with the caller's token, so a token that expires or is revoked
 * ends the stream with the error its GET would get.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ApiDeps } from '../context.js';
import type { RequestContext } from '../../domain/context.js';
import { StatusWaiting } from '../../domain/defaults.js';
import { isApiError } from '../../domain/errors.js';
import { authorize } from '../../identity/policy.js';
import { errorBody, toApiError } from '../errors.js';
import { EventStream } from '../event-stream.js';
import { authorizeOwnedList, listedProject } from '../listing.js';
import { loadBalancerFor, parentLoadBalancer } from '../loaders.js';
import { Doorbell, statusWatchOf } from '../status-watch.js';
import { statusTree } from '../views/status-tree.js';
import { queryOf } from './ostia-extensions.js';

interface StreamPlan {
  /** Sends what changed since its last call; false ends the stream. */
  step(stream: EventStream): Promise<boolean>;
  /** Throws if the caller, as its token now says, may no longer read this stream. */
  recheck(ctx: RequestContext): void;
}

/**
 * Runs a stream opened after `watching` began: a first step, then one each time the doorbell
 * rang, with keep-alives and token checks between; an error (the database gone, a token
 * refused) is the stream's last event, with the body a GET would have had.
 */
async function runStream(deps: ApiDeps, req: FastifyRequest, reply: FastifyReply, bell: Doorbell, stop: () => void, plan: StreamPlan): Promise<void> {
  const stream = new EventStream(deps, reply);
  let keepAliveAt = Date.now() + StatusWaiting.keepAliveSeconds * 1000;
  const recheckMs = deps.config.api.eventStreamRecheckSeconds * 1000;
  let recheckAt = Date.now() + recheckMs;
  try {
    let rang = true;
    while (!stream.closed.aborted) {
      if (rang && !(await plan.step(stream))) break;
      rang = await bell.next(Math.min(keepAliveAt, recheckAt) - Date.now(), stream.closed);
      const now = Date.now();
      if (now >= recheckAt) {
        recheckAt = now + recheckMs;
        plan.recheck(await deps.authenticate(req.headers));
      }
      if (now >= keepAliveAt) {
        keepAliveAt = now + StatusWaiting.keepAliveSeconds * 1000;
        stream.keepAlive();
      }
    }
  } catch (e) {
    if (!isApiError(e)) req.log.error({ err: e }, 'event stream failed');
    stream.send('error', errorBody(toApiError(e as Error)));
  } finally {
    stop();
    stream.end();
  }
}

/** The load balancer fields a project's stream sends (those of its list that a status change moves). */
const LB_STATUS = ['id', 'name', 'project_id', 'provisioning_status', 'operating_status', 'status_reason'] as const;

/** At most this many load balancers read in one query of a project's stream. */
const READ_BATCH = 500;

export const loadBalancerEventRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  const db = deps.db.kysely;

  /**
   * `status` events carry `{"statuses": …}` as `GET …/status` answers it, less the counters
   * (the first at once, then one per change); `deleted` ends the stream when the load
   * balancer is gone.
   */
  app.get<{ Params: { id: string } }>('/loadbalancers/:id/events', async (req, reply) => {
    const lb = await loadBalancerFor(deps, req.ctx, req.params.id, 'get_status');
    const bell = new Doorbell();
    const stop = await statusWatchOf(deps.db.status).loadBalancer(lb.id, bell.ring);
    let last = '';
    await runStream(deps, req, reply, bell, stop, {
      async step(stream) {
        const now = await parentLoadBalancer(db, lb.id).catch((e: unknown) => {
          if (isApiError(e) && e.code === 'NOT_FOUND') return null;
          throw e;
        });
        if (!now) {
          stream.send('deleted', { loadbalancer: { id: lb.id } });
          return false;
        }
        const statuses = await statusTree(db, now, { stats: false });
        const json = JSON.stringify(statuses);
        if (json !== last) stream.send('status', { statuses });
        last = json;
        return true;
      },
      recheck: (ctx) => authorize(ctx, 'loadbalancer', 'get_status', lb.project_id),
    });
  });
};

export const projectEventRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  const db = deps.db.kysely;

  /**
   * `ready` once changes are watched (list the load balancers then, and miss none), a
   * `loadbalancer` event `{"loadbalancer": {id, name, project_id, provisioning_status,
   * operating_status[, status_reason]}}` each time one's statuses change, `deleted`
   * `{"loadbalancer": {"id"}}` when one is gone, and `resync` when changes may have been missed
   * (the database's notifications were lost for a while): list again.
   */
  app.get('/events', async (req, reply) => {
    const seeAll = authorizeOwnedList(req.ctx, 'loadbalancer');
    const project = listedProject(req.ctx, seeAll, queryOf(req, ['project_id']));
    const changed = new Set<string>();
    let resync = false;
    const bell = new Doorbell();
    const stop = await statusWatchOf(deps.db.status).project(project ?? null, (lb) => {
      if (lb === null) resync = true;
      else changed.add(lb);
      bell.ring();
    });
    const sent = new Map<string, string>();
    let ready = false;
    await runStream(deps, req, reply, bell, stop, {
      async step(stream) {
        if (!ready) stream.send('ready', { project_id: project ?? null });
        ready = true;
        if (resync) stream.send('resync', {});
        resync = false;
        const ids = [...changed];
        changed.clear();
        for (let i = 0; i < ids.length; i += READ_BATCH) {
          const batch = ids.slice(i, i + READ_BATCH);
          const rows = new Map((await db.selectFrom('load_balancer').select(LB_STATUS).where('id', 'in', batch).execute()).map((r) => [r.id, r]));
          for (const id of batch) {
            const row = rows.get(id);
            if (row && project !== undefined && row.project_id !== project) continue;
            if (!row || row.provisioning_status === 'DELETED') {
              if (sent.get(id) !== 'deleted') stream.send('deleted', { loadbalancer: { id } });
              sent.set(id, 'deleted');
              continue;
            }
            const { status_reason, ...always } = row;
            const view = { ...always, ...(status_reason !== null ? { status_reason } : {}) };
            const json = JSON.stringify(view);
            if (sent.get(id) !== json) stream.send('loadbalancer', { loadbalancer: view });
            sent.set(id, json);
          }
        }
        return true;
      },
      recheck(ctx) {
        const again = listedProject(ctx, authorizeOwnedList(ctx, 'loadbalancer'), { project_id: project });
        if (again !== project) authorize(ctx, 'loadbalancer', 'get_all-global', null);
      },
    });
  });
};

/**
 * /octavia/amphorae (admin only): list, show, delete (ERROR ones), failover, agent config
 * refresh and stats. Amphorae are written by providers that build them; the noop provider
 * builds none.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { ApiDeps } from '../context.js';
import type { AmphoraRow } from '../../db/records/amphora.js';
import { apiError } from '../../domain/errors.js';
import { authorize } from '../../identity/policy.js';
import type { Operation } from '../../provider-contract/operations.js';
import { listPage, parseListQuery, pickFields, fieldsOf, selfUrl, type AttrKind, type ListSpec } from '../listing.js';
import { amphoraView } from '../views/amphora.js';
import { amphoraStats } from '../views/stats.js';
import { change } from '../change.js';
import { deleteAmphora, failoverAmphora, refreshAmphoraConfig } from '../writes/amphorae.js';

const column = (name: keyof AmphoraRow, kind: AttrKind = 'string') => ({ column: name, kind });

export const amphoraList: ListSpec = {
  table: 'amphora',
  tagged: false,
  attributes: {
    id: column('id', 'uuid'),
    loadbalancer_id: column('load_balancer_id', 'uuid'),
    load_balancer_id: column('load_balancer_id', 'uuid'),
    compute_id: column('compute_id'),
    lb_network_ip: column('lb_network_ip'),
    vrrp_ip: column('vrrp_ip'),
    ha_ip: column('ha_ip'),
    vrrp_port_id: column('vrrp_port_id', 'uuid'),
    ha_port_id: column('ha_port_id', 'uuid'),
    cert_expiration: column('cert_expiration'),
    cert_busy: column('cert_busy', 'bool'),
    role: column('role'),
    status: column('status'),
    vrrp_interface: column('vrrp_interface'),
    vrrp_id: column('vrrp_id', 'int'),
    vrrp_priority: column('vrrp_priority', 'int'),
    cached_zone: column('cached_zone'),
    created_at: column('created_at'),
    updated_at: column('updated_at'),
    image_id: column('image_id'),
    compute_flavor: column('compute_flavor'),
    last_heartbeat_at: column('last_heartbeat_at', 'epoch-ms'),
    status_reason: column('status_reason'),
  },
};

type Query = Record<string, string | string[]>;

export const amphoraRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  const db = deps.db.kysely;

  /** DELETED amphorae are invisible, as in Octavia. */
  const load = async (id: string): Promise<AmphoraRow> => {
    const amp = await db.selectFrom('amphora').selectAll().where('id', '=', id).where('status', '!=', 'DELETED').executeTakeFirst();
    if (!amp) throw apiError('NOT_FOUND', 'Amphora', id);
    return amp;
  };

  /**
   * The load balancer whose provider runs jobs for this amphora, after that provider agreed
   * to the operation. Jobs belong to a load balancer, so an amphora bound to none (a spare,
   * which no Ostia provider builds) has nobody to fail it over or reconfigure it.
   */
  const ownerFor = async (amp: AmphoraRow, op: Operation) => {
    const lb = amp.load_balancer_id ? await db.selectFrom('load_balancer').select(['id', 'provider']).where('id', '=', amp.load_balancer_id).executeTakeFirst() : undefined;
    if (lb) deps.providers.forLoadBalancer(lb.provider).checks.operation?.(op);
    return lb;
  };
  const requireOwner = async (amp: AmphoraRow, op: Operation) => {
    const lb = await ownerFor(amp, op);
    if (!lb) throw apiError('CONFLICT', `Amphora ${amp.id} is not attached to a load balancer.`);
    return lb;
  };

  app.get('/amphorae', async (req) => {
    authorize(req.ctx, 'amphora', 'get_all');
    // project_id is no amphora column: it filters by the owning load balancer's project.
    const { project_id: projectParam, ...query } = req.query as Query;
    const projectId = projectParam === undefined ? undefined : [projectParam].flat().at(-1)!;
    const q = parseListQuery(query, amphoraList, deps.config.api.paginationMaxLimit);
    if (projectId !== undefined) q.passthrough.push(['project_id', projectId]);
    const page = await listPage<AmphoraRow>(
      db,
      amphoraList,
      q,
      (qb) => {
        const visible = qb.where('amphora.status', '!=', 'DELETED');
        return projectId === undefined ? visible : visible.where('amphora.load_balancer_id', 'in', db.selectFrom('load_balancer').select('id').where('project_id', '=', projectId));
      },
      selfUrl(req, deps.publicUrl()),
    );
    return { amphorae: page.rows.map((row) => pickFields(amphoraView(row), q.fields)), amphorae_links: page.links };
  });

  app.get<{ Params: { id: string } }>('/amphorae/:id', async (req) => {
    authorize(req.ctx, 'amphora', 'get_one');
    return { amphora: pickFields(amphoraView(await load(req.params.id)), fieldsOf(req)) };
  });

  app.delete<{ Params: { id: string } }>('/amphorae/:id', async (req, reply) => {
    authorize(req.ctx, 'amphora', 'delete');
    const amp = await load(req.params.id);
    const lb = await ownerFor(amp, 'amphora.delete');
    await change(deps, (trx) => deleteAmphora(trx, amp, lb));
    return reply.code(204).send();
  });

  app.put<{ Params: { id: string } }>('/amphorae/:id/failover', async (req, reply) => {
    authorize(req.ctx, 'amphora', 'put_failover');
    const amp = await load(req.params.id);
    const lb = await requireOwner(amp, 'amphora.failover');
    await change(deps, (trx) => failoverAmphora(trx, amp, lb));
    return reply.code(202).send();
  });

  app.put<{ Params: { id: string } }>('/amphorae/:id/config', async (req, reply) => {
    authorize(req.ctx, 'amphora', 'put_config');
    const amp = await load(req.params.id);
    const lb = await requireOwner(amp, 'amphora.config');
    await change(deps, (trx) => refreshAmphoraConfig(trx, amp, lb));
    return reply.code(202).send();
  });

  /** One row per listener the amphora served; an amphora that never reported has none: 404 as in Octavia. */
  app.get<{ Params: { id: string } }>('/amphorae/:id/stats', async (req) => {
    authorize(req.ctx, 'amphora', 'get_stats');
    const amp = await load(req.params.id);
    const rows = await amphoraStats(db, amp.id);
    if (!rows.length) throw apiError('NOT_FOUND', 'Amphora stats for', amp.id);
    return { amphora_stats: rows };
  });
};

/**
 * The Neutron look-ups real clients make before `loadbalancer create`
 * (`GET /v2.0/subnets?id=…` and friends), answered by the network service (catalog or noop).
 */
import { nameBasedUuid } from '../domain/ids.js';
import type { FastifyPluginAsync } from 'fastify';
import type { ApiDeps } from './context.js';
import { canSeeAllProjects } from '../identity/policy.js';

type Query = Record<string, string | string[] | undefined>;

/** Neutron filters are exact matches on any field; repeated values mean "any of". */
function matches(obj: Record<string, unknown>, query: Query): boolean {
  return Object.entries(query).every(([k, v]) => {
    if (v === undefined || k === 'fields' || k === 'limit' || k === 'marker') return true;
    const wanted = [v].flat();
    return wanted.includes(String(obj[k]));
  });
}

/** The ids a look-up asks for (`?id=a&id=b`): those the network service may have to pretend exist. */
function askedIds(query: Query): string[] {
  return query.id === undefined ? [] : [query.id].flat();
}

export const networkRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  const { network } = deps;
  const usable = (projects: readonly string[], projectId: string | null, all: boolean) => all || projects.length === 0 || (projectId !== null && projects.includes(projectId));

  app.get('/networks', async (req) => {
    const all = canSeeAllProjects(req.ctx);
    const db = deps.db.kysely;
    const networks = (await network.listNetworks(db, askedIds(req.query as Query)))
      .filter((n) => usable(n.projects, req.ctx.projectId, all))
      .map((n) => ({
        id: n.id, name: n.name, status: 'ACTIVE', admin_state_up: true, shared: n.projects.length === 0,
        subnets: n.subnetIds, project_id: n.projects[0] ?? '', tenant_id: n.projects[0] ?? '',
        'router:external': false, mtu: 1500, tags: [],
      }));
    return { networks: networks.filter((n) => matches(n, req.query as Query)) };
  });

  app.get('/subnets', async (req) => {
    const all = canSeeAllProjects(req.ctx);
    const db = deps.db.kysely;
    const subnets = [];
    for (const s of await network.listSubnets(db, askedIds(req.query as Query))) {
      if (!usable(network.projectsOf(s.network_id) ?? [], req.ctx.projectId, all)) continue;
      subnets.push({
        id: s.id, name: s.name, network_id: s.network_id, cidr: s.cidr, ip_version: s.ip_version,
        gateway_ip: s.gateway_ip, allocation_pools: s.allocation_pools, enable_dhcp: false,
        project_id: '', tenant_id: '', tags: [],
      });
    }
    return { subnets: subnets.filter((s) => matches(s, req.query as Query)) };
  });

  app.get('/ports', async (req) => {
    let q = deps.db.kysely.selectFrom('port').selectAll();
    if (!canSeeAllProjects(req.ctx)) q = q.where('project_id', '=', req.ctx.projectId ?? '');
    const rows = [...(await q.orderBy('created_at').execute()), ...(await network.unstoredPorts(deps.db.kysely, askedIds(req.query as Query)))];
    const ports = rows.map((p) => ({
      id: p.id, name: p.name, network_id: p.network_id, project_id: p.project_id, tenant_id: p.project_id,
      device_id: p.device_id, device_owner: p.device_owner, status: 'ACTIVE', admin_state_up: true,
      // A port nothing has taken yet holds no address, as Octavia's no-op driver's ports.
      fixed_ips: p.ip_address === null ? [] : [{ subnet_id: p.subnet_id, ip_address: p.ip_address }], qos_policy_id: p.qos_policy_id,
      security_groups: [], tags: [],
    }));
    return { ports: ports.filter((p) => matches(p, req.query as Query)) };
  });

  app.get('/qos/policies', async (req) => ({
    policies: network
      .listQosPolicies(askedIds(req.query as Query))
      .map((p) => ({ id: p.id, name: p.name, shared: true, rules: [], project_id: '', tenant_id: '', is_default: false, tags: [] }))
      .filter((p) => matches(p, req.query as Query)),
  }));

  app.get('/security-groups', async (req) => ({
    security_groups: network
      .listSecurityGroups(askedIds(req.query as Query))
      .map((g) => ({
        id: g.id, name: g.name, project_id: req.ctx.projectId ?? '', tenant_id: req.ctx.projectId ?? '',
        security_group_rules: (g.rules ?? []).map((rule, i) => ({ id: nameBasedUuid(`ostia:security-group-rule:${g.id}:${i}`), security_group_id: g.id, remote_group_id: null, ...rule })),
        tags: [],
      }))
      .filter((g) => matches(g, req.query as Query)),
  }));
};

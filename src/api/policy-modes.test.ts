/**
 * The README's role table through the API: each api.policy, each role held on project A,
 * representative endpoints answering 2xx or Octavia's 403.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, admin, PROJECT_A, PROJECT_B, type Harness } from '../../test/support/harness.js';
import { ROLE_TABLE, type Grant } from '../../test/support/role-table.js';
import { PolicyModes } from '../domain/context.js';
import { VIP_SUBNET_ID } from '../config.js';

interface Fixture {
  lbA: string;
  lbB: string;
  poolB: string;
}

interface Probe {
  what: string;
  openedBy: Grant[];
  send(h: Harness, f: Fixture, as: { project: string; roles: string[] }): ReturnType<Harness['request']>;
}

const READ: Grant[] = ['read own', 'read all'];
const probes: Probe[] = [
  { what: 'GET /v2/lbaas/providers', openedBy: READ, send: (h, _f, as) => h.request('GET', '/v2/lbaas/providers', { as }) },
  { what: 'GET /v2/lbaas/flavors', openedBy: READ, send: (h, _f, as) => h.request('GET', '/v2/lbaas/flavors', { as }) },
  { what: 'GET /v2/lbaas/availabilityzones', openedBy: READ, send: (h, _f, as) => h.request('GET', '/v2/lbaas/availabilityzones', { as }) },
  { what: 'GET /v2/lbaas/loadbalancers', openedBy: READ, send: (h, _f, as) => h.request('GET', '/v2/lbaas/loadbalancers', { as }) },
  { what: 'GET own load balancer', openedBy: READ, send: (h, f, as) => h.request('GET', `/v2/lbaas/loadbalancers/${f.lbA}`, { as }) },
  { what: 'GET own quota', openedBy: [...READ, 'quotas'], send: (h, _f, as) => h.request('GET', `/v2/lbaas/quotas/${PROJECT_A}`, { as }) },
  {
    what: 'PUT own load balancer',
    openedBy: ['write own'],
    send: (h, f, as) => h.request('PUT', `/v2/lbaas/loadbalancers/${f.lbA}`, { as, body: { loadbalancer: { description: as.roles.join(' ') } } }),
  },
  { what: "GET another project's load balancer", openedBy: ['read all'], send: (h, f, as) => h.request('GET', `/v2/lbaas/loadbalancers/${f.lbB}`, { as }) },
  { what: "GET another project's pool members", openedBy: ['read all', 'list members'], send: (h, f, as) => h.request('GET', `/v2/lbaas/pools/${f.poolB}/members`, { as }) },
  { what: 'GET /metrics', openedBy: ['read all'], send: (h, _f, as) => h.request('GET', '/metrics', { as }) },
  { what: "PUT another project's quota", openedBy: ['quotas'], send: (h, _f, as) => h.request('PUT', `/v2/lbaas/quotas/${PROJECT_B}`, { as, body: { quota: { load_balancer: -1 } } }) },
  { what: 'GET /v2/octavia/amphorae', openedBy: [], send: (h, _f, as) => h.request('GET', '/v2/octavia/amphorae', { as }) },
  { what: 'GET provider flavor capabilities', openedBy: [], send: (h, _f, as) => h.request('GET', '/v2/lbaas/providers/noop/flavor_capabilities', { as }) },
  { what: 'PUT load balancer failover', openedBy: [], send: (h, f, as) => h.request('PUT', `/v2/lbaas/loadbalancers/${f.lbA}/failover`, { as }) },
];

async function fixture(h: Harness): Promise<Fixture> {
  const create = async (url: string, body: object) => {
    const r = await h.request('POST', url, { as: admin, body });
    assert.equal(r.statusCode, 201, r.body);
    return Object.values(r.json() as Record<string, { id: string }>)[0]!.id;
  };
  const lbA = await create('/v2/lbaas/loadbalancers', { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, project_id: PROJECT_A } });
  const lbB = await create('/v2/lbaas/loadbalancers', { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, project_id: PROJECT_B } });
  await h.settled(lbA);
  await h.settled(lbB);
  const poolB = await create('/v2/lbaas/pools', { pool: { loadbalancer_id: lbB, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' } });
  await h.settled(lbB);
  return { lbA, lbB, poolB };
}

for (const mode of PolicyModes) {
  test(`api.policy ${mode}: every role of the README table, through the API`, async () => {
    const h = await startHarness({ api: { policy: mode } });
    try {
      const f = await fixture(h);
      for (const [role, byMode] of Object.entries(ROLE_TABLE)) {
        const grants = byMode[mode];
        const as = { project: PROJECT_A, roles: role ? [role] : [] };
        for (const probe of probes) {
          const expected = grants.includes('everything') || probe.openedBy.some((g) => grants.includes(g));
          const r = await probe.send(h, f, as);
          const where = `${mode}: '${role}' ${probe.what}`;
          if (expected) {
            assert.ok(r.statusCode >= 200 && r.statusCode < 300, `${where}: ${r.statusCode} ${r.body}`);
            // Whatever changed the load balancer, it is settled before the next probe.
            if (r.statusCode === 200 || r.statusCode === 202) await h.settled(f.lbA);
          } else {
            assert.equal(r.statusCode, 403, `${where}: ${r.statusCode} ${r.body}`);
            assert.equal(r.json().faultstring, 'Policy does not allow this request to be performed.', where);
          }
          if (probe.what === 'GET /v2/lbaas/loadbalancers' && expected) {
            const ids = (r.json().loadbalancers as Array<{ id: string }>).map((lb) => lb.id);
            const all = grants.includes('everything') || grants.includes('read all');
            assert.deepEqual(ids.includes(f.lbB), all, `${where}: lists another project's load balancer only when reading all`);
            assert.ok(ids.includes(f.lbA), where);
          }
        }
      }
    } finally {
      await h.close();
    }
  });
}

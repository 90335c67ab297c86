import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startHarness, admin, memberA, PROJECT_A, PROJECT_B, type Harness } from '../../../test/support/harness.js';
import { VIP_SUBNET_ID } from '../../config.js';
import { insertAmphora as insertAmphoraRow } from '../../../test/support/health-rows.js';
import type { AmphoraRow } from '../../db/records/amphora.js';

let h: Harness;
let lbId: string;
before(async () => {
  h = await startHarness();
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } }, as: memberA });
  lbId = r.json().loadbalancer.id;
  await h.settled(lbId);
});
after(() => h.close());

// The noop provider builds no amphorae, so the rows a real provider would write are inserted here.
async function insertAmphora(patch: Partial<AmphoraRow> = {}): Promise<AmphoraRow> {
  return insertAmphoraRow(h, lbId, {
    lb_network_ip: '192.168.0.5', vrrp_id: 1, cached_zone: 'nova', image_id: randomUUID(), compute_flavor: 'm1.amphora',
    last_heartbeat_at: null, ...patch,
  });
}

const jobsFor = (operation: string) =>
  h.runtime.db.kysely.selectFrom('job').select(['load_balancer_id', 'payload']).where('operation', '=', operation).execute();

test('show renders every field with loadbalancer_id; DELETED amphorae are 404', async () => {
  const amp = await insertAmphora();
  const r = await h.request('GET', `/v2/octavia/amphorae/${amp.id}`, { as: admin });
  assert.equal(r.statusCode, 200);
  assert.deepEqual(r.json(), {
    amphora: {
      id: amp.id, loadbalancer_id: lbId, compute_id: amp.compute_id, lb_network_ip: '192.168.0.5', vrrp_ip: null, ha_ip: null,
      vrrp_port_id: null, ha_port_id: null, cert_expiration: '2030-01-01T00:00:00', cert_busy: false, role: 'STANDALONE',
      status: 'ALLOCATED', vrrp_interface: null, vrrp_id: 1, vrrp_priority: null, cached_zone: 'nova',
      created_at: '2025-01-01T00:00:00', updated_at: null, image_id: amp.image_id, compute_flavor: 'm1.amphora',
      last_heartbeat_at: null, status_reason: null,
    },
  });
  assert.deepEqual((await h.request('GET', `/v2.0/octavia/amphorae/${amp.id}?fields=status`, { as: admin })).json(), { amphora: { status: 'ALLOCATED' } });
  const deleted = await insertAmphora({ status: 'DELETED' });
  const gone = await h.request('GET', `/v2/octavia/amphorae/${deleted.id}`, { as: admin });
  assert.equal(gone.statusCode, 404);
  assert.equal(gone.json().faultstring, `Amphora ${deleted.id} not found.`);
});

test('list filters on columns, loadbalancer_id and the owning project; never shows DELETED', async () => {
  const spare = await insertAmphora({ load_balancer_id: null, status: 'READY', role: null });
  const list = async (query: string) => ((await h.request('GET', `/v2/octavia/amphorae${query}`, { as: admin })).json().amphorae as Array<{ id: string; status: string }>);
  const all = await list('');
  assert.ok(all.every((a) => a.status !== 'DELETED'));
  assert.ok(all.some((a) => a.id === spare.id));
  assert.deepEqual((await list('?status=READY')).map((a) => a.id), [spare.id]);
  const ofLb = await list(`?loadbalancer_id=${lbId}`);
  assert.ok(ofLb.length >= 1 && !ofLb.some((a) => a.id === spare.id));
  assert.deepEqual((await list(`?project_id=${PROJECT_A}`)).map((a) => a.id).sort(), ofLb.map((a) => a.id).sort());
  assert.deepEqual(await list(`?project_id=${PROJECT_B}`), []);
  const page = (await h.request('GET', `/v2/octavia/amphorae?project_id=${PROJECT_A}&limit=1`, { as: admin })).json();
  assert.equal(page.amphorae.length, 1);
  assert.match(page.amphorae_links[0].href, new RegExp(`project_id=${PROJECT_A}`));
  assert.equal((await h.request('GET', '/v2/octavia/amphorae?bogus=1', { as: admin })).statusCode, 400);
});

test('Ostia adds when the last heartbeat arrived (ISO 8601 UTC) and why it was failed over: shown, filtered, sorted, picked by fields', async () => {
  const heard = Date.parse('2025-03-04T05:06:07.089Z');
  const reason = 'no heartbeat for 61.0 s';
  const silent = await insertAmphora({ last_heartbeat_at: heard, status_reason: reason });
  const later = await insertAmphora({ last_heartbeat_at: heard + 1000 });
  const shown = (await h.request('GET', `/v2/octavia/amphorae/${silent.id}?fields=last_heartbeat_at&fields=status_reason`, { as: admin })).json();
  assert.deepEqual(shown, { amphora: { last_heartbeat_at: '2025-03-04T05:06:07.089Z', status_reason: reason } });
  const ids = async (query: string) => {
    const r = await h.request('GET', `/v2/octavia/amphorae?loadbalancer_id=${lbId}&${query}`, { as: admin });
    assert.equal(r.statusCode, 200, r.body);
    return (r.json().amphorae as Array<{ id: string }>).map((a) => a.id);
  };
  assert.deepEqual(await ids('last_heartbeat_at=2025-03-04T05:06:07.089Z'), [silent.id]);
  // Without a zone it is UTC, as every Ostia timestamp; with one, converted.
  assert.deepEqual(await ids('last_heartbeat_at=2025-03-04T05:06:08.089'), [later.id]);
  assert.deepEqual(await ids('last_heartbeat_at=2025-03-04T07:06:08.089%2B02:00'), [later.id]);
  assert.deepEqual(await ids(`status_reason=${encodeURIComponent(reason)}`), [silent.id]);
  const sorted = await ids('sort=last_heartbeat_at:desc');
  assert.ok(sorted.indexOf(later.id) < sorted.indexOf(silent.id), String(sorted));
  const bad = await h.request('GET', '/v2/octavia/amphorae?last_heartbeat_at=yesterday', { as: admin });
  assert.equal(bad.statusCode, 400);
  assert.equal(bad.json().faultstring, 'One or more arguments are either duplicate or invalid');
});

test('every amphora operation is admin-only', async () => {
  const amp = await insertAmphora();
  for (const [method, url] of [
    ['GET', '/v2/octavia/amphorae'],
    ['GET', `/v2/octavia/amphorae/${amp.id}`],
    ['DELETE', `/v2/octavia/amphorae/${amp.id}`],
    ['PUT', `/v2/octavia/amphorae/${amp.id}/failover`],
    ['PUT', `/v2/octavia/amphorae/${amp.id}/config`],
    ['GET', `/v2/octavia/amphorae/${amp.id}/stats`],
  ] as const) {
    const r = await h.request(method, url, { as: memberA });
    assert.equal(r.statusCode, 403, `${method} ${url}`);
  }
});

test('DELETE needs an ERROR amphora: it goes PENDING_DELETE and its provider is asked to remove it', async () => {
  const busy = await insertAmphora({ status: 'ALLOCATED' });
  const refused = await h.request('DELETE', `/v2/octavia/amphorae/${busy.id}`, { as: admin });
  assert.equal(refused.statusCode, 409);
  assert.equal(refused.json().faultstring, `amphora ${busy.id} is immutable and cannot be updated.`);

  const failed = await insertAmphora({ status: 'ERROR' });
  const r = await h.request('DELETE', `/v2/octavia/amphorae/${failed.id}`, { as: admin });
  assert.equal(r.statusCode, 204);
  const row = await h.runtime.db.kysely.selectFrom('amphora').select('status').where('id', '=', failed.id).executeTakeFirstOrThrow();
  assert.equal(row.status, 'PENDING_DELETE');
  assert.deepEqual(await jobsFor('amphora.delete'), [{ load_balancer_id: lbId, payload: JSON.stringify({ amphora_id: failed.id }) }]);
  await h.settled(lbId);

  const spare = await insertAmphora({ status: 'ERROR', load_balancer_id: null });
  assert.equal((await h.request('DELETE', `/v2/octavia/amphorae/${spare.id}`, { as: admin })).statusCode, 204);
  assert.equal((await h.request('GET', `/v2/octavia/amphorae/${spare.id}`, { as: admin })).statusCode, 404);
  const missing = await h.request('DELETE', `/v2/octavia/amphorae/${randomUUID()}`, { as: admin });
  assert.equal(missing.statusCode, 404);
});

test('failover locks the owning load balancer and enqueues amphora.failover', async () => {
  const amp = await insertAmphora();
  const r = await h.request('PUT', `/v2/octavia/amphorae/${amp.id}/failover`, { as: admin });
  assert.equal(r.statusCode, 202);
  assert.equal(r.body, '');
  assert.deepEqual(await jobsFor('amphora.failover'), [{ load_balancer_id: lbId, payload: JSON.stringify({ amphora_id: amp.id }) }]);
  assert.equal(await h.settled(lbId), 'ACTIVE');

  await h.runtime.db.kysely.updateTable('load_balancer').set({ provisioning_status: 'PENDING_UPDATE' }).where('id', '=', lbId).execute();
  const locked = await h.request('PUT', `/v2/octavia/amphorae/${amp.id}/failover`, { as: admin });
  assert.equal(locked.statusCode, 409);
  assert.equal(locked.json().faultstring, `Load Balancer ${lbId} is immutable and cannot be updated.`);
  await h.runtime.db.kysely.updateTable('load_balancer').set({ provisioning_status: 'ACTIVE' }).where('id', '=', lbId).execute();

  const spare = await insertAmphora({ load_balancer_id: null, status: 'READY' });
  const unowned = await h.request('PUT', `/v2/octavia/amphorae/${spare.id}/failover`, { as: admin });
  assert.equal(unowned.statusCode, 409);
  assert.equal(unowned.json().faultstring, `Amphora ${spare.id} is not attached to a load balancer.`);
});

test('config enqueues amphora.config without touching statuses', async () => {
  const amp = await insertAmphora();
  const r = await h.request('PUT', `/v2/octavia/amphorae/${amp.id}/config`, { as: admin });
  assert.equal(r.statusCode, 202);
  assert.deepEqual(await jobsFor('amphora.config'), [{ load_balancer_id: lbId, payload: JSON.stringify({ amphora_id: amp.id }) }]);
  const row = await h.runtime.db.kysely.selectFrom('amphora').select('status').where('id', '=', amp.id).executeTakeFirstOrThrow();
  assert.equal(row.status, 'ALLOCATED');
  await h.settled(lbId);
});

test('stats: an amphora that never reported answers the "no stats" 404 (reported stats: src/providers/amphora/health/stats.test.ts)', async () => {
  const amp = await insertAmphora();
  const r = await h.request('GET', `/v2/octavia/amphorae/${amp.id}/stats`, { as: admin });
  assert.equal(r.statusCode, 404);
  assert.equal(r.json().faultstring, `Amphora stats for ${amp.id} not found.`);
  const id = randomUUID();
  assert.equal((await h.request('GET', `/v2/octavia/amphorae/${id}/stats`, { as: admin })).json().faultstring, `Amphora ${id} not found.`);
});

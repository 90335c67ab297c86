/**
 * The amphora provider under compute.driver noop, through the real runtime (API, worker, CA,
 * SQLite): the flows build and retire amphora rows as Octavia's do with its no-op compute and
 * amphora drivers, ACTIVE_STANDBY included, and the admin amphora API works on them; nothing is
 * booted and nothing reports health, so operating statuses stay OFFLINE.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startHarness, NOOP_COMPUTE_AMPHORA, admin, memberA, type Harness } from '../../../test/support/harness.js';
import { VIP_SUBNET_ID } from '../../config.js';
import { ACTIVE_STANDBY_REFUSAL } from './capabilities.js';
import { NOOP_COMPUTE_DESCRIPTION_SUFFIX } from './driver.js';
import { jobAmphoraId } from './steps.js';

let h: Harness;

before(async () => {
  h = await startHarness(NOOP_COMPUTE_AMPHORA);
});
after(async () => {
  await h?.close();
});

const db = () => h.runtime.db.kysely;
/** Live amphorae of a load balancer, as the admin API lists them (DELETED ones are hidden). */
async function amphoraeOf(lbId: string): Promise<Array<Record<string, any>>> {
  const r = await h.request('GET', `/v2/octavia/amphorae?loadbalancer_id=${lbId}`, { as: admin });
  assert.equal(r.statusCode, 200, r.body);
  return (r.json().amphorae as Array<Record<string, any>>).sort((a, b) => String(a.role).localeCompare(String(b.role)));
}

async function createLb(extra: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, provider: 'amphora', ...extra } }, as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  const lb = r.json().loadbalancer;
  assert.equal(await h.settled(lb.id), 'ACTIVE', JSON.stringify(await db().selectFrom('load_balancer').select('provisioning_status').where('id', '=', lb.id).executeTakeFirst()));
  return lb;
}

let haFlavor: string | undefined;
async function activeStandbyFlavor(): Promise<string> {
  if (haFlavor) return haFlavor;
  const fp = await h.request('POST', '/v2/lbaas/flavorprofiles', {
    body: { flavorprofile: { name: 'ha', provider_name: 'amphora', flavor_data: '{"loadbalancer_topology": "ACTIVE_STANDBY"}' } },
    as: admin,
  });
  assert.equal(fp.statusCode, 201, fp.body);
  const fl = await h.request('POST', '/v2/lbaas/flavors', { body: { flavor: { name: 'ha', flavor_profile_id: fp.json().flavorprofile.id } }, as: admin });
  assert.equal(fl.statusCode, 201, fl.body);
  haFlavor = fl.json().flavor.id as string;
  return haFlavor;
}

const settledAgain = async (lbId: string) => assert.equal(await h.settled(lbId), 'ACTIVE');
const DAY_MS = 86_400_000;

test('the amphora provider says it is a test mode without a data plane, with no comma in what it adds', async () => {
  const r = await h.request('GET', '/v2/lbaas/providers', { as: memberA });
  const amphora = (r.json().providers as Array<{ name: string; description: string }>).find((p) => p.name === 'amphora')!;
  assert.ok(amphora.description.endsWith(NOOP_COMPUTE_DESCRIPTION_SUFFIX), amphora.description);
  assert.match(amphora.description, /no data plane/);
  // Tools split provider descriptions on commas, so the whole answer, base text and suffix, must have none.
  assert.ok(!amphora.description.includes(','), amphora.description);
});

test('SINGLE: one STANDALONE amphora is ALLOCATED with a certificate and a management address; statuses stay OFFLINE and NO_MONITOR; nothing is booted', async () => {
  const lb = await createLb({
    listeners: [{ protocol: 'HTTP', protocol_port: 80, default_pool: { name: 'web', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members: [{ address: '127.32.0.1', protocol_port: 8080 }] } }],
  });
  const [amp, ...others] = await amphoraeOf(lb.id);
  assert.equal(others.length, 0);
  assert.equal(amp!.role, 'STANDALONE');
  assert.equal(amp!.status, 'ALLOCATED');
  assert.match(amp!.compute_id, /^noop-[0-9a-f]{32}$/);
  assert.match(amp!.lb_network_ip, /^127\.80\./);
  assert.equal(amp!.ha_ip, lb.vip_address);
  assert.equal(amp!.ha_port_id, lb.vip_port_id);
  // Octavia's no-op drivers: vrrp_id 1 on every amphora, the VIP as VRRP address on an invented port.
  assert.deepEqual([amp!.vrrp_ip, amp!.vrrp_id, amp!.vrrp_priority, amp!.vrrp_interface], [lb.vip_address, 1, null, null]);
  assert.match(amp!.vrrp_port_id, /^[0-9a-f-]{36}$/);
  // A real certificate from the CA, valid for amphora.certValidityDays (30, as Octavia's default).
  const days = (Date.parse(`${amp!.cert_expiration}Z`) - Date.now()) / DAY_MS;
  assert.ok(days > 29 && days <= 30, `certificate expires in ${days} days`);
  const row = await db().selectFrom('amphora').select(['cert_serial', 'config_version']).where('id', '=', amp!.id).executeTakeFirstOrThrow();
  assert.ok(row.cert_serial);
  assert.ok(row.config_version >= 1, 'the configuration was pushed (to the no-op client)');

  const status = (await h.request('GET', `/v2/lbaas/loadbalancers/${lb.id}/status`, { as: memberA })).json().statuses.loadbalancer;
  assert.equal(status.operating_status, 'OFFLINE');
  assert.equal(status.listeners[0].operating_status, 'OFFLINE');
  assert.equal(status.listeners[0].pools[0].operating_status, 'OFFLINE');
  assert.equal(status.listeners[0].pools[0].members[0].operating_status, 'NO_MONITOR');
  const stats = (await h.request('GET', `/v2/lbaas/loadbalancers/${lb.id}/stats`, { as: memberA })).json().stats;
  assert.deepEqual(stats, { active_connections: 0, bytes_in: 0, bytes_out: 0, request_errors: 0, total_connections: 0 });
  // Nothing was booted: the local driver's amphora directory was never made.
  assert.equal(existsSync(join(h.config.dataDir, 'amphorae')), false);
});

test('ACTIVE_STANDBY: a MASTER and a BACKUP with Octavia\'s priorities and VRRP fields', async () => {
  const lb = await createLb({ flavor_id: await activeStandbyFlavor() });
  const [backup, master, ...others] = await amphoraeOf(lb.id);
  assert.equal(others.length, 0);
  assert.deepEqual([master!.role, master!.vrrp_priority, backup!.role, backup!.vrrp_priority], ['MASTER', 100, 'BACKUP', 90]);
  for (const amp of [master!, backup!]) {
    assert.equal(amp.status, 'ALLOCATED');
    assert.equal(amp.vrrp_id, 1);
    assert.equal(amp.vrrp_ip, lb.vip_address);
    assert.equal(amp.ha_ip, lb.vip_address);
    assert.equal(amp.ha_port_id, lb.vip_port_id);
    // Octavia's no-op amphora driver finds no interface for the VRRP address.
    assert.equal(amp.vrrp_interface, null);
    assert.ok(amp.cert_expiration);
  }
  assert.notEqual(master!.lb_network_ip, backup!.lb_network_ip);
  assert.notEqual(master!.id, backup!.id);
});

test('admin amphora API: show, configure, failover of one amphora and of the load balancer, stats (404 as Octavia), delete removes them', async () => {
  const lb = await createLb({ flavor_id: await activeStandbyFlavor(), listeners: [{ protocol: 'HTTP', protocol_port: 80 }] });
  const [backup, master] = await amphoraeOf(lb.id);

  const shown = await h.request('GET', `/v2/octavia/amphorae/${master!.id}`, { as: admin });
  assert.equal(shown.statusCode, 200);
  assert.equal(shown.json().amphora.role, 'MASTER');
  assert.equal((await h.request('GET', `/v2/octavia/amphorae/${master!.id}`, { as: memberA })).statusCode, 403);

  const versionOf = async (id: string) => (await db().selectFrom('amphora').select('config_version').where('id', '=', id).executeTakeFirstOrThrow()).config_version;
  const before = await versionOf(master!.id);
  assert.equal((await h.request('PUT', `/v2/octavia/amphorae/${master!.id}/config`, { as: admin })).statusCode, 202);
  for (let i = 0; (await versionOf(master!.id)) === before; i++) {
    assert.ok(i < 1000, 'the configure job never pushed');
    await new Promise((r) => setTimeout(r, 10));
  }

  const stats = await h.request('GET', `/v2/octavia/amphorae/${master!.id}/stats`, { as: admin });
  assert.equal(stats.statusCode, 404);
  assert.equal(stats.json().faultstring, `Amphora stats for ${master!.id} not found.`);

  // Amphora failover: the MASTER is rebuilt as a new BACKUP; the BACKUP, which keepalived gave the VIP, becomes the MASTER.
  assert.equal((await h.request('PUT', `/v2/octavia/amphorae/${master!.id}/failover`, { as: admin })).statusCode, 202);
  await settledAgain(lb.id);
  const [backup2, master2, ...more] = await amphoraeOf(lb.id);
  assert.equal(more.length, 0);
  assert.equal(master2!.id, backup!.id, 'the survivor is the MASTER');
  assert.deepEqual([master2!.role, master2!.vrrp_priority, master2!.status], ['MASTER', 100, 'ALLOCATED']);
  assert.ok(backup2!.id !== master!.id && backup2!.id !== backup!.id, 'a new amphora');
  assert.deepEqual([backup2!.role, backup2!.vrrp_priority, backup2!.status, backup2!.vrrp_ip], ['BACKUP', 90, 'ALLOCATED', lb.vip_address]);
  assert.equal((await h.request('GET', `/v2/octavia/amphorae/${master!.id}`, { as: admin })).statusCode, 404);

  // Load balancer failover: the standby is replaced first, then the active, so one half serves throughout.
  assert.equal((await h.request('PUT', `/v2/lbaas/loadbalancers/${lb.id}/failover`, { as: admin })).statusCode, 202);
  await settledAgain(lb.id);
  const pair = await amphoraeOf(lb.id);
  assert.deepEqual(pair.map((a) => a.role), ['BACKUP', 'MASTER']);
  assert.ok(pair.every((a) => a.id !== master2!.id && a.id !== backup2!.id && a.status === 'ALLOCATED'));
  const job = await db().selectFrom('job').select('id').where('load_balancer_id', '=', lb.id).where('operation', '=', 'loadbalancer.failover').executeTakeFirstOrThrow();
  const steps = (await db().selectFrom('job_step').select('step').where('job_id', '=', job.id).orderBy('started_at').execute()).map((s) => s.step);
  assert.equal(steps.filter((s) => s === 'retire-old-amphorae').length, 2, steps.join(', '));
  // The first round rebuilt the standby, and its amphora became the MASTER when the second round replaced the active.
  assert.equal(pair.find((a) => a.role === 'MASTER')!.id, jobAmphoraId(job.id, 0));
  assert.equal(pair.find((a) => a.role === 'BACKUP')!.id, jobAmphoraId(job.id, 2));

  assert.equal((await h.request('DELETE', `/v2/lbaas/loadbalancers/${lb.id}?cascade=true`, { as: memberA })).statusCode, 204);
  assert.equal(await h.settled(lb.id), 'DELETED');
  assert.deepEqual(await amphoraeOf(lb.id), []);
  const left = await db().selectFrom('amphora').select('status').where('load_balancer_id', '=', lb.id).execute();
  assert.ok(left.length >= 5 && left.every((a) => a.status === 'DELETED'), JSON.stringify(left));
  // Their management addresses are free again.
  const ports = await db().selectFrom('port').select('device_id').where('device_id', 'in', [...pair.map((a) => a.id), backup!.id, master!.id, master2!.id]).execute();
  assert.deepEqual(ports, []);
});

test('with amphorae that run (compute.driver local) ACTIVE_STANDBY stays refused, with its message', async () => {
  const local = await startHarness({ api: { enabledProviders: ['noop', 'amphora'] } });
  try {
    const r = await local.request('POST', '/v2/lbaas/flavorprofiles', {
      body: { flavorprofile: { name: 'ha', provider_name: 'amphora', flavor_data: '{"loadbalancer_topology": "ACTIVE_STANDBY"}' } },
      as: admin,
    });
    assert.equal(r.statusCode, 501, r.body);
    assert.match(r.json().faultstring, new RegExp(ACTIVE_STANDBY_REFUSAL.replace(/[.()]/g, '\\$&')));
    const providers = (await local.request('GET', '/v2/lbaas/providers', { as: memberA })).json().providers as Array<{ name: string; description: string }>;
    assert.ok(!providers.find((p) => p.name === 'amphora')!.description.includes('test mode'));
  } finally {
    await local.close();
  }
});

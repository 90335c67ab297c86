/**
 * PUT /v2/lbaas/loadbalancers/{id}/migrate through the real runtime (API, worker, SQLite), the
 * amphora provider under compute.driver noop: the flows replace the amphorae as the placement moved
 * to asks, and the load balancer keeps its VIP; refusals are Octavia's error body and change nothing.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startHarness, NOOP_COMPUTE_AMPHORA, admin, memberA, memberB, type Harness } from '../../../test/support/harness.js';
import { VIP_SUBNET_ID } from '../../config.js';

let h: Harness;
before(async () => {
  h = await startHarness(NOOP_COMPUTE_AMPHORA);
});
after(() => h.close());

const db = () => h.runtime.db.kysely;
type Obj = Record<string, any>;

async function createLb(extra: Obj = {}): Promise<Obj> {
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, provider: 'amphora', ...extra } }, as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  const lb = r.json().loadbalancer;
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  return lb;
}

async function flavor(provider: string, data: Obj): Promise<string> {
  const fp = await h.request('POST', '/v2/lbaas/flavorprofiles', { body: { flavorprofile: { name: `fp-${provider}`, provider_name: provider, flavor_data: JSON.stringify(data) } }, as: admin });
  assert.equal(fp.statusCode, 201, fp.body);
  const fl = await h.request('POST', '/v2/lbaas/flavors', { body: { flavor: { name: `fl-${Math.random()}`, flavor_profile_id: fp.json().flavorprofile.id } }, as: admin });
  assert.equal(fl.statusCode, 201, fl.body);
  return fl.json().flavor.id as string;
}

const migrate = (id: string, migration: Obj, as = memberA) => h.request('PUT', `/v2/lbaas/loadbalancers/${id}/migrate`, { body: { migration }, as });

/** The live amphorae of a load balancer, roles sorted. */
async function amphorae(lbId: string) {
  return db().selectFrom('amphora').select(['id', 'role', 'compute_flavor', 'status']).where('load_balancer_id', '=', lbId).where('status', '!=', 'DELETED').orderBy('role').execute();
}

test('SINGLE → ACTIVE_STANDBY → SINGLE by topology: new amphorae, the old ones retired, the VIP kept', async () => {
  const lb = await createLb({ listeners: [{ protocol: 'HTTP', protocol_port: 80 }] });
  const [single] = await amphorae(lb.id);
  assert.equal(single!.role, 'STANDALONE');

  const r = await migrate(lb.id, { topology: 'ACTIVE_STANDBY' });
  assert.equal(r.statusCode, 202, r.body);
  const answered = r.json().loadbalancer;
  assert.equal(answered.provisioning_status, 'PENDING_UPDATE');
  assert.equal(answered.vip_address, lb.vip_address);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  const pair = await amphorae(lb.id);
  assert.deepEqual(pair.map((a) => a.role), ['BACKUP', 'MASTER']);
  assert.ok(!pair.some((a) => a.id === single!.id), 'the STANDALONE amphora was retired');
  const row = await db().selectFrom('load_balancer').select(['topology', 'vip_address', 'vip_port_id', 'status_reason']).where('id', '=', lb.id).executeTakeFirstOrThrow();
  assert.deepEqual(row, { topology: 'ACTIVE_STANDBY', vip_address: lb.vip_address, vip_port_id: lb.vip_port_id, status_reason: null });
  const steps = (await db().selectFrom('job_step').select('step').where('load_balancer_id', '=', lb.id).orderBy('started_at').execute()).map((s) => s.step);
  for (const step of ['create-amphora', 'push-config', 'claim-vip', 'retire-old-amphorae', 'mark-active']) assert.ok(steps.includes(step), `${step} in the trace: ${steps.join(', ')}`);

  assert.equal((await migrate(lb.id, { topology: 'SINGLE' })).statusCode, 202);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  assert.deepEqual((await amphorae(lb.id)).map((a) => a.role), ['STANDALONE']);
});

test('a flavor move builds amphorae of the new flavor, and the load balancer shows it once ACTIVE', async () => {
  const big = await flavor('amphora', { compute_flavor: 'big' });
  const lb = await createLb();
  assert.equal((await migrate(lb.id, { flavor_id: big })).statusCode, 202);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  const [amp, ...others] = await amphorae(lb.id);
  assert.equal(others.length, 0);
  assert.equal(amp!.compute_flavor, 'big');
  const shown = (await h.request('GET', `/v2/lbaas/loadbalancers/${lb.id}`, { as: memberA })).json().loadbalancer;
  assert.equal(shown.flavor_id, big);
  // Pairs move half by half, as a load balancer failover does: a MASTER and a BACKUP throughout.
  const haBig = await flavor('amphora', { compute_flavor: 'ha-big', loadbalancer_topology: 'ACTIVE_STANDBY' });
  const haSmall = await flavor('amphora', { compute_flavor: 'ha-small', loadbalancer_topology: 'ACTIVE_STANDBY' });
  assert.equal((await migrate(lb.id, { flavor_id: haSmall })).statusCode, 202);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  assert.equal((await migrate(lb.id, { flavor_id: haBig })).statusCode, 202);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  const moved = await amphorae(lb.id);
  assert.deepEqual(moved.map((a) => [a.role, a.compute_flavor]), [['BACKUP', 'ha-big'], ['MASTER', 'ha-big']]);
  const job = await db().selectFrom('job').select('id').where('load_balancer_id', '=', lb.id).where('operation', '=', 'loadbalancer.migrate').orderBy('created_at', 'desc').executeTakeFirstOrThrow();
  const rounds = await db().selectFrom('job_step').select('step').where('job_id', '=', job.id).where('step', '=', 'create-amphora').execute();
  assert.equal(rounds.length, 2, 'the standby, then the active');
});

test('refusals: Octavia\'s error body, the load balancer still ACTIVE and no job enqueued', async () => {
  const lb = await createLb();
  const noopFlavor = await flavor('noop', {});
  const jobs = async () => (await db().selectFrom('job').select('id').where('load_balancer_id', '=', lb.id).where('operation', '=', 'loadbalancer.migrate').execute()).length;
  const cases: Array<[Obj, number, RegExp]> = [
    [{}, 400, /names at least one of provider, flavor_id and topology/],
    [{ topology: 'SINGLE' }, 400, /already built with provider amphora, no flavor, topology SINGLE: nothing to move/],
    [{ topology: 'TRIPLE' }, 400, /Invalid input for field\/attribute topology/],
    [{ flavor_id: '11111111-2222-3333-4444-555555555555' }, 400, /Invalid flavor_id/],
    [{ provider: 'amphora', flavor_id: noopFlavor }, 400, /Flavor '.*' is not compatible with provider 'amphora'/],
    [{ provider: 'nope' }, 400, /Provider 'nope' is not enabled/],
    [{ provider: 'noop', topology: 'ACTIVE_STANDBY' }, 400, /provider 'noop' builds no amphorae/],
    [{ provider: 'noop' }, 501, /moves go between the amphora and ovn providers/],
    [{ bogus: 1 }, 400, /Unknown attribute/],
  ];
  for (const [body, status, text] of cases) {
    const r = await migrate(lb.id, body);
    assert.equal(r.statusCode, status, `${JSON.stringify(body)}: ${r.body}`);
    assert.match(r.json().faultstring, text);
    assert.ok('debuginfo' in r.json());
  }
  assert.equal((await migrate(lb.id, { topology: 'ACTIVE_STANDBY' }, memberB)).statusCode, 403);
  assert.equal(await jobs(), 0);
  const row = await db().selectFrom('load_balancer').select(['provisioning_status', 'topology', 'flavor_id']).where('id', '=', lb.id).executeTakeFirstOrThrow();
  assert.deepEqual(row, { provisioning_status: 'ACTIVE', topology: null, flavor_id: null });
});

test('a move to another provider lists each object that does not fit, in that provider\'s words', async () => {
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', {
    body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, provider: 'noop', pools: [{ name: 'gappy', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', tls_enabled: true, tls_versions: ['TLSv1', 'TLSv1.2'] }] } },
    as: memberA,
  });
  assert.equal(r.statusCode, 201, r.body);
  const lb = r.json().loadbalancer;
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  const refused = await migrate(lb.id, { provider: 'amphora' });
  assert.equal(refused.statusCode, 400, refused.body);
  const pool = lb.pools[0].id as string;
  assert.match(refused.json().faultstring, new RegExp(`does not fit provider 'amphora': pool ${pool} \\(gappy\\): .*HAProxy enables one range of versions`));
});

test('a provider without amphorae moves to another flavor by recording it: noop', async () => {
  const flavorId = await flavor('noop', { anything: 'goes' });
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, provider: 'noop' } }, as: memberA });
  const lb = r.json().loadbalancer;
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  const moved = await migrate(lb.id, { flavor_id: flavorId });
  assert.equal(moved.statusCode, 202, moved.body);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  const shown = (await h.request('GET', `/v2/lbaas/loadbalancers/${lb.id}`, { as: memberA })).json().loadbalancer;
  assert.deepEqual([shown.flavor_id, shown.vip_address], [flavorId, lb.vip_address]);
  assert.equal((await migrate(lb.id, { flavor_id: null })).statusCode, 202);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  assert.equal((await h.request('GET', `/v2/lbaas/loadbalancers/${lb.id}`, { as: memberA })).json().loadbalancer.flavor_id, null);
});

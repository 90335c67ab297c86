/**
 * The spare pool through the real runtime under compute.driver noop (rows, certificates and management
 * addresses as for any amphora; nothing is booted): filled to its size, adopted by creates and failovers
 * instead of a boot, refilled, and spares that died or exceed the size retired.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { startHarness, NOOP_COMPUTE_AMPHORA, admin, memberA, type Harness } from '../../../test/support/harness.js';
import { VIP_SUBNET_ID } from '../../config.js';
import { SparePool } from './spares.js';
import { randomUUID } from 'node:crypto';
import { newAmphoraRow } from '../../db/records/amphora.js';

let h: Harness;
before(async () => {
  h = await startHarness(NOOP_COMPUTE_AMPHORA);
});
after(async () => {
  await h?.close();
});

const db = () => h.runtime.db.kysely;
const pool = async (size: number) => new SparePool({ db: h.runtime.db, log: pino({ level: 'silent' }), amphora: await h.runtime.amphora(), size });
const spares = () => db().selectFrom('amphora').selectAll().where('load_balancer_id', 'is', null).where('status', '=', 'READY').orderBy('created_at').execute();

async function createLb(): Promise<string> {
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, provider: 'amphora' } }, as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  assert.equal(await h.settled(r.json().loadbalancer.id), 'ACTIVE');
  return r.json().loadbalancer.id as string;
}

const amphoraeOf = (lbId: string) => db().selectFrom('amphora').selectAll().where('load_balancer_id', '=', lbId).where('status', '!=', 'DELETED').execute();

test('spares are booted to the size, a create adopts one instead of booting, and the next round refills the pool', async () => {
  const keeper = await pool(2);
  assert.equal((await keeper.run()).booted.length, 2);
  const before = await spares();
  assert.equal(before.length, 2);
  for (const s of before) {
    assert.ok(s.compute_id && s.cert_serial && s.lb_network_ip, JSON.stringify(s));
    assert.equal(s.job_id, null);
  }
  assert.deepEqual((await keeper.run()).booted, [], 'a full pool boots nothing');

  const lbId = await createLb();
  const [amp, ...others] = await amphoraeOf(lbId);
  assert.equal(others.length, 0);
  assert.equal(amp!.id, before[0]!.id, 'the oldest spare was adopted');
  assert.equal(amp!.compute_id, before[0]!.compute_id, 'not booted again');
  assert.equal(amp!.status, 'ALLOCATED');
  assert.equal(amp!.role, 'STANDALONE');
  assert.ok(amp!.job_id, 'the adopting job is recorded');
  assert.equal((await spares()).length, 1);

  const refill = await keeper.run();
  assert.equal(refill.booted.length, 1);
  assert.equal((await spares()).length, 2);
  await keeper.run(); // leaves the pool as it found it for the next test
});

test('a failover adopts a spare too, and the amphora it replaced is retired', async () => {
  const keeper = await pool(2);
  await keeper.run();
  const lbId = await createLb();
  await keeper.run();
  const [old] = await amphoraeOf(lbId);
  const free = (await spares()).map((s) => s.id);
  const r = await h.request('PUT', `/v2/octavia/amphorae/${old!.id}/failover`, { as: admin });
  assert.equal(r.statusCode, 202, r.body);
  assert.equal(await h.settled(lbId), 'ACTIVE');
  const [now, ...others] = await amphoraeOf(lbId);
  assert.equal(others.length, 0);
  assert.ok(free.includes(now!.id), 'the replacement is one of the spares');
  assert.equal((await db().selectFrom('amphora').select('status').where('id', '=', old!.id).executeTakeFirstOrThrow()).status, 'DELETED');
});

test('a spare whose boot was abandoned is retired and replaced; spares beyond the size are retired', async () => {
  const amphora = await h.runtime.amphora();
  const keeper = await pool(2);
  await keeper.run();
  // A housekeeper that died mid-boot leaves a row BOOTING with its management address.
  const stuck = randomUUID();
  await db().transaction().execute(async (trx) => {
    const address = await amphora.network.allocateManagementAddress(trx, stuck);
    await trx.insertInto('amphora').values(newAmphoraRow(stuck, address, amphora.settings.agentPort, { status: 'BOOTING' })).execute();
  });
  assert.ok(!(await keeper.run()).retired.includes(stuck), 'a boot under way is left alone');
  const later = new SparePool({ db: h.runtime.db, log: pino({ level: 'silent' }), amphora, size: 2, now: () => Date.now() + 3 * amphora.settings.bootTimeoutMs });
  const round = await later.run();
  assert.deepEqual(round.retired, [stuck]);
  assert.equal((await db().selectFrom('amphora').select('status').where('id', '=', stuck).executeTakeFirstOrThrow()).status, 'DELETED');
  assert.equal(await db().selectFrom('port').select('id').where('device_id', '=', stuck).executeTakeFirst(), undefined, 'its management address was released');
  assert.equal((await spares()).length, 2);

  const smaller = await (await pool(1)).run();
  assert.equal(smaller.retired.length, 1);
  assert.equal((await spares()).length, 1);
});

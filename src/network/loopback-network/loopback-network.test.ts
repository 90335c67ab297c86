import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultConfig } from '../../config.js';
import type { Db } from '../../db/database.js';
import { testDatabase as database } from '../../../test/support/postgres.js';
import { LoopbackNetwork, isLoopbackAddress } from './loopback-network.js';
import { MANAGEMENT_DEVICE_OWNER, MANAGEMENT_NETWORK_ID, MANAGEMENT_PROJECT_ID, MANAGEMENT_SUBNET_ID } from '../management-ports.js';

const A = '0b6f7c4e-2b1a-4c3d-9e8f-0a1b2c3d4e5f';
const B = '9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a';
const C = '5e4d3c2b-1a0f-4e9d-8c7b-6a5f4e3d2c1b';

const allocate = (db: Db, net: LoopbackNetwork, amphoraId: string) => db.kysely.transaction().execute((trx) => net.allocateManagementAddress(trx, amphoraId));
const mgmtPorts = (db: Db) => db.kysely.selectFrom('port').selectAll().where('device_owner', '=', MANAGEMENT_DEVICE_OWNER).orderBy('ip_address').execute();

test('management addresses come from the configured range, lowest free first, one port row per amphora', async (t) => {
  const db = await database(t);
  const net = new LoopbackNetwork(defaultConfig('/tmp/x').amphora.managementNetwork);
  assert.equal(await allocate(db, net, A), '127.80.0.10');
  assert.equal(await allocate(db, net, B), '127.80.0.11');
  const rows = await mgmtPorts(db);
  assert.equal(rows.length, 2);
  assert.deepEqual(
    { ...rows[0], id: undefined, created_at: undefined },
    {
      id: undefined,
      created_at: undefined,
      project_id: MANAGEMENT_PROJECT_ID,
      name: `amphora-mgmt-${A}`,
      network_id: MANAGEMENT_NETWORK_ID,
      subnet_id: MANAGEMENT_SUBNET_ID,
      ip_address: '127.80.0.10',
      device_id: A,
      device_owner: MANAGEMENT_DEVICE_OWNER,
      qos_policy_id: null,
    },
  );
});

test('asking again for the same amphora returns its address (a resumed flow step)', async (t) => {
  const db = await database(t);
  const net = new LoopbackNetwork(defaultConfig('/tmp/x').amphora.managementNetwork);
  const first = await allocate(db, net, A);
  assert.equal(await allocate(db, net, A), first);
  assert.equal((await mgmtPorts(db)).length, 1);
});

test('a released address is handed out again; releasing twice is fine', async (t) => {
  const db = await database(t);
  const net = new LoopbackNetwork(defaultConfig('/tmp/x').amphora.managementNetwork);
  await allocate(db, net, A);
  await allocate(db, net, B);
  await net.releaseManagementAddress(db.kysely, A);
  await net.releaseManagementAddress(db.kysely, A);
  assert.deepEqual((await mgmtPorts(db)).map((p) => p.device_id), [B]);
  assert.equal(await allocate(db, net, C), '127.80.0.10');
});

test('an allocation rolled back with its transaction leaves no port', async (t) => {
  const db = await database(t);
  const net = new LoopbackNetwork(defaultConfig('/tmp/x').amphora.managementNetwork);
  await assert.rejects(
    db.kysely.transaction().execute(async (trx) => {
      await net.allocateManagementAddress(trx, A);
      throw new Error('later step failed');
    }),
    /later step failed/,
  );
  assert.deepEqual(await mgmtPorts(db), []);
});

test('an exhausted range says what failed and what to do', async (t) => {
  const db = await database(t);
  const net = new LoopbackNetwork({ cidr: '127.81.0.0/24', start: '127.81.0.1', end: '127.81.0.2' });
  await allocate(db, net, A);
  await allocate(db, net, B);
  await assert.rejects(
    allocate(db, net, C),
    new Error(
      `no free management address for amphora ${C}: every address of amphora.managementNetwork 127.81.0.1-127.81.0.2 is held by an amphora. ` +
        "Delete amphorae that are no longer needed ('ostia housekeeping' removes those of deleted load balancers) or widen amphora.managementNetwork.start/end in the configuration.",
    ),
  );
  assert.equal((await mgmtPorts(db)).length, 2);
});

test('VIP ports with the same address on another subnet do not interfere', async (t) => {
  const db = await database(t);
  const net = new LoopbackNetwork(defaultConfig('/tmp/x').amphora.managementNetwork);
  await db.kysely
    .insertInto('port')
    .values({ id: 'vip-port', project_id: 'p', name: 'vip', network_id: 'n', subnet_id: 's', ip_address: '127.80.0.10', device_id: 'lb', device_owner: 'Octavia', qos_policy_id: null, created_at: '2026-01-01T00:00:00' })
    .execute();
  assert.equal(await allocate(db, net, A), '127.80.0.10');
});

test('management network settings outside loopback or inconsistent are refused at construction', () => {
  const bad = (cidr: string, start: string, end: string) => () => new LoopbackNetwork({ cidr, start, end });
  assert.throws(bad('nonsense', '127.80.0.1', '127.80.0.2'), /amphora\.managementNetwork\.cidr 'nonsense' is not a CIDR/);
  assert.throws(bad('10.0.0.0/24', '10.0.0.1', '10.0.0.2'), /amphora\.managementNetwork\.cidr 10\.0\.0\.0\/24 must lie inside 127\.0\.0\.0\/8/);
  assert.throws(bad('0.0.0.0/0', '127.0.0.1', '127.0.0.2'), /must lie inside 127\.0\.0\.0\/8/);
  assert.throws(bad('127.80.0.0/24', '127.81.0.1', '127.80.0.2'), /amphora\.managementNetwork\.start 127\.81\.0\.1 is not inside amphora\.managementNetwork\.cidr 127\.80\.0\.0\/24/);
  assert.throws(bad('127.80.0.0/24', '127.80.0.9', '127.80.0.2'), /amphora\.managementNetwork\.start 127\.80\.0\.9 comes after amphora\.managementNetwork\.end 127\.80\.0\.2/);
});

test('plugVip accepts loopback VIPs and refuses others with the reason', async (t) => {
  const { kysely: db } = await database(t);
  const net = new LoopbackNetwork(defaultConfig('/tmp/x').amphora.managementNetwork);
  const plug = (addresses: string[]) => net.plugVip(db, { amphoraId: A, subnetId: 'any', addresses, floating: false });
  assert.equal(await plug(['127.16.0.10', '::1']), null, 'no base port: every loopback address is local already');
  await assert.rejects(
    plug(['127.16.0.10', '10.0.0.5']),
    new Error(`cannot plug VIP 10.0.0.5 into amphora ${A}: the loopback network driver serves only 127.0.0.0/8 and ::1; give the VIP network a subnet inside 127.0.0.0/8`),
  );
  await net.unplugVip(db, A);
});

test('isLoopbackAddress', () => {
  for (const ip of ['127.0.0.1', '127.255.255.254', '::1', '0:0:0:0:0:0:0:1']) assert.ok(isLoopbackAddress(ip), ip);
  for (const ip of ['128.0.0.1', '10.0.0.1', '::2', '::ffff:127.0.0.1', 'fe80::1', 'localhost', '']) assert.ok(!isLoopbackAddress(ip), ip);
});

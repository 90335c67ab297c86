/**
 * BridgeNetwork: the management network's settings and addresses (a database, no root), then the
 * fabric it builds on this machine (root: a real namespace, bridge and veth, removed after).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bridgeManagementNetwork } from '../../config.js';
import type { Db } from '../../db/database.js';
import { IP, netnsExists } from '../../linux-net/ip.js';
import { testDatabase as database } from '../../../test/support/postgres.js';
import { unmet } from '../../../test/support/requirements.js';
import { BridgeNetwork, MANAGEMENT_BRIDGE } from './bridge-network.js';

const A = '0b6f7c4e-2b1a-4c3d-9e8f-0a1b2c3d4e5f';
const B = '9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a';
const C = '5e4d3c2b-1a0f-4e9d-8c7b-6a5f4e3d2c1b';
const MGMT = { cidr: '198.18.7.0/24', start: '198.18.7.10', end: '198.18.7.11' };

const allocate = (db: Db, net: BridgeNetwork, amphoraId: string) => db.kysely.transaction().execute((trx) => net.allocateManagementAddress(trx, amphoraId));
const ipOut = (...args: string[]) => execFileSync(IP, args, { encoding: 'utf8', timeout: 10_000 });

test('management addresses come from the bridge network, the same one again for the same amphora, and are kept across drivers', async (t) => {
  const db = await database(t);
  const net = new BridgeNetwork('/tmp/x', MGMT);
  assert.equal(net.controllerAddress, '198.18.7.1');
  assert.deepEqual(net.management, { namespace: net.fabric, bridge: MANAGEMENT_BRIDGE, prefixLength: 24 });
  assert.equal(await allocate(db, net, A), '198.18.7.10');
  assert.equal(await allocate(db, net, B), '198.18.7.11');
  assert.equal(await allocate(db, new BridgeNetwork('/tmp/x', MGMT), A), '198.18.7.10', 'a restarted controller finds the address in the database');
  await net.releaseManagementAddress(db.kysely, A);
  assert.equal(await allocate(db, net, C), '198.18.7.10', 'a released address is handed out again');
  await assert.rejects(net.plugVip(A, '10.0.0.5'), /does not build tenant networks yet/);
});

test('the fabric is named by the data directory; management networks the bridge cannot serve are refused at construction', () => {
  assert.match(new BridgeNetwork('/tmp/x', MGMT).fabric, /^ostia-[0-9a-f]{8}$/);
  assert.equal(new BridgeNetwork('/tmp/x', MGMT).fabric, new BridgeNetwork('/tmp/x/', MGMT).fabric);
  assert.notEqual(new BridgeNetwork('/tmp/x', MGMT).fabric, new BridgeNetwork('/tmp/y', MGMT).fabric);
  const bad = (cidr: string, start: string, end: string) => () => new BridgeNetwork('/tmp/x', { cidr, start, end });
  assert.throws(bad('127.80.0.0/16', '127.80.0.10', '127.80.0.20'), /amphora\.managementNetwork\.cidr 127\.80\.0\.0\/16 must be IPv4 outside 127\.0\.0\.0\/8/);
  assert.throws(bad('fd00::/64', 'fd00::10', 'fd00::20'), /must be IPv4 outside 127\.0\.0\.0\/8/);
  assert.throws(bad('10.0.0.0/8', '10.0.0.10', '10.0.0.20'), /must have a prefix from \/16 to \/29/);
  assert.throws(bad('10.0.0.0/24', '10.0.0.1', '10.0.0.20'), /start 10\.0\.0\.1 must come after 10\.0\.0\.1, the controller's address/);
  assert.throws(bad('10.0.0.0/24', '10.0.1.1', '10.0.0.20'), /start 10\.0\.1\.1 is not inside/);
});

test('open builds the fabric namespace, the management bridge and the controller on it; again keeps them; destroy removes them', { skip: unmet('namespaces') }, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'ostia-bridge-'));
  const { managementNetwork, controllerAddress } = bridgeManagementNetwork(dataDir);
  const net = new BridgeNetwork(dataDir, managementNetwork);
  t.after(async () => {
    await net.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  });
  await net.open();
  assert.ok(netnsExists(net.fabric));
  assert.match(ipOut('-n', net.fabric, '-o', 'link', 'show', 'master', MANAGEMENT_BRIDGE), /controller@/);
  assert.match(ipOut('-o', '-4', 'address', 'show', 'dev', net.fabric), new RegExp(`inet ${controllerAddress.replace(/\./g, '\\.')}/24 `));
  await net.open();
  assert.equal(ipOut('-o', '-4', 'address', 'show', 'to', managementNetwork.cidr).trim().split('\n').length, 1, 'opened twice, one address');

  const rival = new BridgeNetwork(`${dataDir}-rival`, managementNetwork);
  await assert.rejects(rival.open(), new RegExp(`already on interface ${net.fabric} of this machine .*set amphora\\.managementNetwork to a free range`));
  assert.ok(!netnsExists(rival.fabric), 'a refused open builds nothing');

  await net.destroy();
  assert.ok(!netnsExists(net.fabric));
  assert.equal(ipOut('-o', 'link', 'show').includes(`${net.fabric}@`), false);
  await net.destroy();
});

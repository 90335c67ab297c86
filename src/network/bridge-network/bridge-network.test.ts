/**
 * BridgeNetwork: the management network's settings and addresses (a database, no root), then the
 * fabric it builds on this machine (root: a real namespace, bridge and veth, removed after).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { bridgeDataDir } from '../../../test/support/bridge-data-dir.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bridgeManagementNetwork, bridgeTenantNetworks, defaultConfig } from '../../config.js';
import { NetworkCatalog } from '../catalog.js';
import type { Db } from '../../db/database.js';
import { amphoraNamespace, deleteNetns, ensureNetns, IP, netnsExists, netnsPids, plugPort } from '../../linux-net/ip.js';
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
  const { dir: dataDir, release } = bridgeDataDir(join(tmpdir(), 'ostia-bridge-'));
  const { managementNetwork, controllerAddress } = bridgeManagementNetwork(dataDir);
  const net = new BridgeNetwork(dataDir, managementNetwork);
  t.after(async () => {
    await net.destroy();
    release();
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

test('tenant networks: a bridge each with this machine on the gateway; an amphora gets a base port with the VIP, and ports on member networks as members come and go', { skip: unmet('namespaces') }, async (t) => {
  const db = await database(t);
  const { dir: dataDir, release } = bridgeDataDir(join(tmpdir(), 'ostia-bridge-'));
  const { managementNetwork } = bridgeManagementNetwork(dataDir);
  const networks = bridgeTenantNetworks(dataDir);
  const catalog = new NetworkCatalog({ networks, qosPolicies: [], securityGroups: [] });
  const net = new BridgeNetwork(dataDir, managementNetwork, catalog);
  const [publicSubnet, privateSubnet] = [networks[0]!.subnets[0]!, networks[1]!.subnets[0]!];
  const amphoraNs = amphoraNamespace(net.fabric, A);
  const memberNs = `${net.fabric}-member`;
  const vip = publicSubnet.allocation_pools[0]!.start.replace(/\.10$/, '.200');
  const memberAddress = privateSubnet.allocation_pools[0]!.start.replace(/\.10$/, '.99');
  t.after(async () => {
    for (const ns of [amphoraNs, memberNs]) {
      for (const pid of netnsPids(ns)) process.kill(pid, 'SIGKILL');
      await deleteNetns(ns);
    }
    await net.destroy();
    release();
  });
  await net.open();
  for (const sub of [publicSubnet, privateSubnet])
    assert.match(ipOut('-o', '-4', 'address', 'show', 'to', sub.cidr), new RegExp(`inet ${sub.gateway_ip!.replace(/\./g, '\\.')}/24 `), `this machine holds ${sub.name}'s gateway`);
  assert.deepEqual(net.legAddresses, [publicSubnet.gateway_ip, privateSubnet.gateway_ip]);

  await ensureNetns(amphoraNs);
  const base = await net.plugVip(db.kysely, { amphoraId: A, subnetId: publicSubnet.id, addresses: [vip], floating: false });
  assert.equal(base.address, publicSubnet.allocation_pools[0]!.start, 'the base port takes the subnet\'s first free address');
  assert.equal(base.interface, 'eth1');
  const rows = await db.kysely.selectFrom('port').selectAll().where('device_id', '=', A).execute();
  assert.deepEqual(rows.map((r) => [r.id, r.name, r.subnet_id, r.ip_address]), [[base.portId, `octavia-lb-vrrp-${A}`, publicSubnet.id, base.address]]);
  const eth1 = ipOut('-n', amphoraNs, '-o', '-4', 'address', 'show', 'dev', 'eth1');
  assert.match(eth1, new RegExp(`inet ${base.address}/24 `));
  assert.match(eth1, new RegExp(`inet ${vip}/32 `));
  assert.match(ipOut('-n', amphoraNs, 'route', 'show', 'default'), new RegExp(`via ${publicSubnet.gateway_ip} dev eth1`));
  const again = await net.plugVip(db.kysely, { amphoraId: A, subnetId: publicSubnet.id, addresses: [vip], floating: false });
  assert.deepEqual(again, base, 'plugging again (a resumed step) keeps the port');

  // This machine reaches a server on the VIP through its leg; the amphora reaches a member on the private network once plugged into it.
  const server = spawn(IP, ['netns', 'exec', amphoraNs, process.execPath, '-e', `require('node:http').createServer((q, s) => s.end('vip')).listen(8080, '${vip}', () => console.log('up'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => void server.kill('SIGKILL'));
  await once(server.stdout!, 'data', { signal: AbortSignal.timeout(10_000) });
  assert.equal(execFileSync('curl', ['-sS', '--max-time', '5', `http://${vip}:8080/`], { encoding: 'utf8', timeout: 10_000 }), 'vip');

  await ensureNetns(memberNs);
  await plugPort(net.tenantBridge(networks[1]!.id), 'member0', memberNs, memberAddress);
  await net.plugMemberNetworks(db.kysely, A, publicSubnet.id, [memberAddress, '203.0.113.9', vip]);
  const memberPorts = await db.kysely.selectFrom('port').select(['subnet_id', 'name']).where('device_id', '=', A).where('name', 'like', 'octavia-lb-member-%').execute();
  assert.deepEqual(memberPorts, [{ subnet_id: privateSubnet.id, name: `octavia-lb-member-${A}` }], 'a port on the private network only: the VIP network has eth1, and 203.0.113.9 is on no configured subnet');
  execFileSync(IP, ['netns', 'exec', amphoraNs, 'ping', '-c', '1', '-W', '3', memberAddress], { timeout: 10_000 });
  await net.plugMemberNetworks(db.kysely, A, publicSubnet.id, [memberAddress]);
  assert.equal((await db.kysely.selectFrom('port').select('id').where('device_id', '=', A).execute()).length, 2, 'plugging the same members again changes nothing');

  await net.plugMemberNetworks(db.kysely, A, publicSubnet.id, []);
  assert.equal((await db.kysely.selectFrom('port').select('id').where('device_id', '=', A).execute()).length, 1, 'the last member gone, the port goes');
  assert.doesNotMatch(ipOut('-n', amphoraNs, '-o', 'link', 'show'), /n-/);

  await net.unplugVip(db.kysely, A);
  assert.equal((await db.kysely.selectFrom('port').select('id').where('device_id', '=', A).execute()).length, 0);
  assert.doesNotMatch(ipOut('-n', amphoraNs, '-o', 'link', 'show'), /eth1/);

  const floating = await net.plugVip(db.kysely, { amphoraId: A, subnetId: publicSubnet.id, addresses: [vip], floating: true });
  assert.doesNotMatch(ipOut('-n', amphoraNs, '-o', '-4', 'address', 'show', 'dev', 'eth1'), new RegExp(`inet ${vip}/`), 'keepalived, not the driver, puts a floating VIP on the interface');
  assert.match(ipOut('-n', amphoraNs, '-o', '-4', 'address', 'show', 'dev', 'eth1'), new RegExp(`inet ${floating.address}/24 `));
});

test('the bridge driver refuses loopback tenant subnets, which no bridge can carry', () => {
  const catalog = new NetworkCatalog({ networks: defaultConfig('/tmp/x').network.networks, qosPolicies: [], securityGroups: [] });
  assert.throws(() => new BridgeNetwork('/tmp/x', MGMT, catalog), /subnet .* \(127\.16\.0\.0\/16\) of network\.networks is in 127\.0\.0\.0\/8/);
});

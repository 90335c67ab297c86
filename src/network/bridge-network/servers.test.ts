/**
 * Servers on a fabric this test builds (its own data directory, so its own namespace and 198.18/15
 * block) and a database of its own: a server answering HTTP on its address, reached from this machine
 * over the network's gateway leg; its port row; the refusals; delete taking everything with it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { bridgeDataDir } from '../../../test/support/bridge-data-dir.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { bridgeManagementNetwork, bridgeTenantNetworks } from '../../config.js';
import { deleteNetns, netnsExists, netnsPids } from '../../linux-net/ip.js';
import { testDatabase } from '../../../test/support/postgres.js';
import { unmet } from '../../../test/support/requirements.js';
import { NetworkCatalog } from '../catalog.js';
import { BridgeNetwork } from './bridge-network.js';
import { SERVER_DEVICE_OWNER, Servers } from './servers.js';

/** A node HTTP server on the address its argv names, saying where it answers from. */
const HTTP_SERVER = `require('node:http').createServer((q, s) => s.end('web1 at ' + process.argv[2])).listen(8000, process.argv[2]);`;

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A ServerError: its message, and the hint that says what to do. */
const refusal = (message: RegExp, hint: RegExp) => (e: Error & { hint?: string }) => {
  assert.match(e.message, message);
  assert.match(e.hint ?? '', hint);
  return true;
};

async function fetchText(url: string, deadlineMs: number): Promise<string> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    try {
      return execFileSync('curl', ['-sS', '--fail', '--max-time', '3', url], { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await sleep(100);
    }
  }
}

test('a server on the private network: its address from the subnet, HTTP reached through the gateway leg, listed, refused when wrong, deleted whole', { skip: unmet('namespaces'), timeout: 120_000 }, async (t) => {
  const db = await testDatabase(t);
  const { dir: dataDir, release } = bridgeDataDir(join(tmpdir(), 'ostia-servers-'));
  const networks = bridgeTenantNetworks(dataDir);
  const catalog = new NetworkCatalog({ networks, qosPolicies: [], securityGroups: [] });
  const net = new BridgeNetwork(dataDir, bridgeManagementNetwork(dataDir).managementNetwork, catalog);
  const servers = new Servers(net, catalog, dataDir);
  const names = ['web1', 'bad', 'idle'];
  t.after(async () => {
    for (const name of names) {
      for (const pid of netnsPids(servers.namespaceOf(name))) process.kill(pid, 'SIGKILL');
      await deleteNetns(servers.namespaceOf(name));
    }
    await net.destroy();
    release();
  });
  const privateNet = networks.find((n) => n.name === 'private')!;
  const subnet = privateNet.subnets[0]!;

  await assert.rejects(servers.create(db.kysely, { name: 'web1', network: 'private', command: [] }), refusal(/bridge of network private does not exist/, /^Start 'ostia up' as root with network\.driver bridge/));
  await net.open();

  const script = join(dataDir, 'http.js');
  writeFileSync(script, HTTP_SERVER);
  // One argument: a shell command line, in which the address is the shell's to expand.
  const web1 = await servers.create(db.kysely, { name: 'web1', network: 'private', command: [`exec ${process.execPath} ${script} "$OSTIA_SERVER_ADDRESS"`] });
  assert.equal(web1.address, subnet.allocation_pools[0]!.start, "the subnet's first free address");
  assert.deepEqual({ ...web1, pid: typeof web1.pid }, { name: 'web1', network: 'private', address: web1.address, namespace: `${net.fabric}-srv-web1`, log: join(dataDir, 'servers', 'web1.log'), pid: 'number' });
  assert.ok(netnsExists(web1.namespace));
  const started = Date.now();
  assert.equal(await fetchText(`http://${web1.address}:8000/`, 20_000), `web1 at ${web1.address}`, 'this machine reaches the server over its leg on the subnet');
  t.diagnostic(`web1 answered ${Date.now() - started} ms after create returned`);
  const route = execFileSync('ip', ['-n', web1.namespace, 'route', 'show', 'default'], { encoding: 'utf8' });
  assert.match(route, new RegExp(`via ${subnet.gateway_ip!.replace(/\./g, '\\.')} dev eth0`));
  const rows = await db.kysely.selectFrom('port').select(['name', 'device_id', 'device_owner', 'network_id', 'subnet_id', 'ip_address']).execute();
  assert.deepEqual(rows, [{ name: 'web1', device_id: 'web1', device_owner: SERVER_DEVICE_OWNER, network_id: privateNet.id, subnet_id: subnet.id, ip_address: web1.address }]);

  // Several arguments are run as they are; none: an idle namespace.
  const idle = await servers.create(db.kysely, { name: 'idle', network: privateNet.id, command: [] });
  assert.equal(idle.pid, null);
  assert.notEqual(idle.address, web1.address);

  await assert.rejects(servers.create(db.kysely, { name: 'Web_1', network: 'private', command: [] }), /invalid server name 'Web_1'/);
  await assert.rejects(servers.create(db.kysely, { name: 'a234567890123', network: 'private', command: [] }), /invalid server name/);
  await assert.rejects(servers.create(db.kysely, { name: 'web2', network: 'nope', command: [] }), refusal(/no network nope in network\.networks/, /^Pick one of: public, private\.$/));
  await assert.rejects(servers.create(db.kysely, { name: 'web1', network: 'public', command: [] }), /a server named web1 already exists/);
  await assert.rejects(servers.create(db.kysely, { name: 'bad', network: 'private', command: ['echo not today; exit 3'] }), /command of server bad exited at once \(status 3\): not today/);
  assert.ok(!netnsExists(servers.namespaceOf('bad')), 'a failed create leaves no namespace');
  assert.equal((await db.kysely.selectFrom('port').select('id').execute()).length, 2, 'the refusals and the failure hold no address');

  const listed = await servers.list(db.kysely);
  assert.deepEqual(listed.map((s) => [s.name, s.network, s.address, s.namespace_exists]), [['idle', 'private', idle.address, true], ['web1', 'private', web1.address, true]]);
  assert.deepEqual(listed.find((s) => s.name === 'idle')!.pids, []);
  assert.ok(listed.find((s) => s.name === 'web1')!.pids.includes(web1.pid!), 'the command runs in the namespace');

  await servers.delete(db.kysely, 'web1');
  assert.ok(!netnsExists(web1.namespace));
  assert.ok(!alive(web1.pid!), 'the command was ended');
  assert.deepEqual(await db.kysely.selectFrom('port').select('name').execute(), [{ name: 'idle' }]);
  assert.doesNotMatch(execFileSync('ip', ['-n', net.fabric, '-o', 'link', 'show'], { encoding: 'utf8' }), /s-web1@/, 'the bridge port went with it');
  await assert.rejects(servers.delete(db.kysely, 'web1'), /no server named web1/);
  const again = await servers.create(db.kysely, { name: 'web1', network: 'private', command: [] });
  assert.equal(again.address, web1.address, 'the freed address is handed out again');
});

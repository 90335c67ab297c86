/**
 * Issue 13 end to end: the real `openstack` CLI against a real `ostia up` with compute.driver netns and
 * network.driver bridge, as root. Amphorae are namespaces on bridges: the VIP is an address of the
 * public bridge network that this machine reaches through its leg, members are servers in namespaces
 * of the test on the private bridge, which the amphora reaches through a port of its own there.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { bridgeManagementNetwork, bridgeTenantNetworks, MEMBER_NETWORK_ID, VIP_NETWORK_ID } from '../src/config.js';
import { deleteNetns, ensureNetns, IP, netnsExists, netnsPids, plugPort } from '../src/linux-net/ip.js';
import { NetworkCatalog } from '../src/network/catalog.js';
import { BridgeNetwork } from '../src/network/bridge-network/bridge-network.js';
import { startOstia, type OstiaProcess } from './support/ostia-process.js';
import { unmet } from './support/requirements.js';
import { writeAmphoraConfig } from './support/amphora-config.js';
import { OpenstackCli } from './support/openstack-cli.js';
import { collectBodies, eventually, httpGet, randomPort } from './support/amphora-fixtures.js';
import { madeOnce } from './support/made-once.js';

const ADMIN = 'ostia';
const DEMO = 'ostia-demo';
type Obj = Record<string, unknown>;

describe('amphorae in namespaces on bridge networks, through the openstack CLI', { skip: unmet('namespaces') || unmet('openstack-cli') || unmet('haproxy'), concurrency: 1 }, () => {
  let ostia: OstiaProcess;
  let cli: OpenstackCli;
  let configDir: string;
  let net: BridgeNetwork;
  const servers: ChildProcess[] = [];
  const namespaces: string[] = [];
  const listenerPort = randomPort();
  /** Two servers on the private network, each in a namespace of its own. */
  const members: Array<{ name: string; address: string }> = [];

  const show = (cloud: string, args: string[]) => cli.json<Obj>(cloud, args);

  /** A namespace plugged into `networkId`'s bridge with `address`, serving its name over HTTP on 8000 when `serve`. */
  async function host(name: string, networkId: string, address: string, serve: boolean): Promise<string> {
    const ns = `${net.fabric}-${name}`;
    namespaces.push(ns);
    await ensureNetns(ns);
    const bridge = net.tenantBridge(networkId);
    await plugPort(bridge, name, ns, address);
    if (bridge.gateway) await spawnOk(IP, ['-n', ns, 'route', 'add', 'default', 'via', bridge.gateway]);
    if (serve) {
      const server = spawn(IP, ['netns', 'exec', ns, process.execPath, '-e', `require('node:http').createServer((q, s) => s.end('${name}')).listen(8000, '${address}', () => console.log('up'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
      servers.push(server);
      await once(server.stdout!, 'data', { signal: AbortSignal.timeout(15_000) });
    }
    return ns;
  }

  const built = madeOnce(async () => {
    const lb = await show(DEMO, ['loadbalancer', 'create', '--name', 'netns-e2e', '--vip-subnet-id', 'public-subnet', '--wait']);
    const listener = await show(DEMO, ['loadbalancer', 'listener', 'create', String(lb.id), '--name', 'web', '--protocol', 'HTTP', '--protocol-port', String(listenerPort), '--wait']);
    const pool = await show(DEMO, ['loadbalancer', 'pool', 'create', '--listener', String(listener.id), '--name', 'web-pool', '--protocol', 'HTTP', '--lb-algorithm', 'ROUND_ROBIN', '--wait']);
    for (const m of members) await show(DEMO, ['loadbalancer', 'member', 'create', String(pool.id), '--name', m.name, '--subnet-id', 'private-subnet', '--address', m.address, '--protocol-port', '8000', '--wait']);
    return { lb, vip: String(lb.vip_address), poolId: String(pool.id) };
  });

  before(async () => {
    // Short: HAProxy's sockets live under it (at most 31 characters).
    configDir = mkdtempSync('/tmp/ostia-ne-');
    const dataDir = configDir;
    const configFile = await writeAmphoraConfig(configDir, {
      compute: { driver: 'netns' },
      network: { driver: 'bridge' },
      // The bridge defaults the data directory chooses (writeAmphoraConfig's loopback ones would be refused).
      amphora: { managementNetwork: bridgeManagementNetwork(dataDir).managementNetwork, healthListen: `${bridgeManagementNetwork(dataDir).controllerAddress}:5555`, heartbeatIntervalMs: 500, heartbeatTimeoutMs: 2000 },
    });
    ostia = await startOstia({ extraArgs: ['--config', configFile], dataDir });
    cli = new OpenstackCli(ostia.cloudsYaml, { concurrency: 2 });
    const networks = bridgeTenantNetworks(ostia.dataDir);
    net = new BridgeNetwork(ostia.dataDir, bridgeManagementNetwork(ostia.dataDir).managementNetwork, new NetworkCatalog({ networks, qosPolicies: [], securityGroups: [] }));
    const privateBase = networks[1]!.subnets[0]!.cidr.replace(/\.0\/24$/, '');
    for (const [i, name] of ['web-a', 'web-b'].entries()) members.push({ name, address: `${privateBase}.${200 + i}` });
  });

  after(async () => {
    for (const s of servers) s.kill('SIGKILL');
    for (const ns of namespaces) {
      for (const pid of netnsPids(ns)) process.kill(pid, 'SIGKILL');
      await deleteNetns(ns);
    }
    if (ostia) {
      for (const lb of await cli.json<Obj[]>(ADMIN, ['loadbalancer', 'list']).catch(() => [])) await cli.ok(ADMIN, ['loadbalancer', 'delete', '--cascade', '--wait', String(lb.id)]).catch(() => undefined);
      await ostia.stop();
      await net.destroy();
    }
    if (configDir) rmSync(configDir, { recursive: true, force: true });
  });

  it('serves the VIP on the public bridge to this machine and to a client namespace, from members on the private bridge', { timeout: 240_000 }, async () => {
    for (const m of members) await host(m.name, MEMBER_NETWORK_ID, m.address, true);
    const { vip } = await built();
    assert.match(vip, /^198\.1[89]\./, 'the VIP is on the public bridge network');
    const bodies = await collectBodies(vip, listenerPort, 8);
    assert.deepEqual([...new Set(bodies)].sort(), ['web-a', 'web-b'], bodies.join(','));

    const publicBase = bridgeTenantNetworks(ostia.dataDir)[0]!.subnets[0]!.cidr.replace(/\.0\/24$/, '');
    const client = await host('client', VIP_NETWORK_ID, `${publicBase}.240`, false);
    const curl = await spawnOk(IP, ['netns', 'exec', client, 'curl', '-sS', '--max-time', '5', `http://${vip}:${listenerPort}/`]);
    assert.match(curl, /^web-[ab]$/);
  });

  it('fills the amphora API with the base port on the VIP network, and counts it as a port', { timeout: 240_000 }, async () => {
    for (const m of members) if (!namespaces.includes(`${net.fabric}-${m.name}`)) await host(m.name, MEMBER_NETWORK_ID, m.address, true);
    const { lb, vip } = await built();
    const [amphora] = (await cli.json<Obj[]>(ADMIN, ['loadbalancer', 'amphora', 'list', '--loadbalancer', String(lb.id)])).filter((a) => a.status === 'ALLOCATED');
    const shown = await show(ADMIN, ['loadbalancer', 'amphora', 'show', String(amphora!.id)]);
    assert.equal(shown.role, 'STANDALONE');
    assert.equal(shown.ha_ip, vip);
    assert.equal(shown.vrrp_interface, 'eth1');
    assert.match(String(shown.vrrp_ip), /^198\.1[89]\./);
    assert.notEqual(shown.vrrp_ip, vip);
    assert.ok(shown.vrrp_port_id, 'a base port id');
    assert.ok(netnsExists(`${net.fabric}-${String(amphora!.id)}`), 'the amphora is a namespace of the fabric');
  });

  it("refuses members on the controller's own legs and on the management network", { timeout: 240_000 }, async () => {
    const { poolId } = await built();
    const networks = bridgeTenantNetworks(ostia.dataDir);
    for (const address of [networks[1]!.subnets[0]!.gateway_ip!, bridgeManagementNetwork(ostia.dataDir).controllerAddress]) {
      const res = await cli.run(DEMO, ['loadbalancer', 'member', 'create', poolId, '--address', address, '--protocol-port', '80']);
      assert.notEqual(res.code, 0, `member ${address} refused`);
      assert.match(res.stderr, /is not allowed/);
    }
  });

  it('replaces a SINGLE amphora whose processes died, and the VIP serves again from the new one', { timeout: 240_000 }, async () => {
    for (const m of members) if (!namespaces.includes(`${net.fabric}-${m.name}`)) await host(m.name, MEMBER_NETWORK_ID, m.address, true);
    const { lb, vip } = await built();
    const [old] = (await cli.json<Obj[]>(ADMIN, ['loadbalancer', 'amphora', 'list', '--loadbalancer', String(lb.id)])).filter((a) => a.status === 'ALLOCATED');
    const oldNs = `${net.fabric}-${String(old!.id)}`;
    const started = Date.now();
    for (const pid of netnsPids(oldNs)) process.kill(pid, 'SIGKILL');
    const back = await eventually(
      async () => {
        const res = await httpGet(vip, listenerPort).catch(() => null);
        return res?.status === 200 && (await cli.json<Obj[]>(ADMIN, ['loadbalancer', 'amphora', 'list', '--loadbalancer', String(lb.id)])).some((a) => a.status === 'ALLOCATED' && a.id !== old!.id) ? Date.now() : undefined;
      },
      'a new amphora serving the VIP',
      120_000,
      200,
    );
    console.log(`# netns SINGLE failover: VIP served by a new amphora ${back! - started} ms after its processes were killed`);
    await eventually(() => !netnsExists(oldNs), 'the old amphora namespace removed', 60_000, 500);
  });
});

function spawnOk(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: 15_000 });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (err += d));
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${file} ${args.join(' ')}: exit ${code}: ${err}`))));
  });
}

/**
 * A real `ostia up` with compute.driver netns and network.driver bridge (root), the openstack CLI on its
 * clouds.yaml, and namespaces of the test plugged into its bridge networks: servers on the private network,
 * clients on the public one. `close` deletes what the test built (load balancers first, then namespaces,
 * the Ostia and its fabric).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { bridgeDataDir } from './bridge-data-dir.js';
import { bridgeManagementNetwork, bridgeTenantNetworks, deepMerge, MEMBER_NETWORK_ID, VIP_NETWORK_ID } from '../../src/config.js';
import { deleteNetns, ensureNetns, IP, netnsPids, plugPort } from '../../src/linux-net/ip.js';
import { NetworkCatalog } from '../../src/network/catalog.js';
import { BridgeNetwork } from '../../src/network/bridge-network/bridge-network.js';
import { writeAmphoraConfig } from './amphora-config.js';
import { OpenstackCli } from './openstack-cli.js';
import { startOstia, type OstiaProcess } from './ostia-process.js';

const execFileAsync = promisify(execFile);

export interface BridgeOstia {
  ostia: OstiaProcess;
  cli: OpenstackCli;
  /** The fabric Ostia built, seen from the test: its namespace and bridges. */
  net: BridgeNetwork;
  /** `<network>.<last>`: an address of the public (VIP) or private (member) network. */
  address(network: 'public' | 'private', last: number): string;
  /** A namespace on the network holding `address`, with a default route to its gateway; serving its name over HTTP on 8000 when `serve`. */
  host(name: string, network: 'public' | 'private', address: string, serve?: boolean): Promise<string>;
  /** Runs a command, resolving with its output, rejecting with its error output. */
  run(file: string, args: string[]): Promise<string>;
  close(): Promise<void>;
}

/** The heartbeat timers of these Ostias: short, so that a failover test waits seconds, not tens of them. */
export const BRIDGE_HEARTBEAT = { intervalMs: 500, timeoutMs: 2000 } as const;

/** `overrides` of the config, or a function of the data directory giving them (its bridge networks' addresses depend on it). */
export async function startBridgeOstia(overrides: object | ((dataDir: string) => object) = {}): Promise<BridgeOstia> {
  // Short: HAProxy's sockets live under it (at most 31 characters).
  const { dir: dataDir, release } = bridgeDataDir('/tmp/ostia-br-');
  const { managementNetwork, controllerAddress } = bridgeManagementNetwork(dataDir);
  const configFile = await writeAmphoraConfig(
    dataDir,
    deepMerge(
      {
        compute: { driver: 'netns' },
        network: { driver: 'bridge' },
        // The bridge defaults the data directory chooses (writeAmphoraConfig's loopback ones would be refused).
        amphora: { managementNetwork, healthListen: `${controllerAddress}:5555`, heartbeatIntervalMs: BRIDGE_HEARTBEAT.intervalMs, heartbeatTimeoutMs: BRIDGE_HEARTBEAT.timeoutMs },
      },
      typeof overrides === 'function' ? overrides(dataDir) : overrides,
    ) as object,
  );
  let ostia: OstiaProcess;
  try {
    ostia = await startOstia({ extraArgs: ['--config', configFile], dataDir });
  } catch (e) {
    release();
    throw e;
  }
  const cli = new OpenstackCli(ostia.cloudsYaml, { concurrency: 2 });
  const networks = bridgeTenantNetworks(dataDir);
  const net = new BridgeNetwork(dataDir, managementNetwork, new NetworkCatalog({ networks, qosPolicies: [], securityGroups: [] }));
  const networkId = { public: VIP_NETWORK_ID, private: MEMBER_NETWORK_ID } as const;
  const prefix = (network: 'public' | 'private') => networks.find((n) => n.id === networkId[network])!.subnets[0]!.cidr.replace(/\.0\/24$/, '');
  const servers: ChildProcess[] = [];

  async function host(name: string, network: 'public' | 'private', address: string, serve = false): Promise<string> {
    const ns = `${net.fabric}-${name}`;
    await ensureNetns(ns);
    const bridge = net.tenantBridge(networkId[network]);
    await plugPort(bridge, name, ns, address);
    if (bridge.gateway) await run(IP, ['-n', ns, 'route', 'add', 'default', 'via', bridge.gateway]);
    if (serve) {
      const server = spawn(IP, ['netns', 'exec', ns, process.execPath, '-e', `require('node:http').createServer((q, s) => s.end('${name}')).listen(8000, '${address}', () => console.log('up'))`], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      servers.push(server);
      await once(server.stdout!, 'data', { signal: AbortSignal.timeout(15_000) });
    }
    return ns;
  }

  return {
    ostia,
    cli,
    net,
    address: (network, last) => `${prefix(network)}.${last}`,
    host,
    run,
    async close() {
      for (const lb of await cli.json<Array<{ id: string }>>('ostia', ['loadbalancer', 'list']).catch(() => [])) await cli.ok('ostia', ['loadbalancer', 'delete', '--cascade', '--wait', lb.id]).catch(() => undefined);
      for (const s of servers) s.kill('SIGKILL');
      await ostia.stop();
      // The test's hosts, and amphorae, which outlive their controller by design: every namespace of the fabric.
      for (const ns of readdirSync('/run/netns').filter((n) => n.startsWith(`${net.fabric}-`))) {
        for (const pid of netnsPids(ns)) process.kill(pid, 'SIGKILL');
        await deleteNetns(ns);
      }
      await net.destroy();
      release();
    },
  };
}

/** Its error's message carries the command and what it wrote on stderr. */
async function run(file: string, args: string[]): Promise<string> {
  return (await execFileAsync(file, args, { timeout: 15_000 })).stdout;
}

/**
 * Servers on the bridge networks: what a Nova server on a Neutron network is to an OpenStack user, a
 * backend for load balancers to send to. A server is a network namespace `<fabric>-srv-<name>` whose
 * `eth0` is a port of the network's bridge, holding an address allocated as a `port` row (owner
 * `compute:ostia`, the service's project) so VIPs and amphora ports never get it, with a default route
 * through the subnet's gateway; optionally a command running inside it, detached, logging to
 * DATA_DIR/servers/<name>.log. The row is the server's record: `list` reads the rows, and the
 * processes from the namespace.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { Config } from '../../config.js';
import type { Database } from '../../db/schema.js';
import { deletePorts } from '../../db/free-addresses.js';
import { isApiError } from '../../domain/errors.js';
import { deleteLink, deleteNetns, ensureNetns, ip, IP, linkExists, linkMac, MANAGEMENT_INTERFACE, namespacesUnavailable, netnsExists, netnsPids, plugPort } from '../../linux-net/ip.js';
import { NetworkCatalog, type NetworkDef } from '../catalog.js';
import { MANAGEMENT_PROJECT_ID } from '../management-ports.js';
import { BridgeNetwork } from './bridge-network.js';
import { addPortSecurity, removePortSecurity } from '../../linux-net/port-security.js';

export const SERVER_DEVICE_OWNER = 'compute:ostia';
/** At most 12 characters: the bridge end of the server's veth, `s-<name>`, fits Linux's 15. */
export const SERVER_NAME = /^[a-z0-9][a-z0-9-]{0,11}$/;
/** How long a command is watched after it starts: one that cannot start (not found, bad syntax) fails within it. */
const START_WATCH_MS = 500;
/** How long what runs in a deleted server's namespace has to end after SIGTERM before SIGKILL. */
const STOP_GRACE_MS = 3000;

/** A server refused or failed for a reason the user can act on: `hint` says what to do. */
export class ServerError extends Error {
  constructor(
    message: string,
    readonly hint: string,
  ) {
    super(message);
  }
}

export interface Server {
  name: string;
  /** The network's name. */
  network: string;
  address: string;
  namespace: string;
  log: string;
}

export interface CreatedServer extends Server {
  /** The command's process, or null when none was given. */
  pid: number | null;
}

export interface ListedServer extends Server {
  /** The processes in its namespace; none when nothing runs or the namespace is gone. */
  pids: number[];
  /** False once the namespace is gone (the machine restarted): delete the server and create it again. */
  namespace_exists: boolean;
}

export interface ServerRequest {
  name: string;
  /** A network's id or name, from network.networks. */
  network: string;
  /** Argv of what to run inside; a single argument is a shell command line (`sh -c`). Empty: nothing. */
  command: readonly string[];
}

/** The servers of the Ostia `config` describes: on the networks its `ostia up` builds (BridgeNetwork.open), which this does not. */
export function serversOf(config: Config): Servers {
  const catalog = new NetworkCatalog(config.network);
  return new Servers(new BridgeNetwork(config.dataDir, config.amphora.managementNetwork, catalog), catalog, config.dataDir);
}

export class Servers {
  constructor(
    private readonly net: BridgeNetwork,
    private readonly catalog: NetworkCatalog,
    private readonly dataDir: string,
  ) {}

  namespaceOf(name: string): string {
    return `${this.net.fabric}-srv-${name}`;
  }

  logOf(name: string): string {
    return join(this.dataDir, 'servers', `${name}.log`);
  }

  async create(db: Kysely<Database>, req: ServerRequest): Promise<CreatedServer> {
    requireRoot();
    checkName(req.name);
    const network = this.network(req.network);
    const subnet = this.catalog.subnets.find((s) => s.network_id === network.id && s.ip_version === 4);
    if (!subnet) throw new ServerError(`network ${network.name} has no IPv4 subnet to put a server on`, 'Give it one in network.networks, or pick another network.');
    const bridge = this.net.tenantBridge(network.id);
    if (!netnsExists(this.net.fabric) || !(await linkExists(bridge.bridge, this.net.fabric)))
      throw new ServerError(
        `the bridge of network ${network.name} does not exist: no 'ostia up' with network.driver bridge has built the networks of data directory ${this.dataDir} (fabric namespace ${this.net.fabric})`,
        "Start 'ostia up' as root with network.driver bridge and this --data-dir (and --config), then create the server while it runs.",
      );
    const namespace = this.namespaceOf(req.name);
    if ((await this.row(db, req.name)) || netnsExists(namespace))
      throw new ServerError(`a server named ${req.name} already exists (namespace ${namespace})`, "Pick another --name, or delete it first with 'ostia server delete'.");

    const port = await db
      .transaction()
      .execute((trx) => this.catalog.allocatePort(trx, { subnet, projectId: MANAGEMENT_PROJECT_ID, deviceId: req.name, owner: SERVER_DEVICE_OWNER, name: req.name }))
      .catch((e: unknown) => {
        if (isApiError(e) && e.code === 'CONFLICT')
          throw new ServerError(`no free address on subnet ${subnet.name} (${subnet.cidr}) of network ${network.name}`, "Delete servers or load balancers you no longer need, or widen the subnet's allocation pool.");
        throw e;
      });
    const server: Server = { name: req.name, network: network.name, address: port.ip_address, namespace, log: this.logOf(req.name) };
    try {
      await ensureNetns(namespace);
      await plugPort(bridge, fabricEnd(req.name), namespace, port.ip_address);
      // As Neutron's port security: the server sends from its own MAC and address only, so it cannot take a VIP.
      await addPortSecurity(this.net.fabric, fabricEnd(req.name), { mac: await linkMac(MANAGEMENT_INTERFACE, namespace), addresses: [port.ip_address] });
      if (subnet.gateway_ip) await ip('-n', namespace, 'route', 'replace', 'default', 'via', subnet.gateway_ip, 'dev', MANAGEMENT_INTERFACE);
      const pid = req.command.length ? await this.start(server, req.command) : null;
      return { ...server, pid };
    } catch (e) {
      // Undone whole, so the name and the address are free again; the first failure is the one to report.
      await this.delete(db, req.name).catch(() => undefined);
      throw e;
    }
  }

  async list(db: Kysely<Database>): Promise<ListedServer[]> {
    const rows = await db.selectFrom('port').select(['name', 'network_id', 'ip_address']).where('device_owner', '=', SERVER_DEVICE_OWNER).orderBy('name').execute();
    return rows.map((row) => {
      const namespace = this.namespaceOf(row.name);
      return {
        name: row.name,
        network: this.catalog.network(row.network_id)?.name ?? row.network_id,
        address: row.ip_address,
        namespace,
        log: this.logOf(row.name),
        pids: netnsPids(namespace),
        namespace_exists: netnsExists(namespace),
      };
    });
  }

  /** Ends what runs in the namespace, removes it and its port, and frees the address. The log stays. */
  async delete(db: Kysely<Database>, name: string): Promise<void> {
    requireRoot();
    checkName(name);
    const namespace = this.namespaceOf(name);
    if (!(await this.row(db, name)) && !netnsExists(namespace))
      throw new ServerError(`no server named ${name}`, "See the servers with 'ostia server list'.");
    await stopAll(namespace);
    if (netnsExists(this.net.fabric)) {
      await deleteLink(fabricEnd(name), this.net.fabric);
      await removePortSecurity(this.net.fabric, fabricEnd(name));
    }
    await deleteNetns(namespace);
    await deletePorts(db, (q) => q.where('device_owner', '=', SERVER_DEVICE_OWNER).where('device_id', '=', name));
  }

  private row(db: Kysely<Database>, name: string) {
    return db.selectFrom('port').select('id').where('device_owner', '=', SERVER_DEVICE_OWNER).where('device_id', '=', name).executeTakeFirst();
  }

  private network(idOrName: string): NetworkDef {
    const byId = this.catalog.network(idOrName);
    if (byId) return byId;
    const named = this.catalog.networks.filter((n) => n.name === idOrName);
    if (named.length === 1) return named[0]!;
    const known = this.catalog.networks.map((n) => n.name).join(', ');
    if (named.length) throw new ServerError(`${named.length} networks are named ${idOrName}`, `Name it by id: ${named.map((n) => n.id).join(' or ')}.`);
    throw new ServerError(`no network ${idOrName} in network.networks`, `Pick one of: ${known || 'none (network.networks is empty)'}.`);
  }

  /**
   * The command, detached, as root inside the namespace, with OSTIA_SERVER_ADDRESS; watched briefly, so
   * one that cannot start fails here with its log rather than being reported as running.
   */
  private async start(server: Server, command: readonly string[]): Promise<number> {
    mkdirSync(join(this.dataDir, 'servers'), { recursive: true, mode: 0o700 });
    const log = openSync(server.log, 'w', 0o600);
    const argv = command.length === 1 ? ['/bin/sh', '-c', command[0]!] : [...command];
    const child = spawn(IP, ['netns', 'exec', server.namespace, ...argv], { detached: true, stdio: ['ignore', log, log], env: { ...process.env, OSTIA_SERVER_ADDRESS: server.address } });
    closeSync(log);
    // A failed spawn rejects `once(child, 'spawn')` below, and is reported there.
    const exited = once(child, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as string | null }), () => null);
    await once(child, 'spawn');
    const early = await Promise.race([exited, sleep(START_WATCH_MS, null, { ref: false })]);
    child.unref();
    if (early && early.code !== 0) {
      const tail = readFileSync(server.log, 'utf8').trim().split('\n').slice(-3).join(' / ');
      throw new ServerError(
        `the command of server ${server.name} exited at once (${early.signal ?? `status ${early.code}`})${tail ? `: ${tail}` : ''}`,
        `Check the command (a single argument runs with sh -c) and ${server.log}.`,
      );
    }
    return child.pid!;
  }
}

export function requireRoot(): void {
  const why = namespacesUnavailable();
  if (why) throw new ServerError(`cannot manage servers: ${why}`, 'Run it as root (sudo), on the machine where Ostia runs.');
}

function checkName(name: string): void {
  if (!SERVER_NAME.test(name))
    throw new ServerError(`invalid server name '${name}'`, 'Use 1 to 12 characters of a-z, 0-9 and -, starting with a letter or digit (it names a network namespace and an interface).');
}

/** The bridge end of the server's veth, in the fabric. */
function fabricEnd(name: string): string {
  return `s-${name}`;
}

/** SIGTERM to everything in the namespace, then SIGKILL to what is left after the grace. */
async function stopAll(namespace: string): Promise<void> {
  const signal = (sig: NodeJS.Signals) => {
    for (const pid of netnsPids(namespace)) {
      try {
        process.kill(pid, sig);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
      }
    }
  };
  signal('SIGTERM');
  const deadline = Date.now() + STOP_GRACE_MS;
  while (netnsPids(namespace).length && Date.now() < deadline) await sleep(100);
  signal('SIGKILL');
}

/**
 * `ostia server create|list|delete`: servers on the bridge networks of a running `ostia up`
 * (../network/bridge-network/servers.ts), the backends an OpenStack user would boot with Nova.
 */
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import type { Servers } from '../network/bridge-network/servers.js';
import { CliError, formatTable, printJson, usageError, writeLine, type Command, type CommandGroup, type Input } from './command.js';
import { configFromFlags, dataDirOption, openExisting } from './settings.js';

const details = [
  "Needs root, and the networks of a running 'ostia up' with network.driver bridge on the same --data-dir and --config:",
  'the server opens the same database (database.url) to take its address, as a port row of the network.',
].join('\n');

const create: Command = {
  name: 'server create',
  summary: "Create a server on a network: a namespace plugged into the network's bridge with an address of its subnet, optionally running a command.",
  rest: 'COMMAND',
  options: {
    network: { type: 'string', value: 'NETWORK', help: 'network id or name from network.networks (e.g. private)' },
    name: { type: 'string', value: 'NAME', help: 'server name: 1 to 12 characters of a-z, 0-9 and -' },
    ...dataDirOption,
  },
  details: [
    details,
    'COMMAND runs detached as root inside the namespace, with OSTIA_SERVER_ADDRESS set to the server\'s address, its',
    'output in DATA_DIR/servers/NAME.log. A single argument is a shell command line (sh -c), so quote it whole:',
    `  ostia server create --network private --name web1 -- 'python3 -m http.server 8000 --bind "$OSTIA_SERVER_ADDRESS"'`,
    'Prints the address (with --json: name, network, address, namespace, pid, log).',
  ].join('\n'),
  async run(input) {
    const name = required(create, input, 'name');
    const network = required(create, input, 'network');
    const created = await withServers(create, input, (servers, db) => servers.create(db.kysely, { name, network, command: input.positionals }));
    if (input.json) printJson(created);
    else {
      writeLine(process.stdout, created.address);
      writeLine(process.stderr, `ostia server create: ${created.name} on ${created.network} at ${created.address}, namespace ${created.namespace}${created.pid === null ? '' : `, pid ${created.pid}, log ${created.log}`}`);
    }
    return 0;
  },
};

const list: Command = {
  name: 'server list',
  summary: 'List the servers with their network, address, namespace and the processes running in it.',
  options: { ...dataDirOption },
  details,
  async run(input) {
    const servers = await withServers(list, input, (s, db) => s.list(db.kysely));
    if (input.json) printJson({ servers });
    else if (!servers.length) process.stdout.write('No servers.\n');
    else
      process.stdout.write(
        formatTable([
          ['NAME', 'NETWORK', 'ADDRESS', 'NAMESPACE', 'PROCESSES'],
          ...servers.map((s) => [s.name, s.network, s.address, s.namespace, s.namespace_exists ? s.pids.join(' ') || 'none' : 'namespace gone: delete and create again']),
        ]),
      );
    return 0;
  },
};

const remove: Command = {
  name: 'server delete',
  summary: 'Delete a server: end what runs in its namespace, remove the namespace and free its address.',
  positionals: ['name'],
  options: { ...dataDirOption },
  details,
  async run(input) {
    const name = input.positionals[0]!;
    await withServers(remove, input, (servers, db) => servers.delete(db.kysely, name));
    if (input.json) printJson({ deleted: name });
    else writeLine(process.stdout, `Deleted server ${name}.`);
    return 0;
  },
};

export const server: CommandGroup = {
  name: 'server',
  summary: "Create, list and delete servers on Ostia's bridge networks: members for load balancers, and clients.",
  commands: [create, list, remove],
};

function required(command: Command, input: Input, option: string): string {
  const value = input.values[option];
  if (typeof value !== 'string' || value === '') throw usageError(command, `--${option} is required`);
  return value;
}

/** The servers of the configured Ostia and its database, open for `use`; refusals become one line with what to do. */
async function withServers<T>(command: Command, input: Input, use: (servers: Servers, db: Db) => Promise<T>): Promise<T> {
  const { requireRoot, serversOf, ServerError } = await import('../network/bridge-network/servers.js');
  const refusal = (e: unknown) => (e instanceof ServerError ? new CliError(e.message, e.hint) : e);
  try {
    // Before the config, whose check of network.driver bridge would say "needs root" less plainly.
    requireRoot();
  } catch (e) {
    throw refusal(e);
  }
  const config = configFromFlags(command, input);
  requireBridge(config);
  const db = await openExisting(config);
  try {
    return await use(serversOf(config), db);
  } catch (e) {
    throw refusal(e);
  } finally {
    await db.close();
  }
}

function requireBridge(config: Config): void {
  if (config.network.driver === 'bridge') return;
  throw new CliError(
    `servers live on the bridges of network.driver bridge, but this Ostia's network.driver is ${config.network.driver}`,
    "Start 'ostia up' as root with network.driver bridge (and compute.driver netns) in its --config, and pass the same --config and --data-dir here.",
  );
}

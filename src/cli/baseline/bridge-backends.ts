/**
 * The members of the baseline's load balancers under network.driver bridge: two servers on the member network
 * (`ostia server create`'s namespaces, ../../network/bridge-network/servers.ts), each running a Node HTTP
 * server, deleted again with the rest of the mix. Needs root and the service's database, where a server's
 * address is a port row.
 */
import { randomBytes } from 'node:crypto';
import type { Config } from '../../config.js';
import { CliError } from '../command.js';
import { openExisting } from '../settings.js';
import { httpGet } from './interruption.js';
import type { Backends } from './local-backends.js';

const PORT = 8000;
const READY_TIMEOUT_MS = 15_000;
const SERVE = `require('node:http').createServer((q, s) => s.end('ok\\n')).listen(${PORT}, process.env.OSTIA_SERVER_ADDRESS)`;

export async function startBridgeBackends(config: Config, network: string, count: number): Promise<Backends> {
  const { serversOf, ServerError } = await import('../../network/bridge-network/servers.js');
  const servers = serversOf(config);
  const db = await openExisting(config);
  const tag = randomBytes(3).toString('hex');
  const names: string[] = [];
  const close = async () => {
    for (const name of names) await servers.delete(db.kysely, name).catch(() => undefined);
    await db.close();
  };
  try {
    const members: Backends['members'] = [];
    for (let i = 0; i < count; i++) {
      const name = `bl${tag}-${i}`;
      names.push(name);
      const created = await servers.create(db.kysely, { name, network, command: [process.execPath, '-e', SERVE] });
      members.push({ address: created.address, port: PORT });
    }
    for (const m of members) {
      const deadline = Date.now() + READY_TIMEOUT_MS;
      while ((await httpGet(m.address, m.port, '/', 1000)).status !== 200) {
        if (Date.now() > deadline) throw new CliError(`the member server at ${m.address}:${m.port} did not answer within ${READY_TIMEOUT_MS / 1000} s`, `See its log under ${config.dataDir}/servers/.`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    return { members, close };
  } catch (e) {
    await close();
    throw e instanceof ServerError ? new CliError(e.message, e.hint) : e;
  }
}

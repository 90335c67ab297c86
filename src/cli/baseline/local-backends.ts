/**
 * The members of the baseline's load balancers under the loopback drivers (network.driver catalog): HTTP
 * servers in this process on addresses of the member subnet, which must be loopback (127.0.0.0/8), so that
 * no load leaves the machine.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bigIntToIp, cidrContains, parseCidr } from '../../domain/net.js';
import { CliError } from '../command.js';

export interface Member {
  address: string;
  port: number;
}

export interface Backends {
  members: Member[];
  close(): Promise<void>;
}

const BODY = 'ok\n';
const TRIES = 8;
const LOOPBACK = parseCidr('127.0.0.0/8')!;

async function listen(server: Server, address: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => (e.code === 'EADDRINUSE' ? resolve(false) : reject(e)));
    server.listen(0, address, () => resolve(true));
  });
}

/** `count` servers on random addresses of `cidr` (a loopback subnet). */
export async function startLocalBackends(cidr: string, count: number): Promise<Backends> {
  const subnet = parseCidr(cidr);
  if (!subnet || subnet.version !== 4 || subnet.prefix < 8 || !cidrContains(LOOPBACK, bigIntToIp(subnet.network, 4)))
    throw new CliError(`the member subnet ${cidr} is not loopback: the baseline serves its members from this machine only on 127.0.0.0/8`, 'Pass --member-subnet with a subnet of 127.0.0.0/8 (the default private-subnet of network.driver catalog is one).');
  const hosts = 2 ** (32 - subnet.prefix);
  const servers: Server[] = [];
  const members: Member[] = [];
  const close = () => Promise.all(servers.map((s) => new Promise<void>((resolve) => (s.closeAllConnections(), s.close(() => resolve()))))).then(() => undefined);
  try {
    while (members.length < count) {
      let bound = false;
      for (let i = 0; i < TRIES && !bound; i++) {
        // Away from the network and broadcast addresses and from the low ones a pool hands out first.
        const address = bigIntToIp(subnet.network + BigInt(Math.max(1, Math.floor(hosts / 2 + Math.random() * (hosts / 2 - 2)))), 4);
        const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end(BODY));
        server.keepAliveTimeout = 60_000;
        bound = await listen(server, address);
        if (!bound) continue;
        servers.push(server);
        members.push({ address, port: (server.address() as AddressInfo).port });
      }
      if (!bound) throw new CliError(`no free address for a member in ${cidr} after ${TRIES} tries`, 'Pass --member-subnet with a subnet that has free addresses.');
    }
  } catch (e) {
    await close();
    throw e;
  }
  return { members, close };
}

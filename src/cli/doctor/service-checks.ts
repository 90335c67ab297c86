/**
 * The checks of the service as a whole: its certificate authorities and the controller's client
 * certificate, the free addresses of every subnet it allocates from, the database's clock, and the
 * health manager (a socket bound where amphorae send heartbeats; its refusals by reason when it serves
 * its metrics apart, amphora.healthMetricsListen).
 */
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import { DAY_MS, expiryWarning } from '../../domain/certificate-expiry.js';
import { bigIntToIp, ipToBigInt, ipVersion, parseHostPort } from '../../domain/net.js';
import { NetworkCatalog, type SubnetDef } from '../../network/catalog.js';
import { MANAGEMENT_SUBNET_ID } from '../../network/management-ports.js';
import type { Identity } from './agent-probe.js';
import { clockVerdict } from './clock.js';
import { row, type CheckRow, type Result } from './verdict.js';

/** The CA files of src/pki/ca.ts, and the controller's key and certificate in one file. */
const PKI = { serverCa: 'server-ca.pem', clientCa: 'client-ca.pem', controller: 'controller-client.pem' } as const;

export function certificateChecks(pki: string, now = new Date()): { rows: CheckRow[]; identity: Identity | null; serverCaFile: string } {
  const read = (file: string) => {
    try {
      return readFileSync(join(pki, file), 'utf8');
    } catch {
      return null;
    }
  };
  const serverCaFile = join(pki, PKI.serverCa);
  const [serverCa, clientCa, controller] = [read(PKI.serverCa), read(PKI.clientCa), read(PKI.controller)];
  const missing = (file: string) =>
    row('certificate', join(pki, file), 'FAIL', `no ${file} in ${pki}: this is not the data directory the service runs with, or its CA was never made; pass its --data-dir (and --config).`);
  const rows: CheckRow[] = [];
  const parsed = (pem: string | null, file: string) => {
    if (pem === null) {
      rows.push(missing(file));
      return null;
    }
    try {
      return new X509Certificate(pem);
    } catch (e) {
      rows.push(row('certificate', join(pki, file), 'FAIL', `${file} holds no certificate Node can read (${(e as Error).message}); put back the file the service made.`));
      return null;
    }
  };
  const server = parsed(serverCa, PKI.serverCa);
  const client = parsed(clientCa, PKI.clientCa);
  const leaf = parsed(controller, PKI.controller);
  if (server) rows.push(row('certificate', serverCaFile, ...validity(server, 'the server CA (it signs every agent certificate)', now)));
  if (client) rows.push(row('certificate', join(pki, PKI.clientCa), ...validity(client, 'the client CA (agents trust it for the controller)', now)));
  if (leaf && client) {
    const chained = leaf.checkIssued(client) && leaf.verify(client.publicKey);
    rows.push(
      chained
        ? row('certificate', join(pki, PKI.controller), ...validity(leaf, "the controller's client certificate, issued by the client CA,", now))
        : row('certificate', join(pki, PKI.controller), 'FAIL', `the controller's client certificate is not issued by ${PKI.clientCa}: agents refuse it; delete ${PKI.controller} and the controller issues a new one at its next agent call.`),
    );
  }
  const keyPem = controller?.match(/-----BEGIN PRIVATE KEY-----[\s\S]+?-----END PRIVATE KEY-----\n?/)?.[0];
  const identity = serverCa && controller && keyPem ? { serverCaPem: serverCa, clientCertPem: controller.replace(keyPem, ''), clientKeyPem: keyPem } : null;
  return { rows, identity, serverCaFile };
}

function validity(cert: X509Certificate, what: string, now: Date): [Result, string] {
  const days = (Date.parse(cert.validTo) - now.getTime()) / DAY_MS;
  const warning = expiryWarning(days);
  if (days < 0) return ['FAIL', `${what} ${warning}: nothing it signed is trusted any more; issue a new one (a new CA means failing over every amphora).`];
  if (Date.parse(cert.validFrom) > now.getTime()) return ['FAIL', `${what} is not valid before ${cert.validFrom}: this machine's clock is behind.`];
  if (warning) return ['WARN', `${what} ${warning} (${cert.validTo}): plan its renewal.`];
  return ['ok', `${what} is valid until ${cert.validTo}, ${Math.floor(days)} days left.`];
}

/** Free addresses of the management network and of each configured subnet, from one read of the port table. */
export async function addressPoolChecks(db: Db, config: Config): Promise<CheckRow[]> {
  const catalog = new NetworkCatalog(config.network);
  const { cidr, start, end } = config.amphora.managementNetwork;
  const management = { id: MANAGEMENT_SUBNET_ID, name: 'ostia-management', cidr, allocation_pools: [{ start, end }] };
  const ports = await db.kysely.selectFrom('port').select(['subnet_id', 'ip_address']).execute();
  const used = new Map<string, string[]>();
  for (const p of ports) used.set(p.subnet_id, [...(used.get(p.subnet_id) ?? []), p.ip_address]);
  return [management, ...catalog.subnets].map((subnet) => {
    const target = subnet.id === MANAGEMENT_SUBNET_ID ? `management network ${subnet.cidr}` : `subnet ${subnet.name} (${subnet.cidr})`;
    return row('address pool', target, ...poolVerdict(subnet, used.get(subnet.id) ?? [], subnet.id === MANAGEMENT_SUBNET_ID));
  });
}

export function poolVerdict(subnet: Pick<SubnetDef, 'allocation_pools'>, used: readonly string[], management: boolean): [Result, string] {
  let size = 0n;
  for (const pool of subnet.allocation_pools) if (ipVersion(pool.start)) size += ipToBigInt(pool.end) - ipToBigInt(pool.start) + 1n;
  const inPools = used.filter((a) => subnet.allocation_pools.some((p) => ipVersion(p.start) === ipVersion(a) && ipToBigInt(a) >= ipToBigInt(p.start) && ipToBigInt(a) <= ipToBigInt(p.end)));
  const free = size - BigInt(new Set(inPools).size);
  const pools = subnet.allocation_pools.map((p) => `${p.start}-${p.end}`).join(', ');
  const widen = management ? 'widen amphora.managementNetwork.start/end' : "widen the subnet's allocation_pools in network.networks";
  const who = management ? 'amphorae (each takes one; a failover briefly two)' : 'VIPs, amphora ports and servers';
  if (free <= 0n) return ['FAIL', `no address handed out: all ${size} addresses of ${pools} are taken, so no new ${management ? 'amphora boots' : 'port is made'}; delete what is no longer needed ('ostia housekeeping' removes amphorae of deleted load balancers) or ${widen}.`];
  if (free * 10n < size) return ['WARN', `${free} of ${size} addresses of ${pools} free for ${who}: fewer than a tenth; ${widen} before it runs out.`];
  return ['ok', `${free} of ${size} addresses of ${pools} free for ${who}.`];
}

/** The database's clock against this machine's; SQLite is a file on this machine. */
export async function databaseClockCheck(db: Db, limitMs: number): Promise<CheckRow> {
  if (db.dialect !== 'postgres') return row('clock', 'database (SQLite)', 'ok', "the database is a file on this machine: it has this machine's clock.");
  const sentAt = Date.now();
  const { rows } = await sql<{ ms: string }>`select (extract(epoch from clock_timestamp()) * 1000)::bigint::text as ms`.execute(db.kysely);
  const answeredAt = Date.now();
  const theirs = Number(rows[0]!.ms);
  return row('clock', 'database (PostgreSQL)', ...clockVerdict('the PostgreSQL server', { low: theirs - answeredAt, high: theirs + 1 - sentAt }, limitMs));
}

/** Whether a UDP socket of this machine is bound where amphorae send heartbeats, and what the health manager refused, when it says. */
export async function healthManagerCheck(config: Config, timeoutMs: number): Promise<CheckRow[]> {
  const listen = config.amphora.healthListen;
  const { host, port } = parseHostPort(listen, 'amphora.healthListen');
  const bound = udpSockets().some((s) => s.port === port && (s.address === host || s.address === '0.0.0.0' || s.address === '::'));
  const rows = [
    bound
      ? row('health manager', listen, 'ok', `a UDP socket of this machine is bound to ${listen}, where amphorae send heartbeats.`)
      : row('health manager', listen, 'FAIL', `no UDP socket of this machine is bound to ${listen}: no health manager receives heartbeats here; start 'ostia up' or 'ostia health' with this configuration (or run the doctor where it runs).`),
  ];
  const metrics = config.amphora.healthMetricsListen;
  if (!metrics) return rows;
  const text = await fetch(`http://${metrics}/metrics`, { signal: AbortSignal.timeout(timeoutMs) }).then(
    (r) => (r.ok ? r.text() : null),
    () => null,
  );
  if (text === null) return [...rows, row('health manager', metrics, 'WARN', `its metrics at http://${metrics}/metrics did not answer: heartbeat refusals could not be read.`)];
  const refused = (reason: string) => Number(new RegExp(`^ostia_heartbeats_refused_total\\{reason="${reason}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  const [badMac, stale] = [refused('bad_mac'), refused('stale')];
  if (badMac > 0) return [...rows, row('health manager', metrics, 'WARN', `${badMac} heartbeats refused for an invalid MAC since it started: an amphora signs with a key not derived from the current heartbeat secret, or someone forges heartbeats (see the heartbeat rows).`)];
  if (stale > 0) return [...rows, row('health manager', metrics, 'WARN', `${stale} heartbeats refused as stale since it started: an amphora's clock is off (see the clock rows).`)];
  return [...rows, row('health manager', metrics, 'ok', 'no heartbeat refused for an invalid MAC or as stale since it started.')];
}

/** This namespace's bound UDP sockets, from /proc/net/udp and udp6 (Linux; none elsewhere). */
function udpSockets(): Array<{ address: string; port: number }> {
  const read = (file: string, v6: boolean) => {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return [];
    }
    return text
      .split('\n')
      .slice(1)
      .filter(Boolean)
      .map((line) => {
        const [hex, portHex] = line.trim().split(/\s+/)[1]!.split(':') as [string, string];
        return { address: v6 ? procV6(hex) : bigIntToIp(BigInt(`0x${hex.match(/../g)!.reverse().join('')}`), 4), port: parseInt(portHex, 16) };
      });
  };
  return [...read('/proc/net/udp', false), ...read('/proc/net/udp6', true)];
}

/** /proc/net/udp6 spells an address as four little-endian 32-bit words. */
function procV6(hex: string): string {
  const words = hex.match(/.{8}/g)!.map((w) => w.match(/../g)!.reverse().join(''));
  const address = bigIntToIp(BigInt(`0x${words.join('')}`), 6);
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  return mapped ? mapped[1]! : address === '::' ? '::' : address;
}


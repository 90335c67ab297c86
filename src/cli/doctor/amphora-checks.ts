/**
 * The checks of one amphora: the controller's way to its agent (route, port, TLS, API), its clock, its
 * heartbeats as the health manager sees them (lag, and whether it signs them with the key the health
 * manager derives, sent where it listens), and any nftables rule on the way that drops either.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AMPHORA_FILES } from '../../compute/process-compute.js';
import type { AgentBootConfig } from '../../compute/compute-driver.js';
import type { AmphoraRow } from '../../db/records/amphora.js';
import { heartbeatKey } from '../../providers/amphora/heartbeat-key.js';
import { probeInfo, probeTcp, probeTls, routeTo, type Identity, type InfoOutcome, type TcpOutcome, type TlsOutcome } from './agent-probe.js';
import { clockVerdict } from './clock.js';
import { blockedAt, describePacket, listRuleset, type Ruleset } from './firewall.js';
import { routeVerdict, type ManagementPlane } from './plane.js';
import { row, type CheckRow } from './verdict.js';

export interface AmphoraContext {
  plane: ManagementPlane;
  agentPort: number;
  health: { host: string; port: number; listen: string };
  heartbeat: { intervalMs: number; timeoutMs: number; secret: string | null };
  /** The controller's client identity and the server CA; null when the data directory has none (the certificate rows say why). */
  identity: Identity | null;
  serverCaFile: string;
  amphoraDir(amphoraId: string): string;
  timeoutMs: number;
  /** Rulesets by namespace (null key: this machine's), listed once per run. */
  ruleset(netns: string | null): Promise<Ruleset | null>;
}

export function rulesetCache(): (netns: string | null) => Promise<Ruleset | null> {
  const cache = new Map<string | null, Promise<Ruleset | null>>();
  return (netns) => {
    if (!cache.has(netns)) cache.set(netns, listRuleset(netns));
    return cache.get(netns)!;
  };
}

export async function checkAmphora(amp: AmphoraRow, ctx: AmphoraContext, now = Date.now()): Promise<CheckRow[]> {
  const address = amp.lb_network_ip!;
  const target = `amphora ${amp.id} (${address})`;
  const route = await routeTo(address);
  const routed = routeVerdict(ctx.plane, address, route);
  const rows = [row('management route', target, routed.ok ? 'ok' : 'FAIL', routed.detail)];
  const source = 'error' in route ? null : route.prefsrc;
  const [agentRows, heartbeatRows, firewallRows] = await Promise.all([
    agentChecks(amp, target, ctx),
    heartbeatChecks(amp, target, ctx, now),
    source ? firewallChecks(amp, target, source, ctx) : Promise.resolve([]),
  ]);
  return [...rows, ...agentRows, ...heartbeatRows, ...firewallRows];
}

async function agentChecks(amp: AmphoraRow, target: string, ctx: AmphoraContext): Promise<CheckRow[]> {
  const address = amp.lb_network_ip!;
  const tcp = await probeTcp(address, ctx.agentPort, ctx.timeoutMs);
  const rows = [row('agent port', target, tcp.open ? 'ok' : 'FAIL', tcpDetail(tcp, address, ctx, amp.id), tcp.open ? tcp.ms : null)];
  if (!tcp.open) return rows;
  if (!ctx.identity) return [...rows, row('agent TLS', target, 'FAIL', `no controller client certificate or server CA to make the handshake with (see the certificate rows).`)];
  const tls = await probeTls(address, ctx.agentPort, amp.id, ctx.identity, ctx.timeoutMs);
  rows.push(row('agent TLS', target, tls.ok ? 'ok' : 'FAIL', tlsDetail(tls, amp, ctx), tls.ok ? tls.ms : null));
  if (!tls.ok) return rows;
  rows.push(...certificateRows(amp, target, tls));
  const info = await probeInfo(tls.socket, address, ctx.timeoutMs);
  rows.push(apiRow(info, amp, target));
  if (!('error' in info) && info.date !== null) rows.push(row('clock', target, ...clockVerdict(`the agent of amphora ${amp.id}`, agentSkew(info), ctx.heartbeat.timeoutMs)));
  return rows;
}

function tcpDetail(tcp: TcpOutcome, address: string, ctx: AmphoraContext, amphoraId: string): string {
  const where = `${address}:${ctx.agentPort}`;
  if (tcp.open) return `TCP to the agent at ${where} connected.`;
  const failover = `'openstack loadbalancer amphora failover ${amphoraId}' replaces the amphora`;
  if (tcp.code === 'ECONNREFUSED') return `connection refused at ${where}: no agent listens there (stopped or crashed), or a reject rule answers for it (see the firewall rows); ${failover}.`;
  if (tcp.code === 'ETIMEDOUT')
    return `no answer to TCP at ${where} within ${ctx.timeoutMs} ms: packets are dropped on the way, by a firewall between the control plane and the amphorae or a management network that is down (see the route and firewall rows).`;
  return `cannot connect to ${where} (${tcp.code}): this machine has no way to the management address (see the route row).`;
}

function tlsDetail(tls: TlsOutcome, amp: AmphoraRow, ctx: AmphoraContext): string {
  if (tls.ok) {
    const days = (Date.parse(tls.peer.valid_to) - Date.now()) / 86_400_000;
    return `mutual TLS handshake done: the agent's certificate names amphora ${amp.id}, chains to the server CA ${ctx.serverCaFile} and expires in ${Math.floor(days)} days; it accepted the controller's client certificate.`;
  }
  const failover = `fail the amphora over ('openstack loadbalancer amphora failover ${amp.id}') so it boots with a certificate of this CA`;
  switch (tls.code) {
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
    case 'CERT_SIGNATURE_FAILURE':
      return `wrong CA: the agent's certificate does not chain to the server CA ${ctx.serverCaFile} (${tls.code}): that file was replaced since the amphora booted, or belongs to another Ostia; put back the CA directory the service runs with, or ${failover}.`;
    case 'CERT_HAS_EXPIRED':
      return `the agent's certificate has expired: housekeeping rotates agent certificates before they expire, so check that it runs ('ostia housekeeping', or 'ostia up'); or ${failover}.`;
    case 'CERT_NOT_YET_VALID':
      return `the agent's certificate is not valid yet: this machine's clock is behind the CA's (see the clock rows).`;
    case 'ERR_TLS_CERT_ALTNAME_INVALID':
      return `the agent at ${amp.lb_network_ip} presents a certificate that does not name amphora ${amp.id}: another amphora answers on its address (two amphorae hold one management address); ${failover}.`;
    case 'ETIMEDOUT':
      return `TCP connects but no TLS handshake within ${ctx.timeoutMs} ms: the agent accepts connections and does not answer (a stopped or hung process); ${failover}.`;
    default:
      if (/unknown ca|certificate unknown|bad certificate/i.test(tls.message))
        return `the agent refused the controller's client certificate (${tls.message.trim()}): it trusts another client CA than ${ctx.serverCaFile.replace(/server-ca\.pem$/, 'client-ca.pem')}; put back the CA directory the service runs with, or ${failover}.`;
      return `the TLS handshake with the agent failed (${tls.code}: ${tls.message.trim()}); ${failover}.`;
  }
}

function certificateRows(amp: AmphoraRow, target: string, tls: Extract<TlsOutcome, { ok: true }>): CheckRow[] {
  const days = (Date.parse(tls.peer.valid_to) - Date.now()) / 86_400_000;
  const serial = tls.peer.serialNumber.replace(/^0+/, '').toLowerCase();
  const recorded = amp.cert_serial?.replace(/^0+/, '').toLowerCase() ?? null;
  if (recorded !== null && recorded !== serial)
    return [row('certificate', target, 'WARN', `the agent serves certificate serial ${serial}, not ${recorded} as the database records: a rotation did not finish; housekeeping rotates it again before it expires (in ${Math.floor(days)} days).`)];
  return [];
}

function apiRow(info: InfoOutcome | { error: string }, amp: AmphoraRow, target: string): CheckRow {
  if ('error' in info) return row('agent API', target, 'FAIL', `GET /1.0/info failed after the handshake: ${info.error}; the agent is hung or crashing, see agent.log in its directory.`);
  if (info.status !== 200) return row('agent API', target, 'FAIL', `GET /1.0/info answered ${info.status}: ${info.body.slice(0, 200)}; see agent.log in the amphora's directory.`, info.ms);
  let parsed: { amphoraId?: string; apiVersion?: string; haproxyVersion?: string; configVersion?: number };
  try {
    parsed = JSON.parse(info.body) as typeof parsed;
  } catch {
    return row('agent API', target, 'FAIL', `GET /1.0/info answered something that is not JSON; see agent.log in the amphora's directory.`, info.ms);
  }
  if (parsed.amphoraId !== amp.id) return row('agent API', target, 'FAIL', `the agent says it is amphora ${parsed.amphoraId}, not ${amp.id}: its boot files are another amphora's; fail it over.`, info.ms);
  const versions = `agent API ${parsed.apiVersion}, HAProxy ${parsed.haproxyVersion}`;
  if ((parsed.configVersion ?? 0) < amp.config_version)
    return row('agent API', target, 'WARN', `${versions}; it runs configuration version ${parsed.configVersion}, older than version ${amp.config_version} the controller last pushed: push it again with 'openstack loadbalancer amphora configure ${amp.id}'.`, info.ms);
  return row('agent API', target, 'ok', `GET /1.0/info answered: ${versions}, configuration version ${parsed.configVersion}.`, info.ms);
}

/** The agent's clock minus ours, as an interval: its Date header has whole seconds, and the call took time. */
function agentSkew(info: InfoOutcome): { low: number; high: number } {
  return { low: info.date! - info.answeredAt, high: info.date! + 1000 - info.sentAt };
}

async function heartbeatChecks(amp: AmphoraRow, target: string, ctx: AmphoraContext, now: number): Promise<CheckRow[]> {
  const boot = await readFile(join(ctx.amphoraDir(amp.id), AMPHORA_FILES.config), 'utf8').then(
    (text) => JSON.parse(text) as AgentBootConfig,
    () => null,
  );
  const signing = boot && ctx.heartbeat.secret !== null ? boot.heartbeat.key === heartbeatKey(ctx.heartbeat.secret, amp.id) : null;
  return [row('heartbeat', target, ...heartbeatVerdict({ amp, now, signing, targets: boot?.heartbeat.targets ?? null, listen: ctx.health.listen, ...ctx.heartbeat }))];
}

export interface HeartbeatFacts {
  amp: Pick<AmphoraRow, 'id' | 'last_heartbeat_at' | 'created_at' | 'status'>;
  now: number;
  intervalMs: number;
  timeoutMs: number;
  /** Whether the amphora signs with the key the health manager derives; null when its boot file or the secret cannot be read here. */
  signing: boolean | null;
  /** Where it sends heartbeats (its boot file); null when unread. */
  targets: string[] | null;
  listen: string;
}

export function heartbeatVerdict(f: HeartbeatFacts): [CheckRow['result'], string] {
  if (f.signing === false)
    return ['FAIL', `MAC invalid: the amphora signs its heartbeats with a key the health manager does not derive from its heartbeat secret (the secret changed since it booted), so every heartbeat is refused; fail it over ('openstack loadbalancer amphora failover ${f.amp.id}') to boot it with the current key.`];
  if (f.targets && !f.targets.includes(f.listen))
    return ['FAIL', `the amphora sends heartbeats to ${f.targets.join(', ')}, but the health manager listens on ${f.listen} (amphora.healthListen changed since it booted); fail it over to boot it with the current address.`];
  const keyNote = f.signing === null ? ' (its boot file was not readable here, so the key was not compared)' : ', signed with the key the health manager derives';
  const every = `every ${f.intervalMs / 1000} s`;
  if (f.amp.last_heartbeat_at === null) {
    const age = f.now - Date.parse(`${f.amp.created_at}Z`);
    if (age <= f.timeoutMs) return ['ok', `no heartbeat yet: the amphora was created ${(age / 1000).toFixed(1)} s ago${keyNote}.`];
    return ['FAIL', `no heartbeat ever received from this amphora, created ${(age / 1000).toFixed(0)} s ago${keyNote}: its heartbeats do not reach ${f.listen} (see the firewall rows), or no health manager runs there (see the health manager row).`];
  }
  const lag = f.now - f.amp.last_heartbeat_at;
  const ago = `last heartbeat ${(lag / 1000).toFixed(1)} s ago`;
  if (lag > f.timeoutMs)
    return ['FAIL', `${ago}, beyond amphora.heartbeatTimeoutMs (${f.timeoutMs / 1000} s): its heartbeats no longer reach ${f.listen} (see the firewall rows) or the amphora is down; the health manager fails over silent amphorae (status ${f.amp.status}).`];
  if (lag > 3 * f.intervalMs) return ['WARN', `${ago}, ${every} expected: heartbeats are being lost on the way to ${f.listen} (see the firewall rows), or the agent is stalling.`];
  return ['ok', `${ago} (${every} expected)${keyNote}.`];
}

async function firewallChecks(amp: AmphoraRow, target: string, source: string, ctx: AmphoraContext): Promise<CheckRow[]> {
  const flows = ctx.plane.flows(amp.id, amp.lb_network_ip!, source, ctx.agentPort, ctx.health);
  const rows: CheckRow[] = [];
  let unread = false;
  for (const flow of flows) {
    for (const crossing of flow.path) {
      const ruleset = await ctx.ruleset(crossing.place.netns);
      if (!ruleset) {
        unread = true;
        continue;
      }
      const packet = { ...flow.packet, iif: crossing.iif, oif: crossing.oif };
      const blocked = blockedAt(ruleset, crossing.place, crossing.hooks, packet);
      if (!blocked) continue;
      const exec = crossing.place.netns ? `ip netns exec ${crossing.place.netns} ` : '';
      const fix = blocked.remove ? `remove it with '${exec}${blocked.remove}'` : `admit it in that chain, or remove the chain`;
      rows.push(row('firewall', target, 'FAIL', `${flow.name} (${describePacket(packet)}) is dropped in ${blocked.place} by '${blocked.rule}' (${blocked.where}): ${fix}.`));
      break;
    }
  }
  if (rows.length) return rows;
  if (unread) return [row('firewall', target, 'WARN', `the nftables rules on the way could not be read (nft is missing, or this is not root): no rule was checked.`)];
  const where = [...new Set(flows.flatMap((f) => f.path.map((c) => c.place.name)))].join(', ');
  return [row('firewall', target, 'ok', `no nftables rule drops the agent's connections, its replies or its heartbeats (${where}).`)];
}

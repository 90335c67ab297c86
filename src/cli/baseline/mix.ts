/**
 * The baseline's mix, run against a live service through its public API: throw-away load balancers (a SINGLE
 * one with an HTTP, a TCP and, when the service has a key manager, a TERMINATED_HTTPS listener; an
 * ACTIVE_STANDBY one when the compute driver can run a pair), loaded with wrk, the amphorae's CPU read from
 * /proc, then a failover timed end to end. Everything made is deleted again, also after a failure or SIGINT.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../../config.js';
import { AMPHORA_FILES } from '../../compute/process-compute.js';
import { CliError } from '../command.js';
import { https } from './https-get.js';
import { failuresDuring, httpGet, PROBE_EVERY_MS } from './interruption.js';
import { startLocalBackends, type Backends } from './local-backends.js';
import { cpuSecondsOfLive, groupMembers } from './proc-stat.js';
import type { Session } from '../api-session.js';
import { storeCertificate } from './tls-certificate.js';
import { killAllWrk, startWrk, writeWrkScripts, type WrkResult } from './wrk.js';

export interface MixOptions {
  session: Session;
  config: Config;
  /** Seconds of each wrk run. */
  durationS: number;
  connections: number;
  vipSubnet: string;
  memberSubnet: string;
  signal: AbortSignal;
  progress(line: string): void;
}

type Protocol = 'HTTP' | 'TCP' | 'TERMINATED_HTTPS';
type Topology = 'SINGLE' | 'ACTIVE_STANDBY';

interface Part {
  /** How the figures name it. */
  label: string;
  protocol: Protocol;
  topology: Topology;
  port: number;
}

/** One part of the mix as measured: what ran, and its figures (null: could not be measured, with why). */
export interface PartResult {
  label: string;
  protocol: Protocol;
  topology: Topology;
  tls: boolean;
  requests_per_s: number;
  latency_p50_ms: number;
  latency_p99_ms: number;
  /** wrk's requests that got no good answer, keep-alive and Connection: close runs together. */
  failed_requests: number;
  new_connections_per_s: number;
  amphora_cpu_us_per_request: number | null;
  amphora_cpu_percent: number | null;
  amphora_cpu_note: string;
}

export interface FailoverResult {
  topology: Topology;
  /** First failed → first answered request after the last failure, a request every PROBE_EVERY_MS. */
  interruption_ms: number;
  failed_requests: number;
  requests: number;
  /** The failover request sent → the load balancer ACTIVE again. */
  to_active_ms: number;
}

export interface Measurements {
  parts: PartResult[];
  failovers: FailoverResult[];
  backends: string;
}

export interface MixResult extends Measurements {
  skipped: Array<{ part: string; reason: string }>;
}

const ACTIVE_TIMEOUT_MS = 180_000;
/**
 * Waits are the API's own (`GET …?wait=N`, held while PENDING_*), short enough that Ctrl-C
 * is seen between them.
 */
const HELD = 'wait=5';
const FIRST_ANSWER_TIMEOUT_MS = 30_000;
const DELETE_TIMEOUT_MS = 60_000;
const BACKENDS = 2;

const interrupted = () => new CliError('interrupted', 'Everything the baseline made is being deleted.', 130);

/** A pause that SIGINT ends at once. */
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const abort = () => (clearTimeout(t), reject(interrupted()));
    const t = setTimeout(() => (signal.removeEventListener('abort', abort), resolve()), ms);
    signal.addEventListener('abort', abort, { once: true });
  });

/** A port for a listener: the VIPs are the baseline's own, so only another listener of its own could hold one. */
const ports = (() => {
  const base = 20_000 + Math.floor(Math.random() * 30_000);
  let next = 0;
  return () => base + next++;
})();

interface LoadBalancer {
  id: string;
  vip_address: string;
  provisioning_status: string;
}

async function waitActive(o: MixOptions, id: string): Promise<LoadBalancer> {
  const deadline = Date.now() + ACTIVE_TIMEOUT_MS;
  for (;;) {
    const { loadbalancer } = await o.session.json<{ loadbalancer: LoadBalancer & { provisioning_status: string } }>('GET', `/v2/lbaas/loadbalancers/${id}?${HELD}`);
    if (loadbalancer.provisioning_status === 'ACTIVE') return loadbalancer;
    if (loadbalancer.provisioning_status === 'ERROR')
      throw new CliError(`load balancer ${id} of the baseline went to ERROR`, `See why with 'ostia trace ${id}' (it is deleted now); fix that, then run the baseline again.`);
    if (Date.now() > deadline) throw new CliError(`load balancer ${id} of the baseline is still ${loadbalancer.provisioning_status} after ${ACTIVE_TIMEOUT_MS / 1000} s`, 'Check that the worker runs (ostia up runs one) and its log.');
    if (o.signal.aborted) throw interrupted();
  }
}

async function deleteLoadBalancer(o: MixOptions, id: string): Promise<void> {
  const deadline = Date.now() + DELETE_TIMEOUT_MS;
  for (;;) {
    const r = await o.session.request('DELETE', `/v2/lbaas/loadbalancers/${id}?cascade=true`);
    if (r.status === 204 || r.status === 404) break;
    if (r.status !== 409 || Date.now() > deadline) throw new Error(`DELETE load balancer ${id}: HTTP ${r.status} ${r.text.slice(0, 200)}`);
    // Refused while a change is pending: until it is not.
    await o.session.request('GET', `/v2/lbaas/loadbalancers/${id}?${HELD}`);
  }
  while ((await o.session.request('GET', `/v2/lbaas/loadbalancers/${id}?${HELD}`)).status !== 404) {
    if (Date.now() > deadline) throw new Error(`load balancer ${id} not gone ${DELETE_TIMEOUT_MS / 1000} s after its delete`);
  }
}

interface Subnet {
  id: string;
  cidr: string;
  network_id: string;
}

async function subnet(o: MixOptions, name: string): Promise<Subnet> {
  const { subnets } = await o.session.json<{ subnets: Subnet[] }>('GET', `/v2.0/subnets?name=${encodeURIComponent(name)}`);
  if (subnets.length !== 1) throw new CliError(`the service has ${subnets.length} subnets named ${name}`, 'Name one subnet with --vip-subnet / --member-subnet (see openstack subnet list).');
  return subnets[0]!;
}

function listenerBody(name: string, part: Part, memberSubnetId: string, members: Backends['members'], tlsRef: string | null): unknown {
  const http = part.protocol !== 'TCP';
  return {
    name: `${name}-${part.protocol.toLowerCase()}`,
    protocol: part.protocol,
    protocol_port: part.port,
    ...(part.protocol === 'TERMINATED_HTTPS' && { default_tls_container_ref: tlsRef }),
    default_pool: {
      name: `${name}-${part.protocol.toLowerCase()}-pool`,
      protocol: http ? 'HTTP' : 'TCP',
      lb_algorithm: 'ROUND_ROBIN',
      members: members.map((m) => ({ address: m.address, protocol_port: m.port, subnet_id: memberSubnetId })),
    },
  };
}

const urlOf = (vip: string, part: Part) => `${part.protocol === 'TERMINATED_HTTPS' ? 'https' : 'http'}://${vip}:${part.port}/`;

async function answers(vip: string, part: Part): Promise<boolean> {
  if (part.protocol === 'TERMINATED_HTTPS') return (await https(vip, part.port)) === 200;
  return (await httpGet(vip, part.port, '/', 1000)).status === 200;
}

async function firstAnswer(o: MixOptions, vip: string, part: Part): Promise<void> {
  const deadline = Date.now() + FIRST_ANSWER_TIMEOUT_MS;
  while (!(await answers(vip, part))) {
    if (Date.now() > deadline) throw new CliError(`${part.label} on ${vip}:${part.port} is ACTIVE but did not answer within ${FIRST_ANSWER_TIMEOUT_MS / 1000} s`, "Check the amphora's HAProxy log under the data directory's amphorae/ and the members.");
    await sleep(100, o.signal);
  }
}

/** The processes of a load balancer's amphorae (agent, HAProxy, keepalived), from their pid files; or why they cannot be read. */
async function amphoraProcesses(o: MixOptions, lbId: string): Promise<number[] | string> {
  const { amphorae } = await o.session.json<{ amphorae: Array<{ id: string; status: string }> }>('GET', `/v2/octavia/amphorae?loadbalancer_id=${lbId}`);
  const pids: number[] = [];
  for (const a of amphorae.filter((x) => x.status === 'ALLOCATED')) {
    let leader: number;
    try {
      leader = (JSON.parse(readFileSync(join(o.config.dataDir, 'amphorae', a.id, AMPHORA_FILES.pid), 'utf8')) as { pid: number }).pid;
    } catch (e) {
      return `the pid file of amphora ${a.id} is not readable here (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): run the baseline on the service's machine, with its --data-dir`;
    }
    pids.push(...groupMembers(leader).map((p) => p.pid));
  }
  return pids.length ? pids : `no amphora process of load balancer ${lbId} runs on this machine`;
}

async function measurePart(o: MixOptions, lbId: string, vip: string, part: Part, scripts: { keepalive: string; close: string }): Promise<PartResult> {
  await firstAnswer(o, vip, part);
  const processes = await amphoraProcesses(o, lbId);
  o.progress(`${part.label}: wrk -c${o.connections} for ${o.durationS} s keep-alive, then ${o.durationS} s with a new connection per request`);
  const before = typeof processes === 'string' ? 0 : cpuSecondsOfLive(processes);
  const keep = await run(startWrk(urlOf(vip, part), o.connections, o.durationS, scripts.keepalive), o.signal);
  const spent = typeof processes === 'string' ? 0 : cpuSecondsOfLive(processes) - before;
  const close = await run(startWrk(urlOf(vip, part), o.connections, o.durationS, scripts.close), o.signal);
  if (keep.requests - keep.failed <= 0) throw new CliError(`${part.label} on ${vip}:${part.port} answered none of wrk's requests`, "Check the members and the amphora's HAProxy log under the data directory's amphorae/.");
  const measured = typeof processes !== 'string';
  return {
    label: part.label,
    protocol: part.protocol,
    topology: part.topology,
    tls: part.protocol === 'TERMINATED_HTTPS',
    requests_per_s: Math.round(keep.rps),
    latency_p50_ms: round2(keep.p50_ms),
    latency_p99_ms: round2(keep.p99_ms),
    failed_requests: keep.failed + close.failed,
    new_connections_per_s: Math.round(close.rps),
    amphora_cpu_us_per_request: measured && keep.requests ? Math.round((spent * 1e7) / keep.requests) / 10 : null,
    amphora_cpu_percent: measured ? Math.round((spent / keep.seconds) * 1000) / 10 : null,
    amphora_cpu_note: measured ? `utime+stime of the ${processes.length} processes of its amphorae (agent, HAProxy${part.topology === 'ACTIVE_STANDBY' ? ', keepalived' : ''}) over the keep-alive run` : processes,
  };
}

const round2 = (v: number) => Math.round(v * 100) / 100;

/** wrk's result; SIGINT kills it (killAllWrk) and the run rejects. */
async function run(wrk: ReturnType<typeof startWrk>, signal: AbortSignal): Promise<WrkResult> {
  if (signal.aborted) wrk.kill();
  return wrk.result;
}

async function timedFailover(o: MixOptions, lb: LoadBalancer, part: Part): Promise<FailoverResult> {
  o.progress(`failover of the ${part.topology} load balancer ${lb.id}: a request to ${lb.vip_address}:${part.port} every ${PROBE_EVERY_MS} ms`);
  let toActive = 0;
  const outcome = await failuresDuring(
    lb.vip_address,
    part.port,
    async () => {
      const t0 = performance.now();
      await o.session.json('PUT', `/v2/lbaas/loadbalancers/${lb.id}/failover`);
      await waitActive(o, lb.id);
      toActive = performance.now() - t0;
    },
    ACTIVE_TIMEOUT_MS,
  );
  return { topology: part.topology, interruption_ms: outcome.interruptionMs, failed_requests: outcome.failed, requests: outcome.connections, to_active_ms: Math.round(toActive) };
}

/** Why the mix cannot run on this configuration at all, or null. */
export function mixRefusal(config: Config): CliError | null {
  if (!config.api.enabledProviders.includes('amphora'))
    return new CliError("the amphora provider is not enabled, and the baseline's mix runs on amphorae", 'Add amphora to api.enabledProviders of the --config the service runs with.');
  if (config.compute.driver === 'noop') return new CliError('compute.driver is noop: no amphora runs, so there is no data plane to load', 'Run the service with compute.driver local (or netns as root).');
  return null;
}

/** Things made, deleted in reverse: load balancers first (they use the rest), then flavors and key-manager refs by URL. */
interface Made {
  lbs: string[];
  urls: string[];
}

async function startBackends(o: MixOptions, memberSubnet: Subnet): Promise<{ backends: Backends; note: string }> {
  if (o.config.network.driver === 'bridge') {
    const { startBridgeBackends } = await import('./bridge-backends.js');
    return { backends: await startBridgeBackends(o.config, memberSubnet.network_id, BACKENDS), note: `${BACKENDS} servers (namespaces) on the member network's bridge, each a Node HTTP server` };
  }
  return { backends: await startLocalBackends(memberSubnet.cidr, BACKENDS), note: `${BACKENDS} HTTP servers of the baseline's own process on the member subnet ${memberSubnet.cidr}` };
}

/** A flavor of ACTIVE_STANDBY topology, made for the pair. */
async function pairFlavor(o: MixOptions, made: Made): Promise<string> {
  const { flavorprofile } = await o.session.json<{ flavorprofile: { id: string } }>('POST', '/v2/lbaas/flavorprofiles', {
    flavorprofile: { name: 'ostia-baseline-pair', provider_name: 'amphora', flavor_data: JSON.stringify({ loadbalancer_topology: 'ACTIVE_STANDBY' }) },
  });
  made.urls.push(`/v2/lbaas/flavorprofiles/${flavorprofile.id}`);
  const { flavor } = await o.session.json<{ flavor: { id: string } }>('POST', '/v2/lbaas/flavors', { flavor: { name: 'ostia-baseline-pair', flavor_profile_id: flavorprofile.id, enabled: true } });
  made.urls.push(`/v2/lbaas/flavors/${flavor.id}`);
  return flavor.id;
}

export async function runMix(o: MixOptions): Promise<MixResult> {
  const skipped: MixResult['skipped'] = [];
  const made: Made = { lbs: [], urls: [] };
  const work = mkdtempSync(join(tmpdir(), 'ostia-baseline-'));
  let backends: Backends | undefined;
  const onSignal = () => killAllWrk();
  o.signal.addEventListener('abort', onSignal);
  try {
    const [vipSubnet, memberSubnet] = [await subnet(o, o.vipSubnet), await subnet(o, o.memberSubnet)];
    const started = await startBackends(o, memberSubnet);
    backends = started.backends;
    o.progress(`members: ${backends.members.map((m) => `${m.address}:${m.port}`).join(', ')} (${started.note})`);
    let tlsRef: string | null = null;
    if (o.session.keyManagerUrl) tlsRef = await storeCertificate(o.session, o.session.keyManagerUrl, made.urls);
    else skipped.push({ part: 'HTTPS (terminated)', reason: "the service's catalog names no key-manager endpoint to hold the listener's certificate" });
    const single: Part[] = [
      { label: 'HTTP', protocol: 'HTTP', topology: 'SINGLE', port: ports() },
      ...(tlsRef ? [{ label: 'HTTPS (terminated)', protocol: 'TERMINATED_HTTPS' as const, topology: 'SINGLE' as const, port: ports() }] : []),
      { label: 'TCP', protocol: 'TCP', topology: 'SINGLE', port: ports() },
    ];
    const pair: Part | null = o.config.compute.driver === 'netns' ? { label: 'HTTP ACTIVE_STANDBY', protocol: 'HTTP', topology: 'ACTIVE_STANDBY', port: ports() } : null;
    if (!pair) skipped.push({ part: 'HTTP ACTIVE_STANDBY', reason: `compute.driver ${o.config.compute.driver} runs no amphora pair with a shared VIP (netns does, as root)` });
    const create = async (name: string, parts: readonly Part[], flavorId?: string) => {
      o.progress(`creating load balancer ${name} with ${parts.map((p) => p.label).join(', ')} listener(s)`);
      const posted = await o.session.json<{ loadbalancer: LoadBalancer }>('POST', '/v2/lbaas/loadbalancers', {
        loadbalancer: { name, vip_subnet_id: vipSubnet.id, provider: 'amphora', ...(flavorId && { flavor_id: flavorId }), listeners: parts.map((p) => listenerBody(name, p, memberSubnet.id, backends!.members, tlsRef)) },
      });
      made.lbs.push(posted.loadbalancer.id);
      return posted.loadbalancer.id;
    };
    const ids = [await create('ostia-baseline', single), ...(pair ? [await create('ostia-baseline-pair', [pair], await pairFlavor(o, made))] : [])];
    const [lb, pairLb] = await Promise.all(ids.map((id) => waitActive(o, id)));
    const scripts = writeWrkScripts(work);
    const parts: PartResult[] = [];
    for (const part of single) parts.push(await measurePart(o, lb!.id, lb!.vip_address, part, scripts));
    if (pair) parts.push(await measurePart(o, pairLb!.id, pairLb!.vip_address, pair, scripts));
    const failovers = [await timedFailover(o, lb!, single[0]!), ...(pair ? [await timedFailover(o, pairLb!, pair)] : [])];
    return { parts, failovers, skipped, backends: started.note };
  } finally {
    o.signal.removeEventListener('abort', onSignal);
    killAllWrk();
    await cleanup(o, made, backends);
    rmSync(work, { recursive: true, force: true });
  }
}

async function cleanup(o: MixOptions, made: Made, backends: Backends | undefined): Promise<void> {
  const left: string[] = [];
  if (made.lbs.length) o.progress(`deleting the ${made.lbs.length} load balancer(s) the baseline made`);
  await Promise.all(made.lbs.map((id) => deleteLoadBalancer(o, id).catch((e: Error) => left.push(`load balancer ${id} (${e.message})`))));
  for (const url of made.urls.reverse()) {
    const r = await o.session.request('DELETE', url).catch((e: Error) => ({ status: 0, text: e.message }));
    if (r.status !== 204 && r.status !== 404) left.push(`${url} (HTTP ${r.status})`);
  }
  await backends?.close();
  if (left.length) o.progress(`could not delete, remove by hand: ${left.join('; ')}`);
}

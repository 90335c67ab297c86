/**
 * TLS bench of the amphora provider (issue 4): HTTPS terminated by an amphora built by a real
 * `ostia up`, against the same HAProxy binary run by hand on a config an expert would write with
 * the same certificate file and TLS settings, same backends, same run — every figure is a ratio
 * inside one run on a shared, noisy machine.
 *
 *   npm run build && node dist/bench/amphora-tls.js [--json] [--seconds 6] [--connections 50] [--modes keepalive,close,full]
 *                                                     [--full-clients 4] [--reps 5] [--renewals 20] [--renew-connections 10]
 *                                                     [--key ec-p256|rsa2048] [--store pkcs12|container]
 *
 * Certificates: a root and an intermediate CA and three leaves for bench.example.com, which also
 * name the VIP address in their subjectAltName (made by openssl, test/support/test-pki.ts). The
 * leaves are stored in the embedded key manager over its Barbican API with the demo project's
 * token, as PKCS#12 bundles (leaf + intermediate + key, OpenSSL 3's default profile, empty
 * password) or as certificate containers. The listener is TERMINATED_HTTPS with Ostia's default
 * TLS settings (versions, ciphers, ALPN) over a default pool of the two backends.
 *
 * (a) Throughput: `wrk -t1 -cN -dS --latency https://VIP:port/` through the amphora and through the
 *     hand-written HAProxy, keep-alive and with a new connection per request (`Connection: close`
 *     set from wrk's Lua script, so every request pays a TLS handshake), and `openssl s_time -new`
 *     processes for full handshakes (./support/s-time.ts); repetitions interleaved (repetition →
 *     mode → connections → target, the target order alternating), medians, with HAProxy CPU per
 *     request read from /proc. wrk sends the URL's host, the VIP's address, as SNI; with one
 *     certificate HAProxy serves it whatever the name, and wrk verifies nothing. wrk keeps the TLS
 *     session of a connection it reopens, so its new connections are mostly resumed handshakes
 *     (abbreviated, no certificate sent): the report gives the share HAProxy counted as resumed
 *     (SslFrontendSessionReuse_pct, sampled mid-run), which is why the full-handshake mode exists.
 *     The hand-written config is the same global limits (maxconn, nbthread read from the amphora's
 *     `show info`), a `bind` whose TLS keywords are copied from the amphora's own haproxy.cfg
 *     (ssl-min-ver, ssl-max-ver, ciphers, ciphersuites, alpn) with `crt` naming a PEM file of the
 *     same leaf, intermediate and key, the amphora's timeouts, roundrobin over the same backends,
 *     and nothing else; it listens on the VIP address too, on another port, and runs in a session
 *     of its own (./support/hand-haproxy.ts).
 * (b) Renewals under load: with wrk keep-alive and wrk `Connection: close` on the target, plus Node
 *     clients making a new connection per request that verify the served chain against the root
 *     CA for bench.example.com (each of their failures counted exactly), the listener's
 *     certificate is renewed N times, cycling through the three leaves: a PUT of
 *     default_tls_container_ref, timed from the call to the new fingerprint being served at the
 *     VIP (src/providers/amphora/tls-probe.ts servedFingerprint, polled) and to the listener
 *     being ACTIVE again. A renewal "reloaded" when the HAProxy pids under the amphora's directory
 *     changed across it (and the agent's log says why). Baseline: the same renewals on the
 *     hand-written HAProxy the classic way — the new PEM file written (by rename) and a master-CLI
 *     `reload` — timed from the write to the new fingerprint being served and to `Loading success`.
 *
 * Backends: two nginx processes (worker_processes 1), or two Node processes when nginx is missing
 * (slower; the report says so). Everything listens on 127.0.0.0/8. Every process the bench starts —
 * wrk, s_time, backends, HAProxy, ostia and the amphora's processes — is killed in `finally` and on SIGINT.
 */
import { X509Certificate } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import type { HaproxyFiles } from '../src/amphora-agent/haproxy/process.js';
import { eventually, randomPort } from '../test/support/amphora-fixtures.js';
import { createTestPki, type IssuedCert, type KeyKind, type TestPki } from '../test/support/test-pki.js';
import { servedFingerprint } from '../src/providers/amphora/tls-probe.js';
import { benchArgs, oneOf, positiveInt, positiveInts } from './support/args.js';
import type { BackendFarm } from './support/backends.js';
import { handGlobal } from './support/hand-haproxy.js';
import { interleavedThroughput, type LoadRun, type ThroughputRatio, type ThroughputRow } from './support/interleave.js';
import { inLab, labHeadline, labLoadLine, runBench, type Lab, type LabReport } from './support/lab.js';
import { readTrace, type ApiClient, type LoadBalancerView } from './support/lifecycle-api.js';
import { pollUntil, sleep } from './support/poll.js';
import { cpuMeter } from './support/processes.js';
import { progress } from './support/progress.js';
import { runSTime } from './support/s-time.js';
import { median, medianOrNull, percentile } from './support/stats.js';
import { line, num } from './support/table.js';
import { API_POLL_MS, agentReloadReasons, assertSameHaproxy, findAmphora, haproxySettings, waitLbActive, type AmphoraTarget, type HandTarget, type HaproxySettings, type HaproxyTarget } from './support/targets.js';
import { startWrk, writeWrkScripts, type WrkResult } from '../src/cli/baseline/wrk.js';

const SERVER_NAME = 'bench.example.com';
/** Leaves the renewals cycle through: the listener starts on the first. */
const LEAVES = 3;
const ACTIVE_TIMEOUT_MS = 120_000;
const RENEWAL_TIMEOUT_MS = 30_000;
/** Between two looks at the served certificate: each is a TLS handshake with the VIP. */
const SERVED_POLL_MS = 10;
const PROBE_TIMEOUT_MS = 2_000;
/** Pause between two renewals, so that one renewal's after-effects are not timed as the next one's. */
const RENEWAL_GAP_MS = 300;
/** Load before the first renewal, so renewals happen on warm connections. */
const RENEWAL_LEAD_S = 1;
/** The load's bound in the renewal phase (it is stopped as soon as the renewals are done): this per renewal, plus the lead. */
const RENEWAL_BUDGET_S = 8;
/** Node clients verifying every handshake during the renewals, and their bound in requests. */
const VERIFYING_CLIENTS = 2;
const VERIFYING_MAX_REQUESTS = 500_000;
const VERIFYING_RETRY_MS = 10;
/** bind keywords that carry the TLS settings of a listener (src/amphora-agent/haproxy/render.ts tlsProtocolOptions). */
const TLS_BIND_KEYWORDS = ['ssl-min-ver', 'ssl-max-ver', 'ciphers', 'ciphersuites', 'alpn'] as const;

const MODES = ['keepalive', 'close', 'full'] as const;
type Mode = (typeof MODES)[number];
const MODE_LABEL: Record<Mode, string> = { keepalive: 'keep-alive', close: 'new conn/req', full: 'full handshake' };
const STORES = ['pkcs12', 'container'] as const;
type Store = (typeof STORES)[number];
const KEYS = ['ec-p256', 'rsa2048'] as const;

interface Params {
  seconds: number;
  connections: number[];
  modes: Mode[];
  fullClients: number;
  reps: number;
  renewals: number;
  renewConnections: number;
  key: (typeof KEYS)[number];
  store: Store;
}

// --- certificates and the key manager -----------------------------------------------------------

interface Leaf {
  label: string;
  cert: IssuedCert;
  /** leaf + intermediate + key: the hand-written HAProxy's `crt` file. */
  pem: string;
  /** SHA-256, colon-separated, as servedFingerprint gives it. */
  fingerprint: string;
  /** Where the key manager holds it. */
  ref: string;
}

const fingerprintOf = (pem: string) => new X509Certificate(pem).fingerprint256;

function pemCertificates(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

/** Stores a leaf as the listener will reference it: a PKCS#12 secret, or a certificate container of PEM secrets. */
async function storeLeaf(km: ApiClient, pki: TestPki, cert: IssuedCert, store: Store, name: string): Promise<string> {
  const secret = async (part: string, body: Record<string, string>) =>
    (await km.json<{ secret_ref: string }>('POST', '/key-manager/v1/secrets', { name: `${name}-${part}`, ...body })).secret_ref;
  if (store === 'pkcs12') {
    const bundle = pki.pkcs12({ key: cert, certs: [cert, pki.intermediate] });
    return secret('p12', { payload: bundle.toString('base64'), payload_content_type: 'application/octet-stream', payload_content_encoding: 'base64' });
  }
  const text = (pem: string) => ({ payload: pem.trim(), payload_content_type: 'text/plain' });
  const parts = { certificate: cert.certPem, private_key: cert.keyPem, intermediates: pki.intermediate.certPem };
  const secretRefs = await Promise.all(Object.entries(parts).map(async ([part, pem]) => ({ name: part, secret_ref: await secret(part, text(pem)) })));
  return (await km.json<{ container_ref: string }>('POST', '/key-manager/v1/containers', { type: 'certificate', name, secret_refs: secretRefs })).container_ref;
}

// --- the amphora ----------------------------------------------------------------------------

interface ListenerView {
  id: string;
  provisioning_status: string;
  status_reason?: string | null;
}

/** Resolves with performance.now() when the listener is ACTIVE; a listener in ERROR is a failed renewal. */
async function waitListenerActive(a: ApiClient, id: string, timeoutMs: number): Promise<number> {
  const at = await pollUntil(
    async () => {
      const listener = (await a.json<{ listener: ListenerView }>('GET', `/v2/lbaas/listeners/${id}`)).listener;
      if (listener.provisioning_status === 'ERROR') throw new Error(`listener ${id} went to ERROR: ${listener.status_reason ?? '(no status_reason)'}`);
      return listener.provisioning_status === 'ACTIVE';
    },
    API_POLL_MS,
    timeoutMs,
  );
  if (at === null) throw new Error(`listener ${id} not ACTIVE within ${timeoutMs} ms`);
  return at;
}

interface Amphora extends AmphoraTarget {
  readonly lbId: string;
  readonly listenerId: string;
  /** The listener's `bind` line as the amphora renders it. */
  readonly bind: string;
}

/**
 * A load balancer, then (its VIP known, so the leaves can name it) the leaves in the key manager,
 * a pool of the two backends and the TERMINATED_HTTPS listener on it, each step waited for.
 */
async function buildAmphora({ ostia, api: a, farm }: Lab, port: number, issue: (vip: string) => Promise<Leaf[]>): Promise<{ amphora: Amphora; leaves: Leaf[] }> {
  const [vipSubnet, memberSubnet] = await Promise.all([ostia.subnetId('public-subnet'), ostia.subnetId('private-subnet')]);
  const lb = (await a.json<{ loadbalancer: LoadBalancerView }>('POST', '/v2/lbaas/loadbalancers', { loadbalancer: { name: 'bench-tls', vip_subnet_id: vipSubnet, provider: 'amphora' } })).loadbalancer;
  progress(`load balancer ${lb.id} created, VIP ${lb.vip_address}; waiting for ACTIVE`);
  await waitLbActive(a, lb.id, ACTIVE_TIMEOUT_MS);
  const leaves = await issue(lb.vip_address);
  const pool = (await a.json<{ pool: { id: string } }>('POST', '/v2/lbaas/pools', { pool: { name: 'p', loadbalancer_id: lb.id, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' } })).pool;
  await waitLbActive(a, lb.id, ACTIVE_TIMEOUT_MS);
  for (const e of farm.primaries) {
    await a.json('POST', `/v2/lbaas/pools/${pool.id}/members`, { member: { address: e.address, protocol_port: e.port, subnet_id: memberSubnet } });
    await waitLbActive(a, lb.id, ACTIVE_TIMEOUT_MS);
  }
  const listener = (
    await a.json<{ listener: ListenerView }>('POST', '/v2/lbaas/listeners', {
      listener: { name: 'https', loadbalancer_id: lb.id, protocol: 'TERMINATED_HTTPS', protocol_port: port, default_tls_container_ref: leaves[0]!.ref, default_pool_id: pool.id },
    })
  ).listener;
  progress(`TERMINATED_HTTPS listener ${listener.id} on ${lb.vip_address}:${port}; waiting for ACTIVE`);
  await waitListenerActive(a, listener.id, ACTIVE_TIMEOUT_MS);
  await waitLbActive(a, lb.id, ACTIVE_TIMEOUT_MS);
  const amphora = findAmphora(ostia.dataDir, lb.id, lb.vip_address, port);
  const bind = amphora.config.split('\n').map((l) => l.trim()).find((l) => l.startsWith(`bind ${lb.vip_address}:${port} `));
  if (!bind) throw new Error(`no bind on ${lb.vip_address}:${port} in ${join(amphora.dir, 'haproxy.cfg')}`);
  return { leaves, amphora: { ...amphora, lbId: lb.id, listenerId: listener.id, bind } };
}

interface CopiedTls {
  /** The certificate files the amphora's bind names. */
  crt: string[];
  /** The TLS keywords with their values, in the amphora's order, e.g. `ssl-min-ver TLSv1.2`. */
  options: string[];
}

/** The TLS part of the amphora's `bind` line; anything else on it (client authentication, another keyword) is refused, as the hand-written config would not copy it. */
function copyTls(bind: string): CopiedTls {
  const words = bind.split(/\s+/).slice(2);
  const copied: CopiedTls = { crt: [], options: [] };
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (word === 'ssl') continue;
    const value = words[i + 1];
    if (value === undefined) throw new Error(`the amphora's bind ends with '${word}', a keyword without a value: ${bind}`);
    if (word === 'crt') copied.crt.push(value);
    else if ((TLS_BIND_KEYWORDS as readonly string[]).includes(word)) copied.options.push(`${word} ${value}`);
    else throw new Error(`the amphora's bind has '${word}', which this bench does not copy: ${bind}`);
    i++;
  }
  if (copied.crt.length !== 1) throw new Error(`expected one certificate on the amphora's bind, found ${copied.crt.length}: ${bind}`);
  return copied;
}

/** A frontend line of the amphora's config (`timeout client 50000`), by keyword; null when absent. */
function configLine(config: string, keyword: string): string | null {
  return config.split('\n').map((l) => l.trim()).find((l) => l.startsWith(`${keyword} `)) ?? null;
}

// --- the hand-written HAProxy -------------------------------------------------------------------

interface Hand extends HandTarget {
  /** The PEM file its bind names, rewritten by each renewal. */
  readonly pemFile: string;
  readonly config: string;
}

/**
 * What an expert writes by hand for HTTPS termination over a roundrobin pool: the amphora's global
 * limits and stats socket, its TLS keywords and timeouts, and nothing else.
 */
function handConfig(files: HaproxyFiles, limits: HaproxySettings, address: string, port: number, pemFile: string, tls: CopiedTls, amphora: Amphora, farm: BackendFarm): string {
  const timeout = (name: string, fallback: string) => `    ${configLine(amphora.config, `timeout ${name}`) ?? `timeout ${name} ${fallback}`}`;
  return [
    ...handGlobal(files, limits),
    '',
    'defaults',
    '    mode http',
    timeout('connect', '5000'),
    timeout('client', '50000'),
    timeout('server', '50000'),
    '',
    'frontend fe',
    `    bind ${address}:${port} ssl crt ${pemFile} ${tls.options.join(' ')}`,
    '    default_backend be',
    '',
    'backend be',
    '    balance roundrobin',
    ...farm.primaries.map((e, i) => `    server s${i + 1} ${e.address}:${e.port}`),
    '',
  ].join('\n');
}

function writeAtomically(file: string, text: string): void {
  writeFileSync(`${file}.new`, text, { mode: 0o600 });
  renameSync(`${file}.new`, file);
}

async function startHand(lab: Lab, limits: HaproxySettings, address: string, port: number, leaf: Leaf, tls: CopiedTls, amphora: Amphora): Promise<Hand> {
  mkdirSync(lab.handDir, { recursive: true });
  const pemFile = join(lab.handDir, 'bench.pem');
  writeAtomically(pemFile, leaf.pem);
  let config = '';
  const hand = await lab.startHand(address, port, (files) => (config = handConfig(files, limits, address, port, pemFile, tls, amphora, lab.farm)));
  return { ...hand, pemFile, config };
}

/** Both targets answer 200 over HTTPS with the expected certificate. */
async function waitServing(t: HaproxyTarget, fingerprint: string, ca: string): Promise<void> {
  await eventually(
    async () => (await servedFingerprint(t.address, t.port, SERVER_NAME, AbortSignal.timeout(PROBE_TIMEOUT_MS)).catch(() => null)) === fingerprint && (await verifiedGet(t.address, t.port, ca)).ok,
    `${t.label}: HTTPS with the first certificate on ${t.address}:${t.port}`,
    30_000,
    100,
  );
}

// --- clients that verify every handshake ------------------------------------------------------------

/** One GET on a new connection for SERVER_NAME, the chain verified against `ca`. */
function verifiedGet(address: string, port: number, ca: string): Promise<{ ok: boolean; error: string | null }> {
  return new Promise((resolve) => {
    const req = request({ host: address, port, servername: SERVER_NAME, ca, agent: false, path: '/', headers: { connection: 'close' }, timeout: PROBE_TIMEOUT_MS }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200 ? { ok: true, error: null } : { ok: false, error: `HTTP ${res.statusCode}` }));
      res.on('error', (e) => resolve({ ok: false, error: e.message }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve({ ok: false, error: e.message }));
    req.end();
  });
}

interface VerifyingResult {
  requests: number;
  failed: number;
  /** Distinct failure messages, a few. */
  errors: string[];
}

function startVerifyingClients(address: string, port: number, ca: string, boundMs: number): { stop(): Promise<VerifyingResult> } {
  const started = Date.now();
  let running = true;
  let requests = 0;
  let failed = 0;
  const errors = new Set<string>();
  const loops = Array.from({ length: VERIFYING_CLIENTS }, async () => {
    while (running && requests < VERIFYING_MAX_REQUESTS && Date.now() - started < boundMs) {
      const r = await verifiedGet(address, port, ca);
      requests++;
      if (r.ok) continue;
      failed++;
      if (errors.size < 5) errors.add(r.error ?? 'unknown');
      // A refused connection fails at once: do not spin on it.
      await sleep(VERIFYING_RETRY_MS);
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return { requests, failed, errors: [...errors] };
    },
  };
}

// --- (a) throughput ----------------------------------------------------------------------------

interface Run extends LoadRun {
  /** HAProxy's share of resumed TLS handshakes (SslFrontendSessionReuse_pct), mid-run; null when unread. */
  resumed_pct: number | null;
  /** TLS connections HAProxy accepted during the run (CumSslConns), per request. */
  tls_conns_per_request: number | null;
}

interface Scripts {
  keepalive: string;
  close: string;
}

const url = (t: HaproxyTarget) => `https://${t.address}:${t.port}/`;

/** wrk, or for full handshakes `openssl s_time -new` with `connections` processes, which gives no latency. */
function startLoad(t: HaproxyTarget, mode: Mode, connections: number, seconds: number, scripts: Scripts): Promise<WrkResult> {
  if (mode !== 'full') return startWrk(url(t), connections, seconds, scripts[mode]).result;
  return runSTime(t.address, t.port, connections, seconds).then((r) => ({
    connections,
    requests: r.connections,
    seconds,
    rps: r.rps,
    p50_ms: NaN,
    p99_ms: NaN,
    errors: { connect: r.failed, read: 0, write: 0, timeout: 0, status: 0 },
    failed: r.failed,
  }));
}

async function loadRun(t: HaproxyTarget, mode: Mode, connections: number, seconds: number, scripts: Scripts): Promise<Run> {
  const pids = t.haproxyPids();
  const info = () => t.runtime.showInfo().catch(() => null);
  const infoBefore = await info();
  const cpuPerRequest = cpuMeter(pids);
  const load = startLoad(t, mode, connections, seconds, scripts);
  load.catch(() => undefined);
  await sleep((seconds * 1000) / 2);
  const mid = await info();
  const result = await load;
  const cpu = cpuPerRequest(result.requests);
  const infoAfter = await info();
  const count = (x: Record<string, string> | null, k: string) => (x && x[k] !== undefined ? Number(x[k]) : null);
  const [conns0, conns1] = [count(infoBefore, 'CumSslConns'), count(infoAfter, 'CumSslConns')];
  return {
    ...result,
    cpu_us_per_request: cpu,
    resumed_pct: count(mid, 'SslFrontendSessionReuse_pct'),
    tls_conns_per_request: conns0 === null || conns1 === null || !result.requests ? null : (conns1 - conns0) / result.requests,
  };
}

interface Case {
  mode: Mode;
  connections: number;
}

/** The medians of what only this bench reads, in each row. */
interface TlsMedians {
  resumed_pct: number | null;
  tls_conns_per_request: number | null;
}

type Throughput = { rows: Array<ThroughputRow<Case, Run, TlsMedians>>; ratios: Array<ThroughputRatio<Case>> };

function throughput(amphora: HaproxyTarget, hand: HaproxyTarget, p: Params, scripts: Scripts): Promise<Throughput> {
  const concurrency = (mode: Mode) => (mode === 'full' ? [p.fullClients] : p.connections);
  return interleavedThroughput({
    targets: [amphora, hand],
    cases: p.modes.flatMap((mode) => concurrency(mode).map((connections) => ({ mode, connections }))),
    warmups: p.modes.map((mode) => ({ mode, connections: Math.max(...concurrency(mode)) })),
    reps: p.reps,
    seconds: p.seconds,
    describe: (c) => MODE_LABEL[c.mode],
    run: (t, c, seconds) => loadRun(t, c.mode, c.connections, seconds, scripts),
    extra: (rs): TlsMedians => ({ resumed_pct: medianOrNull(rs.map((r) => r.resumed_pct)), tls_conns_per_request: medianOrNull(rs.map((r) => r.tls_conns_per_request)) }),
  });
}

// --- (b) renewals under load -------------------------------------------------------------------

interface RenewalTiming {
  to: string;
  /** The API call (amphora) or the file write (hand-written). */
  call_ms: number;
  /** From the start of the call or write to the first handshake at the VIP that got the new certificate. */
  served_ms: number;
  /** From the start to the listener being ACTIVE (amphora) or the reload's `Loading success` (hand-written). */
  settled_ms: number;
  /** The HAProxy processes under the target's directory changed across the renewal. */
  reloaded: boolean;
  /** Amphora only, from the load balancer's provisioning trace. */
  controller: { push_config_ms: number; verify_certificates_ms: number } | null;
}

interface RenewalDriver {
  readonly target: HaproxyTarget;
  readonly method: string;
  /** What `settled_ms` waits for, for the progress lines. */
  readonly settledAs: string;
  /** Renews to `leaf` and resolves once the target is done with it (listener ACTIVE; reload loaded). */
  renew(leaf: Leaf): Promise<Omit<RenewalTiming, 'to' | 'reloaded' | 'controller'>>;
  /** Per renewal, in order, where the controller spent the time; absent where there is no controller. */
  controllerSteps?(): Promise<Array<RenewalTiming['controller']>>;
  /** Renewals the amphora's agent made by a reload after HAProxy refused a runtime command, since `since` (epoch ms), with HAProxy's words. */
  agentReloads?(since: number): string[];
}

/** Resolves with performance.now() when a handshake at the target gets `fingerprint`. */
async function waitServed(t: HaproxyTarget, fingerprint: string, timeoutMs: number): Promise<number> {
  const at = await pollUntil(
    async () => (await servedFingerprint(t.address, t.port, SERVER_NAME, AbortSignal.timeout(PROBE_TIMEOUT_MS)).catch(() => null)) === fingerprint,
    SERVED_POLL_MS,
    timeoutMs,
  );
  if (at === null) throw new Error(`${t.label}: the certificate ${fingerprint.slice(0, 23)}… not served within ${timeoutMs} ms`);
  return at;
}

function amphoraDriver(t: Amphora, a: ApiClient): RenewalDriver {
  /** Wall-clock time of each call's start, to find the renewal's job in the trace. */
  const calls: number[] = [];
  return {
    target: t,
    method: 'API PUT default_tls_container_ref → agent: set/commit ssl cert',
    settledAs: 'ACTIVE',
    async renew(leaf) {
      const started = performance.now();
      calls.push(Date.now());
      // Watching starts before the call, in case the swap happens before the call returns.
      const served = waitServed(t, leaf.fingerprint, RENEWAL_TIMEOUT_MS);
      served.catch(() => undefined);
      await a.json('PUT', `/v2/lbaas/listeners/${t.listenerId}`, { listener: { default_tls_container_ref: leaf.ref } });
      const called = performance.now();
      const active = waitListenerActive(a, t.listenerId, RENEWAL_TIMEOUT_MS);
      // Awaited together, so that a failure of one is never left unhandled while the other is awaited.
      const [servedAt, activeAt] = await Promise.all([served, active]);
      await waitLbActive(a, t.lbId, RENEWAL_TIMEOUT_MS);
      return { call_ms: called - started, served_ms: servedAt - started, settled_ms: activeAt - started };
    },
    async controllerSteps() {
      const trace = await readTrace(a, t.lbId);
      const jobs = [...new Set(trace.filter((e) => e.operation === 'listener.update').map((e) => e.job_id))];
      if (jobs.length !== calls.length) return calls.map(() => null);
      return jobs.map((job) => {
        const step = (name: string) => trace.find((e) => e.job_id === job && e.step === name)?.duration_ms ?? null;
        const [push, verify] = [step('push-config'), step('verify-certificates')];
        return push === null || verify === null ? null : { push_config_ms: push, verify_certificates_ms: verify };
      });
    },
    agentReloads: (since) => agentReloadReasons(t, since),
  };
}

function reloadDriver(t: Hand): RenewalDriver {
  return {
    target: t,
    method: 'write the PEM file (rename) → master CLI reload',
    settledAs: 'reloaded',
    async renew(leaf) {
      const started = performance.now();
      const served = waitServed(t, leaf.fingerprint, RENEWAL_TIMEOUT_MS);
      served.catch(() => undefined);
      writeAtomically(t.pemFile, leaf.pem);
      const written = performance.now();
      const reloaded = t.haproxy.process.reload().then(() => performance.now());
      const [servedAt, reloadedAt] = await Promise.all([served, reloaded]);
      return { call_ms: written - started, served_ms: servedAt - started, settled_ms: reloadedAt - started };
    },
  };
}

interface RenewalPhase {
  target: string;
  method: string;
  renewals: RenewalTiming[];
  median_served_ms: number;
  p90_served_ms: number;
  max_served_ms: number;
  median_settled_ms: number;
  max_settled_ms: number;
  /** Renewals across which the HAProxy processes changed. */
  reloads: number;
  /** Amphora only: the agent's log lines saying it reloaded instead. */
  agent_reload_reasons: string[] | null;
  wrk_keepalive: WrkResult;
  wrk_close: WrkResult;
  verifying: VerifyingResult;
  /** Every failed request of the three loads together (target 0). */
  failed: number;
}

async function renewalPhase(d: RenewalDriver, plan: readonly Leaf[], p: Params, scripts: Scripts, ca: string): Promise<RenewalPhase> {
  const t = d.target;
  const bound = RENEWAL_LEAD_S + plan.length * RENEWAL_BUDGET_S;
  progress(`${t.label}: ${plan.length} renewals under wrk -c${p.renewConnections} keep-alive + wrk -c${p.renewConnections} Connection: close + ${VERIFYING_CLIENTS} verifying clients (at most ${bound} s)`);
  const phaseStart = Date.now();
  const keep = startWrk(url(t), p.renewConnections, bound, scripts.keepalive);
  const close = startWrk(url(t), p.renewConnections, bound, scripts.close);
  const verifying = startVerifyingClients(t.address, t.port, ca, bound * 1000);
  const timings: RenewalTiming[] = [];
  let verified: VerifyingResult;
  try {
    await sleep(RENEWAL_LEAD_S * 1000);
    for (const leaf of plan) {
      if (keep.exited() || close.exited()) throw new Error(`${t.label}: wrk ended (its ${bound} s bound) before the renewals did`);
      const before = new Set(t.haproxyPids());
      const timing = await d.renew(leaf);
      const reloaded = t.haproxyPids().some((pid) => !before.has(pid));
      timings.push({ to: leaf.label, ...timing, reloaded, controller: null });
      progress(`${t.label}: → ${leaf.label}: served after ${timing.served_ms.toFixed(1)} ms, ${d.settledAs} after ${timing.settled_ms.toFixed(0)} ms${reloaded ? ', HAProxy processes changed' : ''}`);
      await sleep(RENEWAL_GAP_MS);
    }
  } finally {
    verified = await verifying.stop();
    keep.finish();
    close.finish();
  }
  const [keepResult, closeResult] = await Promise.all([keep.result, close.result]);
  if (d.controllerSteps) (await d.controllerSteps()).forEach((steps, i) => (timings[i]!.controller = steps));
  const served = timings.map((r) => r.served_ms);
  const settled = timings.map((r) => r.settled_ms);
  return {
    target: t.label,
    method: d.method,
    renewals: timings,
    median_served_ms: median(served),
    p90_served_ms: percentile(served, 90),
    max_served_ms: Math.max(...served),
    median_settled_ms: median(settled),
    max_settled_ms: Math.max(...settled),
    reloads: timings.filter((r) => r.reloaded).length,
    agent_reload_reasons: d.agentReloads ? d.agentReloads(phaseStart) : null,
    wrk_keepalive: keepResult,
    wrk_close: closeResult,
    verifying: verified,
    failed: keepResult.failed + closeResult.failed + verified.failed,
  };
}

// --- report ----------------------------------------------------------------------------------

interface Report extends LabReport {
  params: Params;
  command: string;
  certificate: { key: string; store: Store; served_chain: string; amphora_file_same_chain: boolean; tls_options: string[] };
  configs: { amphora: string; amphora_bind: string; hand_written: string };
  throughput: Throughput;
  renewals: { amphora: RenewalPhase; hand_written: RenewalPhase };
}

function table(r: Report): string {
  const out: string[] = [];
  out.push(labHeadline(r));
  out.push(`Certificate: ${r.certificate.served_chain}, ${r.certificate.key}, stored as ${r.certificate.store === 'pkcs12' ? 'a PKCS#12 secret' : 'a certificate container'}; amphora's PEM file holds the same chain: ${r.certificate.amphora_file_same_chain ? 'yes' : 'NO'}`);
  out.push(`TLS (copied from the amphora's bind): ${r.certificate.tls_options.join(' ')}`);
  out.push('');
  out.push(`(a) Throughput over HTTPS, ${r.params.seconds} s runs, median of ${r.params.reps} interleaved repetitions; wrk -t1 (keep-alive; new conn/req: Connection: close,`);
  out.push(`    wrk resumes sessions), openssl s_time -new (full handshake: conns = processes, one connection at a time each; no latency)`);
  const w = [14, 7, 14, 10, 9, 9, 12, 11, 8];
  out.push(line(['mode', 'conns', 'target', 'req/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'resumed %', 'failed'], w));
  for (const row of r.throughput.rows)
    out.push(line([MODE_LABEL[row.mode], row.connections, row.target, num(row.rps, 0), num(row.p50_ms, 2), num(row.p99_ms, 2), num(row.cpu_us_per_request), row.mode === 'keepalive' ? '–' : num(row.resumed_pct, 0), row.failed], w));
  out.push('');
  out.push('amphora ÷ hand-written (median of per-repetition ratios; req/s target ≥ 0.97):');
  for (const q of r.throughput.ratios)
    out.push(`  ${MODE_LABEL[q.mode]}, c=${q.connections}: req/s ${num(q.rps, 3)}x${q.rps >= 0.97 ? '' : ' (below 0.97)'}, p99 ${num(q.p99, 2)}x, HAProxy CPU per request ${num(q.cpu_per_request, 3)}x`);
  out.push('');
  const { amphora: a, hand_written: h } = r.renewals;
  out.push(`(b) ${a.renewals.length} certificate renewals under wrk -c${r.params.renewConnections} keep-alive + wrk -c${r.params.renewConnections} Connection: close + ${VERIFYING_CLIENTS} verifying Node clients (new connection per request)`);
  const w2 = [44, 22, 22];
  out.push(line(['', 'amphora', 'hand-written'], w2));
  out.push(line(['how', 'API → runtime swap', 'PEM file + reload'], w2));
  out.push(line(['API call / file write, median ms', num(median(a.renewals.map((x) => x.call_ms))), num(median(h.renewals.map((x) => x.call_ms)))], w2));
  out.push(line(['new certificate served, median ms', num(a.median_served_ms), num(h.median_served_ms)], w2));
  out.push(line(['  p90 / max ms', `${num(a.p90_served_ms)} / ${num(a.max_served_ms)}`, `${num(h.p90_served_ms)} / ${num(h.max_served_ms)}`], w2));
  out.push(line(['listener ACTIVE / reload done, median ms', num(a.median_settled_ms), num(h.median_settled_ms)], w2));
  out.push(line(['  max ms', num(a.max_settled_ms), num(h.max_settled_ms)], w2));
  const steps = a.renewals.map((x) => x.controller).filter((x): x is NonNullable<RenewalTiming['controller']> => x !== null);
  if (steps.length) {
    out.push(line(['  amphora: push-config step, median ms', num(median(steps.map((x) => x.push_config_ms))), ''], w2));
    out.push(line(['  amphora: verify-certificates step, median ms', num(median(steps.map((x) => x.verify_certificates_ms))), ''], w2));
  }
  out.push(line(['failed requests (target 0)', a.failed, h.failed], w2));
  const wrkCell = (x: WrkResult) => `${x.failed} / ${x.requests}`;
  out.push(line(['  wrk keep-alive, failed / requests', wrkCell(a.wrk_keepalive), wrkCell(h.wrk_keepalive)], w2));
  out.push(line(['  wrk Connection: close, failed / requests', wrkCell(a.wrk_close), wrkCell(h.wrk_close)], w2));
  out.push(line(['  verifying clients, failed / requests', `${a.verifying.failed} / ${a.verifying.requests}`, `${h.verifying.failed} / ${h.verifying.requests}`], w2));
  out.push(line(['renewals that changed HAProxy processes', `${a.reloads} / ${a.renewals.length}`, `${h.reloads} / ${h.renewals.length}`], w2));
  for (const [label, phase] of [['amphora', a], ['hand-written', h]] as const) {
    const kinds = (x: WrkResult) => `connect ${x.errors.connect}, read ${x.errors.read}, write ${x.errors.write}, timeout ${x.errors.timeout}, status ≥ 400 ${x.errors.status}`;
    if (phase.wrk_keepalive.failed) out.push(`  ${label}, wrk keep-alive: ${kinds(phase.wrk_keepalive)}`);
    if (phase.wrk_close.failed) out.push(`  ${label}, wrk Connection: close: ${kinds(phase.wrk_close)}`);
    if (phase.verifying.failed) out.push(`  ${label}, verifying clients: ${phase.verifying.errors.join('; ').slice(0, 200)}`);
  }
  for (const reason of [...new Set(a.agent_reload_reasons ?? [])].slice(0, 3)) out.push(`  amphora agent reloaded: ${reason.slice(0, 160)}`);
  out.push('');
  out.push(labLoadLine(r));
  out.push(`Repeat: ${r.command}`);
  return out.join('\n');
}

// --- main ------------------------------------------------------------------------------------

const HELP = `Usage: node dist/bench/amphora-tls.js [options]

HTTPS termination throughput and certificate renewals under load of an Ostia amphora against a
hand-written HAProxy config with the same certificate and TLS settings, on the same binary and
backends, measured in the same run.

  --json                     print one JSON document instead of the table
  --seconds N                duration of each throughput run (default 6)
  --connections A,B          wrk connection counts (default 50)
  --modes M,N                any of keepalive, close (wrk, a new connection per request, sessions resumed)
                             and full (openssl s_time -new: full handshakes) (default keepalive,close,full)
  --full-clients N           s_time processes of the full mode, one connection at a time each (default 4)
  --reps N                   interleaved repetitions per mode and count (default 5)
  --renewals N               certificate renewals per target (default 20)
  --renew-connections N      connections of each of the two wrk loads during the renewals (default 10)
  --key K                    the leaves' key: ec-p256 or rsa2048 (default ec-p256)
  --store S                  how the key manager holds them: pkcs12 or container (default pkcs12)
  --help                     this text
`;

function parseParams(): { p: Params; json: boolean } | null {
  const values = benchArgs({
    seconds: { type: 'string', default: '6' },
    connections: { type: 'string', default: '50' },
    modes: { type: 'string', default: MODES.join(',') },
    'full-clients': { type: 'string', default: '4' },
    reps: { type: 'string', default: '5' },
    renewals: { type: 'string', default: '20' },
    'renew-connections': { type: 'string', default: '10' },
    key: { type: 'string', default: 'ec-p256' },
    store: { type: 'string', default: 'pkcs12' },
  });
  if (!values) return null;
  const p: Params = {
    seconds: positiveInt('seconds', values.seconds),
    connections: positiveInts('connections', values.connections),
    modes: [...new Set(values.modes.split(',').map((m) => oneOf('modes', m.trim(), MODES)))],
    fullClients: positiveInt('full-clients', values['full-clients']),
    reps: positiveInt('reps', values.reps),
    renewals: positiveInt('renewals', values.renewals),
    renewConnections: positiveInt('renew-connections', values['renew-connections']),
    key: oneOf('key', values.key, KEYS),
    store: oneOf('store', values.store, STORES),
  };
  return { p, json: values.json };
}

function command(p: Params, json: boolean): string {
  const args = [
    `--seconds ${p.seconds}`, `--connections ${p.connections.join(',')}`, `--modes ${p.modes.join(',')}`, `--full-clients ${p.fullClients}`, `--reps ${p.reps}`,
    `--renewals ${p.renewals}`, `--renew-connections ${p.renewConnections}`, `--key ${p.key}`, `--store ${p.store}`, ...(json ? ['--json'] : []),
  ];
  return `npm run build && node dist/bench/amphora-tls.js ${args.join(' ')}`;
}

runBench(HELP, parseParams, ({ p, json }) =>
  inLab({ name: 'bench-tls', extras: 0 }, async (lab) => {
    const scripts = writeWrkScripts(lab.work);
    const pki = createTestPki();
    lab.onTeardown(() => pki.remove());
    const trust = pki.root.certPem;
    const issue = async (vip: string): Promise<Leaf[]> => {
      progress(`issuing ${LEAVES} ${p.key} leaves for ${SERVER_NAME} and IP ${vip}, storing them as ${p.store}`);
      return Promise.all(
        Array.from({ length: LEAVES }, async (_, i) => {
          const cert = pki.leaf({ cn: SERVER_NAME, dnsNames: [SERVER_NAME], ipAddresses: [vip], key: p.key as KeyKind });
          const label = String.fromCharCode(65 + i);
          return { label, cert, pem: cert.certPem + pki.intermediate.certPem + cert.keyPem, fingerprint: fingerprintOf(cert.certPem), ref: await storeLeaf(lab.api, pki, cert, p.store, `bench-${label}`) };
        }),
      );
    };
    const listenerPort = randomPort();
    const { amphora: amp, leaves } = await buildAmphora(lab, listenerPort, issue);
    await waitServing(amp, leaves[0]!.fingerprint, trust);
    const haproxy = await haproxySettings(amp);
    progress(`amphora ${amp.dir}: HAProxy ${haproxy.version}, nbthread ${haproxy.nbthread}, maxconn ${haproxy.maxconn}`);
    progress(`amphora: ${amp.bind}`);

    const tls = copyTls(amp.bind);
    const amphoraChain = pemCertificates(readFileSync(tls.crt[0]!, 'utf8')).map(fingerprintOf);
    const sameChain = JSON.stringify(amphoraChain) === JSON.stringify([leaves[0]!.fingerprint, fingerprintOf(pki.intermediate.certPem)]);
    if (!sameChain) progress(`warning: the amphora's ${tls.crt[0]} holds ${amphoraChain.length} certificates, not the leaf and the intermediate`);

    let handPort = randomPort();
    while (handPort === listenerPort) handPort = randomPort();
    const hand = await startHand(lab, haproxy, amp.address, handPort, leaves[0]!, tls, amp);
    await waitServing(hand, leaves[0]!.fingerprint, trust);
    await assertSameHaproxy(hand, haproxy);

    const tp = await throughput(amp, hand, p, scripts);

    // Cycles from the leaf the listener starts on: every renewal changes the certificate.
    const plan = Array.from({ length: p.renewals }, (_, i) => leaves[(i + 1) % leaves.length]!);
    const ampRenewals = await renewalPhase(amphoraDriver(amp, lab.api), plan, p, scripts, trust);
    const handRenewals = await renewalPhase(reloadDriver(hand), plan, p, scripts, trust);

    const report: Report = {
      params: p,
      command: command(p, json),
      ...lab.report(haproxy),
      certificate: {
        key: p.key === 'ec-p256' ? 'ECDSA P-256' : 'RSA 2048',
        store: p.store,
        served_chain: `leaf (CN ${SERVER_NAME}, SAN DNS:${SERVER_NAME} IP:${amp.address}) + intermediate`,
        amphora_file_same_chain: sameChain,
        tls_options: tls.options,
      },
      configs: { amphora: amp.config, amphora_bind: amp.bind, hand_written: hand.config },
      throughput: tp,
      renewals: { amphora: ampRenewals, hand_written: handRenewals },
    };
    process.stdout.write(json ? JSON.stringify(report) + '\n' : table(report) + '\n');
  }),
);

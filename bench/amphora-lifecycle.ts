/**
 * Amphora lifecycle benchmark (issue 3): how long a real amphora load balancer takes to build,
 * how long traffic stops when one dies, and what an idle one costs, each against a baseline
 * measured in the same run because the machine is shared and noisy.
 *
 *   npm run build && node dist/bench/amphora-lifecycle.js [--json] [--creates 10] [--amphorae 10]
 *       [--failovers 3] [--idle-seconds 10] [--settle-seconds 20] [--density N]
 *
 * One `ostia up` (enabledProviders noop and amphora, default heartbeat timers) serves all of it.
 *
 * (a) create → ACTIVE of a full stack (LB, HTTP listener, named pool, 2 members, HTTP monitor) in
 *     one graph create, `--creates` times per provider, alternating amphora and noop; the noop
 *     provider on the same Ostia is the baseline (the control plane alone), so the difference is
 *     what the data plane adds. The provisioning trace (GET …/loadbalancers/{id}/trace) splits each
 *     create into its steps. The real Octavia 11 with no-op drivers is measured too when it runs
 *     (bash /work/shared/baseline/octavia-baseline.sh start); it is only probed, never started.
 * (b) failover: SIGKILL to an amphora's whole process group, then the time until a request
 *     through the VIP succeeds, `--failovers` times on the same LB; the baseline is the configured
 *     heartbeat timeout, the detection floor, so failover − timeout is the repair time.
 * (c) memory of `--amphorae` idle amphorae (RSS and PSS of agent, HAProxy master and worker) against one
 *     bare `haproxy -W` with an equivalent hand-written config, idle CPU over `--idle-seconds`,
 *     and from those how many amphorae this machine could run and which limit binds first. The
 *     amphorae of (a) are reused, and (c) runs before (b) so that they are measured idle.
 * `--density N` then starts N amphorae at once to check the estimate of (c).
 * (d) `--netns` (root): issue 13's figures on amphorae in network namespaces on bridge networks, each
 *     against a figure of (a)–(c) or a setting of the same run: create → ACTIVE of SINGLE and
 *     ACTIVE_STANDBY, VIP takeover for the four faults of a MASTER at VRRP advertisement intervals of
 *     100 and 1000 ms, SINGLE failover against the heartbeat timeout, memory per amphora. See
 *     bench/support/netns-lifecycle.ts.
 *
 * Everything stays on 127.0.0.0/8 (and, for (d), in namespaces and bridges of the bench's own Ostias); every wait is bounded; amphorae outlive their controller by
 * design, so the bench kills what is left of them on exit and on SIGINT.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultConfig } from '../src/config.js';
import type { TraceEntry } from '../src/controller/trace.js';
import { checkPeriodMs } from '../src/providers/amphora/health/index.js';
import { httpGet, loopbackAddress, randomPort, startBackend, type Backend } from '../test/support/amphora-fixtures.js';
import { killAll, processesUnder, startOstia, type OstiaProcess } from '../test/support/ostia-process.js';
import { randomManagementNetwork, writeAmphoraConfig } from '../test/support/amphora-config.js';
import {
  ApiClient, createStack, deleteStack, probeOctavia, readTrace, traceJobs, traceTime, waitSettled, type Created, type StackSpec,
} from './support/lifecycle-api.js';
import {
  cpuSecondsOfLive, groupMembers, kernelLimits, memoryOf, meminfo, openFilesOf, tasksInUse, threadsOf, type Memory, type ProcInfo,
} from './support/processes.js';
import { median, percentile } from './support/stats.js';
import { grid } from './support/table.js';
import { measureNetns, renderNetns, type LoopbackBaseline, type NetnsFigures } from './support/netns-lifecycle.js';
import { lacking } from '../test/support/requirements.js';

const USAGE = `usage: node dist/bench/amphora-lifecycle.js [options]
  --creates N           graph creates per provider for create → ACTIVE (default 10)
  --amphorae K          idle amphora LBs whose memory and CPU are measured (default 10)
  --failovers F         amphora kills, one after another on the same LB (default 3)
  --idle-seconds S      window for the idle CPU measurement (default 10)
  --settle-seconds S    idle time before that window opens, past the agents' start-up GCs (default 20)
  --density N           also start N amphorae at once to check the capacity estimate (default off)
  --netns               also (d): amphorae in network namespaces on bridge networks (root only)
  --netns-creates N     (d) graph creates per topology, SINGLE and ACTIVE_STANDBY (default 3)
  --netns-failovers F   (d) SINGLE amphora kills (default 2)
  --takeover-rounds R   (d) rounds of the four VIP takeover faults, per advertisement interval (default 3)
  --json                print one JSON document instead of tables
  --help                this text
Progress goes to stderr. The Octavia baseline is measured when it answers at OCTAVIA_BASELINE_URL
(default http://127.0.0.1:$API_PORT, API_PORT 19876).`;

const CREATE_POLL_MS = 5;
const FAILOVER_POLL_MS = 20;
const FAILOVER_BOUND_MS = 60_000;
const SETTLE_TIMEOUT_MS = 60_000;
const DELETE_TIMEOUT_MS = 60_000;
const DELETE_POLL_MS = 20;
/** A fresh amphora serves as soon as it is ACTIVE; longer than this means it does not. */
const FIRST_ANSWER_BOUND_MS = 5_000;
/** Lets agents and HAProxies finish their start-up work before idle figures are read. */
const IDLE_SETTLE_MS = 3_000;
const DENSITY_IN_FLIGHT = 4;
const DENSITY_MS_PER_AMPHORA = 5_000;
const BASELINE_DOC = '/work/shared/reference/octavia-baseline.md';

interface Params {
  creates: number;
  amphorae: number;
  failovers: number;
  idleSeconds: number;
  /** How long the amphorae idle before their CPU is counted: an agent's first major GCs (V8's memory reducer, ~0.1 s of CPU) come ~8 s after it starts. */
  settleSeconds: number;
  density: number;
  netns: boolean;
  netnsCreates: number;
  netnsFailovers: number;
  takeoverRounds: number;
}

const progress = (msg: string) => process.stderr.write(`# ${msg}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// --- statistics -------------------------------------------------------------------------

interface Summary {
  n: number;
  median: number;
  p90: number;
  min: number;
  max: number;
}

function summarize(values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  return { n: sorted.length, median: percentile(sorted, 50), p90: percentile(sorted, 90), min: sorted[0] ?? NaN, max: sorted[sorted.length - 1] ?? NaN };
}

// --- cleanup ----------------------------------------------------------------------------

/** Run newest first, once, from `finally` or SIGINT, whichever comes first. */
const cleanups: Array<{ what: string; run: () => Promise<void> | void }> = [];
let cleaning: Promise<void> | undefined;

function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    for (const c of cleanups.reverse()) {
      try {
        await c.run();
      } catch (e) {
        progress(`cleanup (${c.what}) failed: ${(e as Error).message}`);
      }
    }
  })();
  return cleaning;
}

/** Runs `body`, then `close`, which the cleanups also run if SIGINT comes first; `close` runs once. */
async function guarded<T>(what: string, close: () => Promise<void>, body: () => Promise<T>): Promise<T> {
  let closing: Promise<void> | undefined;
  const c = { what, run: () => (closing ??= close()) };
  cleanups.push(c);
  try {
    return await body();
  } finally {
    await c.run();
    cleanups.splice(cleanups.indexOf(c), 1);
  }
}

/** Why (d) cannot run here, or null. */
function netnsSkip(): string | null {
  const reason = lacking('namespaces') || lacking('keepalived') || lacking('haproxy') || lacking('openstack-cli');
  return reason ? `${reason}: --netns needs root, iproute2, keepalived, HAProxy and the openstack CLI (npm test as root installs them)` : null;
}

process.once('SIGINT', () => {
  progress('interrupted: cleaning up');
  void cleanUp().finally(() => process.exit(130));
});

// --- the stack under test ---------------------------------------------------------------

interface Rig {
  ostia: OstiaProcess;
  /** The demo project's member, as tenants call the API. */
  user: ApiClient;
  /** Admin, for the amphora API. */
  admin: ApiClient;
  amphoraRoot: string;
  backends: Backend[];
  listenerPort: number;
  spec(provider: 'amphora' | 'noop'): StackSpec;
  heartbeatIntervalMs: number;
  heartbeatTimeoutMs: number;
  maxconn: number;
}

async function startRig(): Promise<Rig> {
  const defaults = defaultConfig('').amphora;
  const configDir = mkdtempSync(join(tmpdir(), 'ostia-bench-lifecycle-'));
  cleanups.push({ what: 'config directory', run: () => rmSync(configDir, { recursive: true, force: true }) });
  // A /16 of its own: K amphorae, their failover replacements and --density ones all need addresses.
  // The heartbeat timers are left at their defaults on purpose: failover time is measured against them.
  const managementNetwork = randomManagementNetwork(16);
  const configFile = await writeAmphoraConfig(configDir, { amphora: { managementNetwork } });
  progress(`starting ostia up (providers noop and amphora, management network ${managementNetwork.cidr})`);
  const ostia = await startOstia({ extraArgs: ['--config', configFile] });
  const amphoraRoot = join(ostia.dataDir, 'amphorae');
  // Load balancers left by a failed run need no API delete: the data dir goes, and this kills
  // their processes, after Ostia has stopped (its health manager would fail them over).
  cleanups.push({
    what: 'amphorae',
    run: () => {
      const left = processesUnder(amphoraRoot);
      if (left.length) progress(`killing ${left.length} amphora processes`);
      killAll(left);
    },
  });
  cleanups.push({ what: 'ostia up', run: () => ostia.stop() });
  // A crash skips `finally`: the processes must not outlive the bench anyway.
  process.once('exit', () => killAll(processesUnder(amphoraRoot)));

  const user = new ApiClient('Ostia', ostia.url, { 'x-auth-token': await ostia.token('ostia-demo') }, true);
  const admin = new ApiClient('Ostia (admin)', ostia.url, { 'x-auth-token': await ostia.token('ostia') }, true);
  cleanups.push({ what: 'API clients', run: () => (user.close(), admin.close()) });
  const vipSubnetId = await ostia.subnetId('public-subnet');
  const memberSubnetId = await ostia.subnetId('private-subnet');
  const memberNet = `127.32.${Math.floor(Math.random() * 250)}`;
  const backends = [await startBackend('backend-a', `${memberNet}.11`), await startBackend('backend-b', `${memberNet}.12`)];
  cleanups.push({ what: 'backends', run: async () => void (await Promise.all(backends.map((b) => b.close()))) });
  const listenerPort = randomPort();
  return {
    ostia,
    user,
    admin,
    amphoraRoot,
    backends,
    listenerPort,
    spec: (provider) => ({ provider, vipSubnetId, memberSubnetId, listenerPort, members: backends.map((b) => ({ address: b.address, port: b.port })) }),
    heartbeatIntervalMs: defaults.heartbeatIntervalMs,
    heartbeatTimeoutMs: defaults.heartbeatTimeoutMs,
    maxconn: defaults.maxconn,
  };
}

/** One GET through the VIP, answered by a member. */
async function vipAnswers(rig: Rig, vip: string): Promise<boolean> {
  const r = await httpGet(vip, rig.listenerPort);
  return r.status === 200 && rig.backends.some((b) => b.name === r.body);
}

/** Polls the VIP every `pollMs` until a member answers; resolves with the time that took, or null past `boundMs`. */
async function untilVipAnswers(rig: Rig, vip: string, pollMs: number, boundMs: number): Promise<{ ms: number | null; failures: number }> {
  const t0 = performance.now();
  let failures = 0;
  while (performance.now() - t0 < boundMs) {
    if (await vipAnswers(rig, vip)) return { ms: performance.now() - t0, failures };
    failures++;
    await sleep(pollMs);
  }
  return { ms: null, failures };
}

// --- amphorae of a load balancer ---------------------------------------------------------

/** A named part of a job and how long it took. */
interface StepTime {
  step: string;
  ms: number;
}

interface AmphoraView {
  id: string;
  status: string;
}

async function allocatedAmphora(rig: Rig, lbId: string): Promise<AmphoraView> {
  const { amphorae } = await rig.admin.json<{ amphorae: AmphoraView[] }>('GET', `/v2/octavia/amphorae?loadbalancer_id=${lbId}`);
  const serving = amphorae.filter((a) => a.status === 'ALLOCATED');
  if (serving.length !== 1) throw new Error(`load balancer ${lbId} has ${serving.length} ALLOCATED amphorae (${amphorae.map((a) => `${a.id}:${a.status}`).join(', ')}); expected 1`);
  return serving[0]!;
}

/**
 * When the amphora's agent listened and its HAProxy first loaded, from agent.log: the agent logs
 * pino JSON lines, among them Fastify's "Server listening at …" and HAProxy's own stderr
 * ("haproxy: … Loading success."). Null where the line is missing.
 */
function agentMilestones(root: string, amphoraId: string): { listeningAt: number | null; haproxyLoadedAt: number | null } {
  let listeningAt: number | null = null;
  let haproxyLoadedAt: number | null = null;
  let text = '';
  try {
    text = readFileSync(join(root, amphoraId, 'agent.log'), 'utf8');
  } catch {
    // no log: no milestones
  }
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    let entry: { time?: number; msg?: string };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      // the line being written right now
      continue;
    }
    if (typeof entry.time !== 'number' || typeof entry.msg !== 'string') continue;
    if (listeningAt === null && entry.msg.startsWith('Server listening at')) listeningAt = entry.time;
    if (haproxyLoadedAt === null && entry.msg.startsWith('haproxy:') && entry.msg.includes('Loading success')) haproxyLoadedAt = entry.time;
  }
  return { listeningAt, haproxyLoadedAt };
}

/** wait-for-agent and push-config of a build (create or failover) split at the agent's milestones. */
async function insideSteps(rig: Rig, lbId: string, steps: readonly TraceEntry[]): Promise<StepTime[]> {
  const m = agentMilestones(rig.amphoraRoot, (await allocatedAmphora(rig, lbId)).id);
  const named = (name: string) => steps.find((s) => s.step === name);
  const end = (s: TraceEntry) => traceTime(s.started_at) + (s.duration_ms ?? NaN);
  const boot = named('boot-compute');
  const wait = named('wait-for-agent');
  const push = named('push-config');
  const out: StepTime[] = [];
  if (boot && wait && m.listeningAt !== null) {
    out.push({ step: 'boot-compute done → agent listening (node start, bundle load, agent init)', ms: m.listeningAt - end(boot) });
    out.push({ step: 'agent listening → wait-for-agent done (ready pipe, mTLS check)', ms: end(wait) - m.listeningAt });
  }
  if (push && m.haproxyLoadedAt !== null) {
    out.push({ step: 'push-config started → haproxy "Loading success" (render, haproxy -c, start)', ms: m.haproxyLoadedAt - traceTime(push.started_at) });
    out.push({ step: '"Loading success" → push-config done (master CLI check, reply, DB)', ms: end(push) - m.haproxyLoadedAt });
  }
  return out;
}

/** Median of each named part over the runs, in the order they first appear. */
function medianParts(runs: ReadonlyArray<readonly StepTime[]>): StepTime[] {
  const names = [...new Set(runs.flatMap((r) => r.map((s) => s.step)))];
  return names.map((step) => ({ step, ms: median(runs.map((r) => r.filter((s) => s.step === step).reduce((sum, s) => sum + s.ms, 0))) }));
}

// --- (a) create → ACTIVE ------------------------------------------------------------------

interface CreateRun {
  id: string;
  vip: string;
  post_ms: number;
  active_ms: number;
  /** ACTIVE seen → first request through the VIP answered (amphora only). */
  first_answer_ms: number | null;
  /** POST sent → first step started: API handling, enqueue, claim by a worker. */
  before_steps_ms: number;
  steps: StepTime[];
  /** wait-for-agent and push-config split at the agent's log lines (amphora only). */
  inside: StepTime[];
  /** Trace and progress writes between steps. */
  between_steps_ms: number;
  /** Last step finished → the poll saw ACTIVE. */
  after_steps_ms: number;
}

/** Splits POST → ACTIVE along the create job's trace. */
function createBreakdown(c: Created, trace: readonly TraceEntry[]): Pick<CreateRun, 'before_steps_ms' | 'steps' | 'between_steps_ms' | 'after_steps_ms'> & { job: TraceEntry[] } {
  const job = traceJobs(trace).find((j) => j.operation === 'loadbalancer.create');
  if (!job) throw new Error(`load balancer ${c.lb.id}: the trace holds no loadbalancer.create job`);
  const first = job.steps[0]!;
  const last = job.steps[job.steps.length - 1]!;
  const steps = job.steps.map((s) => ({ step: s.step, ms: s.duration_ms ?? NaN }));
  const span = traceTime(last.finished_at ?? last.started_at) - traceTime(first.started_at);
  return {
    job: job.steps,
    before_steps_ms: traceTime(first.started_at) - c.postedAt,
    steps,
    between_steps_ms: span - steps.reduce((sum, s) => sum + s.ms, 0),
    after_steps_ms: c.activeMs - (traceTime(last.finished_at ?? last.started_at) - c.postedAt),
  };
}

async function createOne(rig: Rig, provider: 'amphora' | 'noop', name: string): Promise<CreateRun> {
  const c = await createStack(rig.user, name, rig.spec(provider), CREATE_POLL_MS, SETTLE_TIMEOUT_MS);
  let firstAnswer: number | null = null;
  if (provider === 'amphora') {
    firstAnswer = (await untilVipAnswers(rig, c.lb.vip_address, CREATE_POLL_MS, FIRST_ANSWER_BOUND_MS)).ms;
    if (firstAnswer === null) throw new Error(`load balancer ${c.lb.id} is ACTIVE but its VIP ${c.lb.vip_address}:${rig.listenerPort} did not answer within ${FIRST_ANSWER_BOUND_MS} ms`);
  }
  const { job, ...breakdown } = createBreakdown(c, await readTrace(rig.user, c.lb.id));
  return {
    id: c.lb.id,
    vip: c.lb.vip_address,
    post_ms: c.postMs,
    active_ms: c.activeMs,
    first_answer_ms: firstAnswer,
    ...breakdown,
    inside: provider === 'amphora' ? await insideSteps(rig, c.lb.id, job) : [],
  };
}

interface CreateFigures {
  create_to_active: Summary;
  post: Summary;
  first_answer: Summary | null;
  before_steps_median_ms: number;
  /** Median duration of each step, in the order the flow runs them. */
  steps_median_ms: StepTime[];
  inside_median_ms: StepTime[];
  between_steps_median_ms: number;
  after_steps_median_ms: number;
}

function createFigures(runs: readonly CreateRun[]): CreateFigures {
  const answers = runs.map((r) => r.first_answer_ms).filter((v): v is number => v !== null);
  return {
    create_to_active: summarize(runs.map((r) => r.active_ms)),
    post: summarize(runs.map((r) => r.post_ms)),
    first_answer: answers.length ? summarize(answers) : null,
    before_steps_median_ms: median(runs.map((r) => r.before_steps_ms)),
    steps_median_ms: medianParts(runs.map((r) => r.steps)),
    inside_median_ms: medianParts(runs.map((r) => r.inside)),
    between_steps_median_ms: median(runs.map((r) => r.between_steps_ms)),
    after_steps_median_ms: median(runs.map((r) => r.after_steps_ms)),
  };
}

/** Sequential cascade deletes; `live`, when given, tracks what is still to be deleted. */
async function deleteAll(api: ApiClient, ids: readonly string[], what: string, live?: Set<string>): Promise<number[]> {
  const times: number[] = [];
  for (const id of ids) {
    times.push(await deleteStack(api, id, DELETE_POLL_MS, DELETE_TIMEOUT_MS));
    live?.delete(id);
  }
  if (ids.length) progress(`${what}: ${ids.length} cascade deletes, median ${median(times).toFixed(0)} ms to 404`);
  return times;
}

// --- the Octavia baseline -------------------------------------------------------------------

function octaviaUrl(): string {
  return (process.env.OCTAVIA_BASELINE_URL ?? `http://127.0.0.1:${process.env.API_PORT ?? '19876'}`).replace(/\/+$/, '');
}

interface OctaviaFigures {
  url: string;
  note: string;
  create_to_active: Summary;
  post: Summary;
  delete_to_gone: Summary;
}

/**
 * N graph creates on the running baseline (no-op amphora, compute and network drivers: nothing
 * is built), then their cascade deletes, waited for so its worker is idle while Ostia is measured.
 */
async function measureOctavia(p: Params): Promise<OctaviaFigures | null> {
  const url = octaviaUrl();
  // noauth: the project comes from X-Project-Id; a fresh one keeps our LBs apart from anyone else's.
  const api = await probeOctavia(url, `bench-${randomBytes(6).toString('hex')}`);
  if (!api) return null;
  const live = new Set<string>();
  const cleanup = {
    what: 'Octavia load balancers',
    run: async () => void (await Promise.allSettled([...live].map((id) => deleteStack(api, id, 250, DELETE_TIMEOUT_MS)))),
  };
  cleanups.push(cleanup);
  try {
    // The no-op network driver accepts any subnet id; the members are never contacted.
    const subnet = randomUUID();
    const spec: StackSpec = { provider: 'amphora', vipSubnetId: subnet, memberSubnetId: subnet, listenerPort: 80, members: [{ address: '127.32.0.11', port: 8080 }, { address: '127.32.0.12', port: 8080 }] };
    const runs: Created[] = [];
    progress(`Octavia 11 at ${url}: ${p.creates} sequential graph creates until ACTIVE`);
    for (let i = 0; i < p.creates; i++) {
      const c = await createStack(api, `bench-lifecycle-${i}`, spec, CREATE_POLL_MS, SETTLE_TIMEOUT_MS);
      live.add(c.lb.id);
      runs.push(c);
    }
    progress(`Octavia 11: cascade-deleting ${runs.length} load balancers and waiting until they are gone`);
    const deletes = await deleteAll(api, runs.map((r) => r.lb.id), 'Octavia 11', live);
    return {
      url,
      note: 'real Octavia 11 with no-op amphora, compute and network drivers: its figures are control plane only, no process is started',
      create_to_active: summarize(runs.map((r) => r.activeMs)),
      post: summarize(runs.map((r) => r.postMs)),
      delete_to_gone: summarize(deletes),
    };
  } finally {
    await cleanup.run();
    cleanups.splice(cleanups.indexOf(cleanup), 1);
    api.close();
  }
}

// --- (c) memory and CPU of idle amphorae ------------------------------------------------------

type Role = 'agent' | 'haproxy_master' | 'haproxy_worker' | 'other';
const ROLES: readonly Role[] = ['agent', 'haproxy_master', 'haproxy_worker', 'other'];

interface Tally extends Memory {
  processes: number;
  threads: number;
  files: number;
}

const emptyTally = (): Tally => ({ processes: 0, threads: 0, files: 0, rssKiB: 0, pssKiB: 0 });

function add(t: Tally, pid: number): void {
  const m = memoryOf(pid);
  if (!m) return;
  t.processes++;
  t.rssKiB += m.rssKiB;
  t.pssKiB += m.pssKiB;
  t.threads += threadsOf(pid);
  t.files += openFilesOf(pid);
}

/** The agent leads its amphora's group; HAProxy's master is its child, the worker the master's. */
function roleOf(p: ProcInfo, leader: number, masters: ReadonlySet<number>): Role {
  if (p.pid === leader) return 'agent';
  if (p.comm === 'haproxy' && p.ppid === leader) return 'haproxy_master';
  if (p.comm === 'haproxy' && masters.has(p.ppid)) return 'haproxy_worker';
  return 'other';
}

interface AmphoraProcesses {
  amphorae: number;
  pids: Record<Role, number[]>;
  tally: Record<Role, Tally>;
}

/** Every amphora under DATA_DIR/amphorae, found from its agent.pid and its process group. */
function amphoraProcesses(root: string): AmphoraProcesses {
  const pids: Record<Role, number[]> = { agent: [], haproxy_master: [], haproxy_worker: [], other: [] };
  const tally: Record<Role, Tally> = { agent: emptyTally(), haproxy_master: emptyTally(), haproxy_worker: emptyTally(), other: emptyTally() };
  let amphorae = 0;
  for (const dir of readdirSync(root)) {
    let leader: number;
    try {
      leader = (JSON.parse(readFileSync(join(root, dir, 'agent.pid'), 'utf8')) as { pid: number }).pid;
    } catch {
      continue;
    }
    const members = groupMembers(leader);
    if (!members.length) continue;
    amphorae++;
    const masters = new Set(members.filter((m) => m.comm === 'haproxy' && m.ppid === leader).map((m) => m.pid));
    for (const m of members) {
      const role = roleOf(m, leader, masters);
      pids[role].push(m.pid);
      add(tally[role], m.pid);
    }
  }
  return { amphorae, pids, tally };
}

const allPids = (a: AmphoraProcesses) => ROLES.flatMap((r) => a.pids[r]);
const sumTally = (ts: readonly Tally[]): Tally =>
  ts.reduce((s, t) => ({ processes: s.processes + t.processes, threads: s.threads + t.threads, files: s.files + t.files, rssKiB: s.rssKiB + t.rssKiB, pssKiB: s.pssKiB + t.pssKiB }), emptyTally());

/** A bare master-worker HAProxy serving the same stack as one amphora, configured by hand. */
interface BareHaproxy {
  pids(): number[];
  stop(): Promise<void>;
}

async function startBareHaproxy(rig: Rig): Promise<BareHaproxy> {
  const dir = mkdtempSync(join(tmpdir(), 'ostia-bench-haproxy-'));
  const address = loopbackAddress();
  const [a, b] = rig.backends;
  // The amphora's render for this stack (src/amphora-agent/haproxy/render.ts) minus Ostia's extras
  // (server-state file, pidfile): global maxconn, one HTTP frontend, round robin over two
  // members with an HTTP check every second.
  const config = `global
    maxconn ${rig.maxconn}
    stats socket ${join(dir, 'haproxy.sock')} mode 600 level admin expose-fd listeners
    hard-stop-after 60s

defaults
    retries 3
    option redispatch

frontend web
    mode http
    bind ${address}:${rig.listenerPort}
    timeout client 50000
    default_backend pool

backend pool
    mode http
    balance roundrobin
    timeout connect 5000
    timeout server 50000
    option httpchk GET /
    http-check expect status 200
    timeout check 1000
    server a ${a!.address}:${a!.port} weight 1 check inter 1000 fall 1 rise 1
    server b ${b!.address}:${b!.port} weight 1 check inter 1000 fall 1 rise 1
`;
  writeFileSync(join(dir, 'haproxy.cfg'), config);
  const child: ChildProcess = spawn('haproxy', ['-W', '-S', join(dir, 'master.sock'), '-f', join(dir, 'haproxy.cfg')], { detached: true, stdio: 'ignore' });
  const killGroup = (sig: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, sig);
    } catch {
      // gone already
    }
  };
  const onExit = () => killGroup('SIGKILL');
  process.once('exit', onExit);
  const stop = async () => {
    killGroup('SIGKILL');
    for (let i = 0; i < 100 && groupMembers(child.pid!).length; i++) await sleep(20);
    process.off('exit', onExit);
    rmSync(dir, { recursive: true, force: true });
  };
  const answered = await untilVipAnswers(rig, address, 20, 10_000);
  if (answered.ms === null) {
    await stop();
    throw new Error(`the bare haproxy on ${address}:${rig.listenerPort} did not answer within 10 s`);
  }
  return { pids: () => groupMembers(child.pid!).map((m) => m.pid), stop };
}

interface Capacity {
  limit: string;
  amphorae: number;
  basis: string;
}

interface MemoryFigures {
  amphorae: number;
  maxconn: number;
  /** Per amphora (sum over all of them ÷ their number). */
  per_amphora: Record<'agent' | 'haproxy' | 'total', Tally>;
  other_processes: number;
  bare_haproxy: Tally;
  idle_cpu: { seconds: number; amphorae_cpu_s: number; per_amphora_core_fraction: number; agent_share: number; bare_haproxy_core_fraction: number };
  capacity: Capacity[];
  binding: Capacity;
  notes: string[];
}

function perAmphora(t: Tally, n: number): Tally {
  return { processes: t.processes / n, threads: t.threads / n, files: t.files / n, rssKiB: t.rssKiB / n, pssKiB: t.pssKiB / n };
}

async function measureMemory(rig: Rig, p: Params): Promise<MemoryFigures> {
  progress(`idle for ${IDLE_SETTLE_MS / 1000} s, then RSS/PSS of every amphora process and of one bare haproxy`);
  await sleep(IDLE_SETTLE_MS);
  const bare = await startBareHaproxy(rig);
  try {
    await sleep(IDLE_SETTLE_MS);
    const procs = amphoraProcesses(rig.amphoraRoot);
    const n = procs.amphorae;
    if (n === 0) throw new Error(`no amphora process found under ${rig.amphoraRoot}`);
    const bareTally = emptyTally();
    for (const pid of bare.pids()) add(bareTally, pid);

    progress(`idle CPU of ${n} amphorae and the bare haproxy over ${p.idleSeconds} s, after ${p.settleSeconds} s more of settling`);
    await sleep(p.settleSeconds * 1000);
    const ampPids = allPids(procs);
    const barePids = bare.pids();
    const before = { all: cpuSecondsOfLive(ampPids), agent: cpuSecondsOfLive(procs.pids.agent), bare: cpuSecondsOfLive(barePids) };
    const t0 = performance.now();
    await sleep(p.idleSeconds * 1000);
    const seconds = (performance.now() - t0) / 1000;
    const used = { all: cpuSecondsOfLive(ampPids) - before.all, agent: cpuSecondsOfLive(procs.pids.agent) - before.agent, bare: cpuSecondsOfLive(barePids) - before.bare };

    const haproxy = sumTally([procs.tally.haproxy_master, procs.tally.haproxy_worker]);
    const total = sumTally(ROLES.map((r) => procs.tally[r]));
    const per = { agent: perAmphora(procs.tally.agent, n), haproxy: perAmphora(haproxy, n), total: perAmphora(total, n) };
    const cores = availableParallelism();
    const coreFraction = used.all / seconds / n;
    const mem = meminfo();
    const k = kernelLimits();
    const tasksFree = k.pidMax - tasksInUse();
    const filesFree = k.fileMax - k.filesOpen;
    const capacity: Capacity[] = [
      {
        limit: 'memory',
        amphorae: n + Math.floor(mem.availableKiB / per.total.pssKiB),
        basis: `${n} running + MemAvailable ${(mem.availableKiB / 1024 / 1024).toFixed(1)} GiB ÷ ${(per.total.pssKiB / 1024).toFixed(1)} MiB PSS each`,
      },
      {
        limit: 'CPU (idle work)',
        amphorae: Math.floor(cores / coreFraction),
        basis: `${cores} cores ÷ ${(coreFraction * 100).toFixed(3)} % of a core each (heartbeats, health checks): every core busy with idle amphorae`,
      },
      {
        limit: 'kernel tasks (pid_max)',
        amphorae: n + Math.floor(tasksFree / per.total.threads),
        basis: `${n} running + ${tasksFree} free of pid_max ${k.pidMax} ÷ ${per.total.threads.toFixed(1)} threads each`,
      },
      {
        limit: 'open files (fs.file-max)',
        amphorae: n + Math.floor(filesFree / per.total.files),
        basis: `${n} running + ${filesFree} free of file-max ${k.fileMax} ÷ ${per.total.files.toFixed(1)} open files each, idle`,
      },
    ];
    const binding = capacity.reduce((a, b) => (b.amphorae < a.amphorae ? b : a));
    const notes = [
      `RLIMIT_NOFILE (${k.nofile.soft ?? 'unlimited'} soft / ${k.nofile.hard ?? 'unlimited'} hard) is per process: it caps one HAProxy's maxconn (≈2 files per connection, so ≤ ~9,900), not how many amphorae run.`,
      `Busy rather than idle, each amphora at maxconn ${rig.maxconn} would hold ≈${2 * rig.maxconn} files: fs.file-max then allows ≈${Math.floor(filesFree / (2 * rig.maxconn))} such amphorae, and their buffers, not this idle PSS, decide memory.`,
    ];
    return {
      amphorae: n,
      maxconn: rig.maxconn,
      per_amphora: per,
      other_processes: procs.pids.other.length,
      bare_haproxy: bareTally,
      idle_cpu: { seconds, amphorae_cpu_s: used.all, per_amphora_core_fraction: coreFraction, agent_share: used.all > 0 ? used.agent / used.all : NaN, bare_haproxy_core_fraction: used.bare / seconds },
      capacity,
      binding,
      notes,
    };
  } finally {
    await bare.stop();
  }
}

// --- (b) failover ---------------------------------------------------------------------------

interface FailoverRun {
  amphora: string;
  /** SIGKILL → first request through the VIP answered by a member. */
  restored_ms: number;
  /** restored − heartbeat timeout: what repair costs beyond the detection floor. */
  repair_ms: number;
  /** SIGKILL → the failover job's first step started (stale detection, enqueue, claim). */
  detected_ms: number;
  /** SIGKILL → the load balancer ACTIVE again (the old amphora retired). */
  active_ms: number;
  failed_requests: number;
  steps: StepTime[];
  inside: StepTime[];
}

async function failoverOnce(rig: Rig, lbId: string, vip: string): Promise<FailoverRun> {
  const amp = await allocatedAmphora(rig, lbId);
  const leader = (JSON.parse(readFileSync(join(rig.amphoraRoot, amp.id, 'agent.pid'), 'utf8')) as { pid: number }).pid;
  if (!groupMembers(leader).length) throw new Error(`amphora ${amp.id}: no process in group ${leader}`);
  if (!(await vipAnswers(rig, vip))) throw new Error(`the VIP ${vip} does not answer before the kill`);

  const killedAt = Date.now();
  const t0 = performance.now();
  process.kill(-leader, 'SIGKILL');
  // Until the kernel has reaped them the old listeners may still accept: only then is "restored" meaningful.
  for (let i = 0; i < 1000 && groupMembers(leader).length; i++) await sleep(5);
  if (groupMembers(leader).length) throw new Error(`amphora ${amp.id}: group ${leader} survived SIGKILL`);

  const restored = await untilVipAnswers(rig, vip, FAILOVER_POLL_MS, FAILOVER_BOUND_MS - (performance.now() - t0));
  if (restored.ms === null) throw new Error(`the VIP ${vip} did not answer within ${FAILOVER_BOUND_MS} ms of killing amphora ${amp.id}`);
  const restoredMs = performance.now() - t0;
  // The failover job locked the LB (PENDING_UPDATE) before it built anything; it unlocks it when the old amphora is retired.
  const lb = await waitSettled(rig.user, lbId, FAILOVER_POLL_MS, FAILOVER_BOUND_MS);
  const activeMs = performance.now() - t0;
  if (lb.provisioning_status !== 'ACTIVE') throw new Error(`load balancer ${lbId} went to ${lb.provisioning_status} after the failover`);

  const job = traceJobs(await readTrace(rig.user, lbId)).find((j) => j.operation === 'amphora.failover' && traceTime(j.steps[0]!.started_at) >= killedAt);
  if (!job) throw new Error(`load balancer ${lbId}: no amphora.failover job in the trace after the kill`);
  return {
    amphora: amp.id,
    restored_ms: restoredMs,
    repair_ms: restoredMs - rig.heartbeatTimeoutMs,
    detected_ms: traceTime(job.steps[0]!.started_at) - killedAt,
    active_ms: activeMs,
    failed_requests: restored.failures,
    steps: job.steps.map((s) => ({ step: s.step, ms: s.duration_ms ?? NaN })),
    inside: await insideSteps(rig, lbId, job.steps),
  };
}

interface FailoverFigures {
  heartbeat_interval_ms: number;
  heartbeat_timeout_ms: number;
  runs: FailoverRun[];
  restored: Summary;
  repair: Summary;
  detected: Summary;
  active: Summary;
  steps_median_ms: StepTime[];
  inside_median_ms: StepTime[];
}

async function measureFailover(rig: Rig, p: Params, lbId: string, vip: string): Promise<FailoverFigures> {
  const runs: FailoverRun[] = [];
  for (let i = 0; i < p.failovers; i++) {
    // A heartbeat of the amphora about to die has been recorded, as in a steady state.
    await sleep(rig.heartbeatIntervalMs + 500);
    progress(`failover ${i + 1}/${p.failovers}: SIGKILL to the amphora's process group, then GET through ${vip} every ${FAILOVER_POLL_MS} ms`);
    const run = await failoverOnce(rig, lbId, vip);
    progress(`  traffic back after ${run.restored_ms.toFixed(0)} ms (failover job started ${run.detected_ms.toFixed(0)} ms after the kill), LB ACTIVE after ${run.active_ms.toFixed(0)} ms`);
    runs.push(run);
  }
  return {
    heartbeat_interval_ms: rig.heartbeatIntervalMs,
    heartbeat_timeout_ms: rig.heartbeatTimeoutMs,
    runs,
    restored: summarize(runs.map((r) => r.restored_ms)),
    repair: summarize(runs.map((r) => r.repair_ms)),
    detected: summarize(runs.map((r) => r.detected_ms)),
    active: summarize(runs.map((r) => r.active_ms)),
    steps_median_ms: medianParts(runs.map((r) => r.steps)),
    inside_median_ms: medianParts(runs.map((r) => r.inside)),
  };
}

// --- --density N -------------------------------------------------------------------------------

interface DensityFigures {
  requested: number;
  started: number;
  start_seconds: number;
  answering: number;
  pss_per_amphora_mib: number;
  mem_available_drop_per_amphora_mib: number;
  /** Started + MemAvailable left ÷ the drop per amphora. */
  memory_estimate_amphorae: number;
  idle_core_fraction_per_amphora: number;
  delete_seconds: number;
}

async function measureDensity(rig: Rig, p: Params): Promise<DensityFigures> {
  const n = p.density;
  const availableBefore = meminfo().availableKiB;
  const deadline = performance.now() + n * DENSITY_MS_PER_AMPHORA;
  progress(`density: starting ${n} amphora LBs, ${DENSITY_IN_FLIGHT} at a time, for at most ${(n * DENSITY_MS_PER_AMPHORA) / 1000} s`);
  const made: Array<{ id: string; vip: string }> = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: DENSITY_IN_FLIGHT }, async () => {
      while (next < n && performance.now() < deadline) {
        const i = next++;
        const c = await createStack(rig.user, `bench-density-${i}`, rig.spec('amphora'), 50, Math.max(1000, deadline - performance.now()));
        made.push({ id: c.lb.id, vip: c.lb.vip_address });
      }
    }),
  );
  const startSeconds = (performance.now() - t0) / 1000;
  await sleep(IDLE_SETTLE_MS);
  let answering = 0;
  for (const lb of made) if (await vipAnswers(rig, lb.vip)) answering++;
  const procs = amphoraProcesses(rig.amphoraRoot);
  const pss = sumTally(ROLES.map((r) => procs.tally[r])).pssKiB;
  const availableAfter = meminfo().availableKiB;
  const pids = allPids(procs);
  await sleep(p.settleSeconds * 1000);
  const cpu0 = cpuSecondsOfLive(pids);
  const c0 = performance.now();
  await sleep(p.idleSeconds * 1000);
  const coreFraction = (cpuSecondsOfLive(pids) - cpu0) / ((performance.now() - c0) / 1000) / procs.amphorae;
  progress(`density: deleting ${made.length} load balancers`);
  const d0 = performance.now();
  let cursor = 0;
  await Promise.all(
    Array.from({ length: DENSITY_IN_FLIGHT }, async () => {
      while (cursor < made.length) {
        const id = made[cursor++]!.id;
        await deleteStack(rig.user, id, 100, DELETE_TIMEOUT_MS);
      }
    }),
  );
  return {
    requested: n,
    started: made.length,
    start_seconds: startSeconds,
    answering,
    pss_per_amphora_mib: pss / procs.amphorae / 1024,
    mem_available_drop_per_amphora_mib: (availableBefore - availableAfter) / made.length / 1024,
    memory_estimate_amphorae: made.length + Math.floor(availableAfter / ((availableBefore - availableAfter) / made.length)),
    idle_core_fraction_per_amphora: coreFraction,
    delete_seconds: (performance.now() - d0) / 1000,
  };
}

// --- report ------------------------------------------------------------------------------------

interface Report {
  params: Params;
  machine: { cores: number; mem_total_gib: number; load_average_1m: { before: number; after: number } };
  create: { amphora: CreateFigures; noop: CreateFigures; runs: { amphora: CreateRun[]; noop: CreateRun[] }; amphora_minus_noop_median_ms: number; amphora_over_noop_median: number; delete_to_gone: { amphora: Summary; noop: Summary } };
  octavia: OctaviaFigures | null;
  /** What was measured of the baseline, or why nothing, or how to start it. */
  octavia_note: string;
  memory: MemoryFigures;
  failover: FailoverFigures;
  density: DensityFigures | null;
  netns: NetnsFigures | null;
  /** Why (d) did not run although --netns asked for it. */
  netns_skipped: string | null;
  leftover_processes: number;
  notes: string[];
}

const ms = (v: number | null | undefined, digits = 0) => (v === null || v === undefined || Number.isNaN(v) ? '–' : v.toFixed(digits));
const mib = (kib: number) => (kib / 1024).toFixed(1);

const part = (list: readonly StepTime[], step: string) => list.filter((s) => s.step === step).reduce((sum, s) => sum + s.ms, 0);

function octaviaNote(o: OctaviaFigures | null, error: string | null, a: CreateFigures, n: CreateFigures): string {
  if (o) {
    const vs = (x: CreateFigures) => (o.create_to_active.median / x.create_to_active.median).toFixed(1);
    return `Octavia 11 measured at ${o.url}: ${o.note}. Its median is ${vs(a)}x Ostia amphora's and ${vs(n)}x Ostia noop's.`;
  }
  if (error) return `The Octavia baseline at ${octaviaUrl()} answered, but its measurement failed: ${error}`;
  return `Octavia baseline not running at ${octaviaUrl()}, so only Ostia was measured. To compare, start it with: bash /work/shared/baseline/octavia-baseline.sh start   (see ${BASELINE_DOC}; it runs no-op drivers, so it compares with the noop column)`;
}

function renderCreate(r: Report): string[] {
  const { amphora: a, noop: n } = r.create;
  const o = r.octavia;
  const out: string[] = [];
  out.push(`(a) graph create → ACTIVE: LB + HTTP listener + named pool + 2 members + HTTP monitor, n=${r.params.creates} per provider, GET every ${CREATE_POLL_MS} ms (target: amphora median under 1 s)`);
  const row = (label: string, f: (x: CreateFigures) => string, oct: string, ratio = '') => [label, f(a), f(n), ratio, o ? oct : ''];
  out.push(
    grid([
      ['', 'amphora', 'noop', 'amphora − noop', o ? 'Octavia 11 (no-op)' : ''],
      row('median (ms)', (x) => ms(x.create_to_active.median), ms(o?.create_to_active.median), `${ms(r.create.amphora_minus_noop_median_ms)} (${r.create.amphora_over_noop_median.toFixed(1)}x)`),
      row('p90 (ms)', (x) => ms(x.create_to_active.p90), ms(o?.create_to_active.p90)),
      row('min / max (ms)', (x) => `${ms(x.create_to_active.min)} / ${ms(x.create_to_active.max)}`, `${ms(o?.create_to_active.min)} / ${ms(o?.create_to_active.max)}`),
      row('  POST alone, median (ms)', (x) => ms(x.post.median, 1), ms(o?.post.median, 1)),
      row('  ACTIVE → first answer via VIP, median (ms)', (x) => ms(x.first_answer?.median, 1), ''),
      ['cascade delete → 404, median (ms)', ms(r.create.delete_to_gone.amphora.median), ms(r.create.delete_to_gone.noop.median), '', o ? ms(o.delete_to_gone.median) : ''],
    ]),
  );
  out.push('', 'Where create → ACTIVE goes (medians over the runs, from the provisioning trace and, indented, the agent\'s log):');
  const stepNames = [...new Set([...a.steps_median_ms, ...n.steps_median_ms].map((s) => s.step))];
  const stepOf = (x: CreateFigures, step: string) => x.steps_median_ms.find((s) => s.step === step)?.ms;
  out.push(
    grid([
      ['', 'amphora (ms)', 'noop (ms)'],
      ['POST sent → first step started (API, queue, claim)', ms(a.before_steps_median_ms, 1), ms(n.before_steps_median_ms, 1)],
      ...stepNames.map((s) => [`  step ${s}`, ms(stepOf(a, s), 1), ms(stepOf(n, s), 1)]),
      ...a.inside_median_ms.map((s) => [`    ${s.step}`, ms(s.ms, 1), '']),
      ['  between steps (trace and progress writes)', ms(a.between_steps_median_ms, 1), ms(n.between_steps_median_ms, 1)],
      ['last step finished → poll saw ACTIVE', ms(a.after_steps_median_ms, 1), ms(n.after_steps_median_ms, 1)],
    ]),
  );
  out.push(r.octavia_note);
  return out;
}

function renderFailover(f: FailoverFigures): string[] {
  return [
    `(b) failover: SIGKILL to the amphora's process group → first request through the VIP answered (GET every ${FAILOVER_POLL_MS} ms), default timers: heartbeat every ${f.heartbeat_interval_ms} ms, stale after ${f.heartbeat_timeout_ms} ms (target: under 5 s)`,
    grid([
      ['', 'median', ...f.runs.map((_, i) => `#${i + 1}`)],
      ['kill → traffic back (ms)', ms(f.restored.median), ...f.runs.map((x) => ms(x.restored_ms))],
      [`  − heartbeat timeout = repair (ms)`, ms(f.repair.median), ...f.runs.map((x) => ms(x.repair_ms))],
      ['traffic back ÷ heartbeat timeout', `${(f.restored.median / f.heartbeat_timeout_ms).toFixed(2)}x`, ...f.runs.map((x) => `${(x.restored_ms / f.heartbeat_timeout_ms).toFixed(2)}x`)],
      ['kill → failover job started (ms)', ms(f.detected.median), ...f.runs.map((x) => ms(x.detected_ms))],
      ['kill → LB ACTIVE again (ms)', ms(f.active.median), ...f.runs.map((x) => ms(x.active_ms))],
      ['failed requests meanwhile', '', ...f.runs.map((x) => String(x.failed_requests))],
      ...f.steps_median_ms.map((s) => [`  step ${s.step} (ms)`, ms(s.ms, 1), ...f.runs.map((x) => ms(part(x.steps, s.step), 1))]),
      ...f.inside_median_ms.map((s) => [`    ${s.step} (ms)`, ms(s.ms, 1), ...f.runs.map((x) => ms(part(x.inside, s.step), 1))]),
    ]),
    `Silence is counted from the last heartbeat, up to one interval before the kill, and the stale check runs every ${checkPeriodMs(f.heartbeat_timeout_ms)} ms: the failover job can start from ${f.heartbeat_timeout_ms - f.heartbeat_interval_ms} to ${f.heartbeat_timeout_ms + checkPeriodMs(f.heartbeat_timeout_ms)} ms after the kill (plus the check's own time). Traffic is back once the new HAProxy has loaded, before push-config and the later steps end.`,
  ];
}

function renderMemory(m: MemoryFigures): string[] {
  const t = (x: Tally) => [mib(x.rssKiB), mib(x.pssKiB), x.processes.toFixed(1), x.threads.toFixed(1), x.files.toFixed(1)];
  const limitWidth = Math.max(...m.capacity.map((c) => c.limit.length));
  return [
    `(c) idle amphorae: ${m.amphorae} LBs, each 1 listener, 1 pool, 2 members, HTTP monitor every 1 s; maxconn ${m.maxconn} for them and the bare haproxy`,
    grid([
      ['per amphora', 'RSS MiB', 'PSS MiB', 'procs', 'threads', 'open files'],
      ['  agent (node)', ...t(m.per_amphora.agent)],
      ['  haproxy (master + worker)', ...t(m.per_amphora.haproxy)],
      ['  total', ...t(m.per_amphora.total)],
      ['baseline: bare haproxy -W, same config', ...t(m.bare_haproxy)],
      ['amphora ÷ bare haproxy (PSS)', '', `${(m.per_amphora.total.pssKiB / m.bare_haproxy.pssKiB).toFixed(1)}x`, '', '', ''],
    ]),
    ...(m.other_processes ? [`WARNING: ${m.other_processes} processes in amphora groups were neither agent nor haproxy; counted in the total.`] : []),
    `idle CPU over ${m.idle_cpu.seconds.toFixed(1)} s: ${(m.idle_cpu.per_amphora_core_fraction * 100).toFixed(3)} % of a core per amphora (${(m.idle_cpu.agent_share * 100).toFixed(0)} % of it the agent); bare haproxy ${(m.idle_cpu.bare_haproxy_core_fraction * 100).toFixed(3)} %`,
    'How many amphorae this machine runs:',
    ...m.capacity.map((c) => `  ${c.limit.padEnd(limitWidth)}  ${String(c.amphorae).padStart(7)}   ${c.basis}`),
    `  binding limit: ${m.binding.limit}, ≈${m.binding.amphorae} amphorae`,
    ...m.notes.map((note) => `  ${note}`),
  ];
}

function renderDensity(d: DensityFigures, m: MemoryFigures): string[] {
  return [
    `--density ${d.requested}: ${d.started} amphorae started in ${d.start_seconds.toFixed(1)} s, ${d.answering} answering through their VIP`,
    `  PSS ${d.pss_per_amphora_mib.toFixed(1)} MiB per amphora (estimate above: ${mib(m.per_amphora.total.pssKiB)}); idle CPU ${(d.idle_core_fraction_per_amphora * 100).toFixed(3)} % of a core each (above: ${(m.idle_cpu.per_amphora_core_fraction * 100).toFixed(3)} %); deleted in ${d.delete_seconds.toFixed(1)} s`,
    `  MemAvailable dropped ${d.mem_available_drop_per_amphora_mib.toFixed(1)} MiB per amphora (PSS plus kernel memory and the controller's growth; other jobs on the machine move it too): at that rate ≈${d.memory_estimate_amphorae} amphorae fit`,
  ];
}

function loopbackBaseline(r: Report): LoopbackBaseline {
  return { amphora_create_median_ms: r.create.amphora.create_to_active.median, pss_per_amphora_kib: r.memory.per_amphora.total.pssKiB, failover_median_ms: r.failover.restored.median };
}

function render(r: Report): string {
  const sections = [renderCreate(r), renderFailover(r.failover), renderMemory(r.memory), ...(r.density ? [renderDensity(r.density, r.memory)] : []), ...(r.netns ? [renderNetns(r.netns, loopbackBaseline(r))] : [])];
  const tail = [
    ...(r.netns_skipped ? [`(d) netns skipped: ${r.netns_skipped}`] : []),
    `Processes left under the amphorae directory after the deletes: ${r.leftover_processes}.`,
    ...r.notes,
    `Load average (1 min): ${r.machine.load_average_1m.before.toFixed(2)} before, ${r.machine.load_average_1m.after.toFixed(2)} after, on ${r.machine.cores} cores; the machine is shared, compare within one run.`,
  ];
  return [...sections, tail].map((lines) => lines.join('\n')).join('\n\n') + '\n';
}

// --- main --------------------------------------------------------------------------------------

/** A bad flag: reported with the usage, without a stack. */
class UsageError extends Error {}

const OPTIONS = {
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', default: false },
  creates: { type: 'string', default: '10' },
  amphorae: { type: 'string', default: '10' },
  failovers: { type: 'string', default: '3' },
  'idle-seconds': { type: 'string', default: '10' },
  'settle-seconds': { type: 'string', default: '20' },
  density: { type: 'string', default: '0' },
  netns: { type: 'boolean', default: false },
  'netns-creates': { type: 'string', default: '3' },
  'netns-failovers': { type: 'string', default: '2' },
  'takeover-rounds': { type: 'string', default: '3' },
} as const;

function params(): { p: Params; json: boolean; help: boolean } {
  let values: ReturnType<typeof parseArgs<{ options: typeof OPTIONS }>>['values'];
  try {
    values = parseArgs({ options: OPTIONS }).values;
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const counts = {
    creates: Number(values.creates),
    amphorae: Number(values.amphorae),
    failovers: Number(values.failovers),
    idleSeconds: Number(values['idle-seconds']),
    settleSeconds: Number(values['settle-seconds']),
    density: Number(values.density),
    netnsCreates: Number(values['netns-creates']),
    netnsFailovers: Number(values['netns-failovers']),
    takeoverRounds: Number(values['takeover-rounds']),
  };
  const p: Params = { ...counts, netns: values.netns };
  for (const [k, v] of Object.entries(counts)) if (!Number.isInteger(v) || v < (k === 'density' ? 0 : 1)) throw new UsageError(`--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} must be a whole number${k === 'density' ? '' : ' ≥ 1'}`);
  return { p, json: values.json, help: values.help };
}

async function main(): Promise<void> {
  const { p, json, help } = params();
  if (help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const netnsSkipped = p.netns ? netnsSkip() : null;
  if (netnsSkipped) progress(`(d) netns skipped: ${netnsSkipped}`);
  const loadBefore = loadavg()[0]!;
  // First, while nothing of ours runs: the baseline's worker must be idle again before Ostia is measured.
  let octaviaError: string | null = null;
  // A baseline that misbehaves costs its column, not the run.
  const octavia = await measureOctavia(p).catch((e: Error) => {
    octaviaError = e.message;
    return null;
  });
  try {
    const rig = await startRig();

    progress(`(a) ${p.creates} graph creates per provider, alternating amphora and noop`);
    const runs = { amphora: [] as CreateRun[], noop: [] as CreateRun[] };
    for (let i = 0; i < p.creates; i++) {
      for (const provider of ['amphora', 'noop'] as const) runs[provider].push(await createOne(rig, provider, `bench-${provider}-${i}`));
      progress(`  create ${i + 1}/${p.creates}: amphora ${runs.amphora[i]!.active_ms.toFixed(0)} ms, noop ${runs.noop[i]!.active_ms.toFixed(0)} ms`);
    }
    const noopDeletes = await deleteAll(rig.user, runs.noop.map((r) => r.id), 'noop');
    const amphoraDeletes: number[] = [];
    const idle = runs.amphora.map((r) => ({ id: r.id, vip: r.vip }));
    // (c) wants exactly K idle amphorae: the created ones, topped up or trimmed.
    for (let i = idle.length; i < p.amphorae; i++) {
      const c = await createStack(rig.user, `bench-idle-${i}`, rig.spec('amphora'), 50, SETTLE_TIMEOUT_MS);
      idle.push({ id: c.lb.id, vip: c.lb.vip_address });
    }
    amphoraDeletes.push(...(await deleteAll(rig.user, idle.splice(p.amphorae).map((x) => x.id), 'amphora')));

    progress(`(c) memory and idle CPU of ${idle.length} amphorae`);
    const memory = await measureMemory(rig, p);

    progress(`(b) ${p.failovers} failovers of load balancer ${idle[0]!.id}`);
    const failover = await measureFailover(rig, p, idle[0]!.id, idle[0]!.vip);

    amphoraDeletes.push(...(await deleteAll(rig.user, idle.map((x) => x.id), 'amphora')));
    const density = p.density ? await measureDensity(rig, p) : null;
    if (p.netns && !netnsSkipped) progress(`(d) netns amphorae: ${p.netnsCreates} creates per topology, ${p.netnsFailovers} failovers, ${p.takeoverRounds} takeover rounds per interval`);
    const netns = p.netns && !netnsSkipped ? await measureNetns(p, guarded) : null;
    // Deletes stop the groups before they answer 404; anything left here is a leak.
    const leftover = processesUnder(rig.amphoraRoot).length;

    const amphoraFigures = createFigures(runs.amphora);
    const noopFigures = createFigures(runs.noop);
    const report: Report = {
      params: p,
      machine: { cores: availableParallelism(), mem_total_gib: meminfo().totalKiB / 1024 / 1024, load_average_1m: { before: loadBefore, after: loadavg()[0]! } },
      create: {
        amphora: amphoraFigures,
        noop: noopFigures,
        runs,
        amphora_minus_noop_median_ms: amphoraFigures.create_to_active.median - noopFigures.create_to_active.median,
        amphora_over_noop_median: amphoraFigures.create_to_active.median / noopFigures.create_to_active.median,
        delete_to_gone: { amphora: summarize(amphoraDeletes), noop: summarize(noopDeletes) },
      },
      octavia,
      memory,
      failover,
      density,
      netns,
      netns_skipped: netnsSkipped,
      leftover_processes: leftover,
      octavia_note: octaviaNote(octavia, octaviaError, amphoraFigures, noopFigures),
      notes: [`Ostia ${rig.ostia.url}, data dir ${rig.ostia.dataDir} (removed at the end).`],
    };
    process.stdout.write(json ? JSON.stringify(report) + '\n' : render(report));
  } finally {
    await cleanUp();
  }
}

main().catch(async (err: unknown) => {
  if (err instanceof UsageError) {
    process.stderr.write(`${err.message}\n${USAGE}\n`);
    process.exit(2);
  }
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  await cleanUp();
  process.exit(1);
});

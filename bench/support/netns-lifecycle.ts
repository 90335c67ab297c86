/**
 * The lifecycle bench's `--netns` section (issue 13): amphorae as network namespaces on bridge networks,
 * in Ostias of the bench's own (startBridgeOstia, root), against the loopback figures of the same run.
 *
 * - create → ACTIVE of the same graph as (a), SINGLE and ACTIVE_STANDBY alternating;
 * - memory (PSS) of every process in each amphora namespace, and amphorae per machine from it;
 * - failover of SINGLE amphorae: every process of the namespace killed → the VIP answers again, against
 *   the heartbeat timeout;
 * - VIP takeover of an ACTIVE_STANDBY pair for the four faults of the MASTER, at a VRRP advertisement
 *   interval of 100 ms and at Octavia's 1000 ms, each in an Ostia of its own (the interval is a setting).
 */
import { amphoraNamespace, netnsPids } from '../../src/linux-net/ip.js';
import { httpGet, randomPort } from '../../test/support/amphora-fixtures.js';
import { BRIDGE_HEARTBEAT, startBridgeOstia, type BridgeOstia } from '../../test/support/bridge-ostia.js';
import { convergedPair, FAULTS, holdsVip, interruption, PROBE_EVERY_MS } from '../../test/support/vip-takeover.js';
import { ApiClient, createStack, readTrace, traceJobs, traceTime, waitSettled, type StackSpec } from './lifecycle-api.js';
import { pollUntil, sleep } from './poll.js';
import { memoryOf, meminfo } from './processes.js';
import { progress } from './progress.js';
import { median } from './stats.js';
import { grid } from './table.js';

export interface NetnsParams {
  netnsCreates: number;
  netnsFailovers: number;
  takeoverRounds: number;
}

/** Runs `body`, then `close` — also on SIGINT while `body` runs (the bench's cleanups). */
export type Guard = <T>(what: string, close: () => Promise<void>, body: () => Promise<T>) => Promise<T>;

const ADVERT_INTERVALS_MS = [100, 1000] as const;
const CREATE_POLL_MS = 5;
const FAILOVER_POLL_MS = 20;
const SETTLE_TIMEOUT_MS = 120_000;
/** A pair rebuilt by a failover (the whole MASTER killed) takes a heartbeat timeout and a build. */
const CONVERGE_TIMEOUT_MS = 180_000;
const FIRST_ANSWER_BOUND_MS = 5_000;
/**
 * Past the detection and the rebuild, a client whose neighbour entry for the VIP still names the dead
 * amphora's MAC waits for it to go stale and be probed again (base_reachable_time 30 s × up to 1.5, then
 * the delay and the probes): seen up to ~50 s here.
 */
const FAILOVER_BOUND_MS = 90_000;
const IDLE_SETTLE_MS = 3_000;

type Topology = 'SINGLE' | 'ACTIVE_STANDBY';

export interface TakeoverFigures {
  advert_interval_ms: number;
  /** Per fault name, the interruption of each round (ms). */
  cases: Array<{ fault: string; runs_ms: number[]; median_ms: number }>;
  median_ms: number;
}

export interface NetnsFigures {
  heartbeat_interval_ms: number;
  heartbeat_timeout_ms: number;
  create_ms: Record<Topology, number[]>;
  /** Per topology, per step of the create job, each create's duration (ms): where a pair's extra time goes. */
  create_steps_ms: Record<Topology, Record<string, number[]>>;
  first_answer_ms: Record<Topology, number[]>;
  pss_per_amphora_kib: Record<Topology, number>;
  amphorae_per_machine_by_memory: number;
  mem_available_kib: number;
  failover: NetnsFailover[];
  takeover: TakeoverFigures[];
}

interface Lab {
  lab: BridgeOstia;
  admin: ApiClient;
  user: ApiClient;
  port: number;
  spec(topology: Topology): StackSpec;
}

/**
 * `body` on a bridge Ostia at `advertIntervalMs`, with two member servers on its private network and an
 * ACTIVE_STANDBY flavor; closed after it, or on SIGINT.
 */
async function withLab<T>(advertIntervalMs: number, guard: Guard, body: (l: Lab) => Promise<T>): Promise<T> {
  let lab: BridgeOstia | undefined;
  const clients: ApiClient[] = [];
  const close = async () => {
    for (const c of clients) c.close();
    await lab?.close();
  };
  return guard(`netns Ostia (advertisement every ${advertIntervalMs} ms)`, close, async () => {
    progress(`netns: starting ostia up on netns + bridge (VRRP advertisement every ${advertIntervalMs} ms)`);
    lab = await startBridgeOstia({ amphora: { vrrpAdvertIntervalMs: advertIntervalMs } });
    const user = new ApiClient('Ostia netns', lab.ostia.url, { 'x-auth-token': await lab.ostia.token('ostia-demo') }, true);
    const admin = new ApiClient('Ostia netns (admin)', lab.ostia.url, { 'x-auth-token': await lab.ostia.token('ostia') }, true);
    clients.push(user, admin);
    const members: Array<{ address: string; port: number }> = [];
    for (const [i, name] of ['bm-a', 'bm-b'].entries()) {
      const address = lab.address('private', 220 + i);
      await lab.host(name, 'private', address, true);
      members.push({ address, port: 8000 });
    }
    await lab.cli.json('ostia', ['loadbalancer', 'flavorprofile', 'create', '--name', 'ha', '--provider', 'amphora', '--flavor-data', '{"loadbalancer_topology": "ACTIVE_STANDBY"}']);
    const flavor = await lab.cli.json<{ id: string }>('ostia', ['loadbalancer', 'flavor', 'create', '--name', 'ha', '--flavorprofile', 'ha', '--enable']);
    const vipSubnetId = await lab.ostia.subnetId('public-subnet');
    const memberSubnetId = await lab.ostia.subnetId('private-subnet');
    const port = randomPort();
    return body({
      lab,
      admin,
      user,
      port,
      spec: (topology) => ({ provider: 'amphora', vipSubnetId, memberSubnetId, listenerPort: port, members, ...(topology === 'ACTIVE_STANDBY' ? { flavorId: flavor.id } : {}) }),
    });
  });
}

async function inService(l: Lab, lbId: string): Promise<string[]> {
  const { amphorae } = await l.admin.json<{ amphorae: Array<{ id: string; status: string }> }>('GET', `/v2/octavia/amphorae?loadbalancer_id=${lbId}`);
  return amphorae.filter((a) => a.status === 'ALLOCATED').map((a) => a.id);
}

const served = async (vip: string, port: number) => (await httpGet(vip, port, '/', 500)).status === 200;

interface Made {
  id: string;
  vip: string;
  ms: number;
  firstAnswerMs: number;
  steps: Record<string, number>;
}

async function createOne(l: Lab, topology: Topology, name: string): Promise<Made> {
  const c = await createStack(l.user, name, l.spec(topology), CREATE_POLL_MS, SETTLE_TIMEOUT_MS);
  const t0 = performance.now();
  const at = await pollUntil(() => served(c.lb.vip_address, l.port), CREATE_POLL_MS, FIRST_ANSWER_BOUND_MS);
  if (at === null) throw new Error(`netns load balancer ${c.lb.id} is ACTIVE but its VIP ${c.lb.vip_address}:${l.port} did not answer within ${FIRST_ANSWER_BOUND_MS} ms`);
  const job = traceJobs(await readTrace(l.user, c.lb.id)).find((j) => j.operation === 'loadbalancer.create');
  const steps = Object.fromEntries((job?.steps ?? []).map((s) => [s.step, s.duration_ms ?? 0]));
  return { id: c.lb.id, vip: c.lb.vip_address, ms: c.activeMs, firstAnswerMs: at - t0, steps };
}

/** Each step's durations over the creates, in the order the job ran them. */
function stepsOf(made: readonly Made[]): Record<string, number[]> {
  const steps: Record<string, number[]> = {};
  for (const m of made) for (const [step, ms] of Object.entries(m.steps)) (steps[step] ??= []).push(ms);
  return steps;
}

/** PSS of every process in the namespaces of the load balancers' amphorae, per amphora. */
async function pssPerAmphora(l: Lab, lbIds: readonly string[]): Promise<number> {
  let kib = 0;
  let amphorae = 0;
  for (const lbId of lbIds) {
    for (const id of await inService(l, lbId)) {
      amphorae++;
      for (const pid of netnsPids(amphoraNamespace(l.lab.net.fabric, id))) kib += memoryOf(pid)?.pssKiB ?? 0;
    }
  }
  if (!amphorae) throw new Error('netns: no amphora in service to measure');
  return kib / amphorae;
}

/** Times after the kill of a SINGLE amphora (ms). */
export interface NetnsFailover {
  /** The VIP answered again, by the replacement. */
  restored: number;
  /** The failover job's first step started. */
  detected: number;
  /** The failover job's last step finished: the load balancer ACTIVE again, the old amphora retired. */
  active: number;
}

/** Every process of the SINGLE amphora's namespace killed → the VIP answered again (by its replacement). */
async function failoverOnce(l: Lab, lbId: string, vip: string): Promise<NetnsFailover> {
  const [old] = await inService(l, lbId);
  if (!old || !(await served(vip, l.port))) throw new Error(`netns load balancer ${lbId} is not serving before the kill`);
  const killedAt = Date.now();
  const t0 = performance.now();
  for (const pid of netnsPids(amphoraNamespace(l.lab.net.fabric, old))) process.kill(pid, 'SIGKILL');
  const at = await pollUntil(() => served(vip, l.port), FAILOVER_POLL_MS, FAILOVER_BOUND_MS);
  if (at === null) throw new Error(`the VIP ${vip} did not answer within ${FAILOVER_BOUND_MS} ms of killing amphora ${old}`);
  const lb = await waitSettled(l.user, lbId, 100, FAILOVER_BOUND_MS);
  if (lb.provisioning_status !== 'ACTIVE') throw new Error(`netns load balancer ${lbId} went to ${lb.provisioning_status} after the failover`);
  const job = traceJobs(await readTrace(l.user, lbId)).find((j) => j.operation === 'amphora.failover' && traceTime(j.steps[0]!.started_at) >= killedAt);
  if (!job) throw new Error(`netns load balancer ${lbId}: no amphora.failover job in the trace after the kill`);
  const last = job.steps[job.steps.length - 1]!;
  return { restored: at - t0, detected: traceTime(job.steps[0]!.started_at) - killedAt, active: traceTime(last.finished_at ?? last.started_at) - killedAt };
}

/** `rounds` × the four faults of the MASTER of one ACTIVE_STANDBY load balancer, each after the pair converged. */
async function takeoverRounds(l: Lab, lbId: string, vip: string, rounds: number, advertIntervalMs: number): Promise<TakeoverFigures> {
  const fabric = l.lab.net.fabric;
  const settled = async () => (await waitSettled(l.user, lbId, 100, CONVERGE_TIMEOUT_MS)).provisioning_status === 'ACTIVE';
  const converged = () => convergedPair({ fabric, vip, port: l.port, inService: () => inService(l, lbId), settled }, CONVERGE_TIMEOUT_MS, 200);
  const cases = Object.values(FAULTS).map((fault) => ({ fault, runs_ms: [] as number[] }));
  for (let r = 0; r < rounds; r++) {
    for (const c of cases) {
      const { active, standby } = await converged();
      const ns = amphoraNamespace(fabric, active);
      const ms = await interruption(vip, l.port, () => c.fault.inject(ns));
      progress(`  advert ${advertIntervalMs} ms, round ${r + 1}/${rounds}, ${c.fault.name}: ${ms} ms without answers`);
      c.runs_ms.push(ms);
      if ('repair' in c.fault) {
        await pollUntil(() => holdsVip(fabric, standby, vip), 100, 10_000);
        await c.fault.repair(ns);
      }
    }
  }
  await converged();
  return {
    advert_interval_ms: advertIntervalMs,
    cases: cases.map((c) => ({ fault: c.fault.name, runs_ms: c.runs_ms, median_ms: median(c.runs_ms) })),
    median_ms: median(cases.flatMap((c) => c.runs_ms)),
  };
}

export async function measureNetns(p: NetnsParams, guard: Guard): Promise<NetnsFigures> {
  const [fast, octaviaDefault] = ADVERT_INTERVALS_MS;
  const main = await withLab(fast, guard, async (l) => {
    progress(`netns: ${p.netnsCreates} graph creates per topology, alternating SINGLE and ACTIVE_STANDBY`);
    const made: Record<Topology, Made[]> = { SINGLE: [], ACTIVE_STANDBY: [] };
    for (let i = 0; i < p.netnsCreates; i++) {
      for (const t of ['SINGLE', 'ACTIVE_STANDBY'] as const) made[t].push(await createOne(l, t, `bench-netns-${t.toLowerCase()}-${i}`));
      progress(`  create ${i + 1}/${p.netnsCreates}: SINGLE ${made.SINGLE[i]!.ms.toFixed(0)} ms, ACTIVE_STANDBY ${made.ACTIVE_STANDBY[i]!.ms.toFixed(0)} ms`);
    }
    progress(`netns: idle for ${IDLE_SETTLE_MS / 1000} s, then PSS of every process in the amphora namespaces`);
    await sleep(IDLE_SETTLE_MS);
    const pss = { SINGLE: await pssPerAmphora(l, made.SINGLE.map((m) => m.id)), ACTIVE_STANDBY: await pssPerAmphora(l, made.ACTIVE_STANDBY.map((m) => m.id)) };
    const available = meminfo().availableKiB;
    const running = made.SINGLE.length + 2 * made.ACTIVE_STANDBY.length;

    const failovers: NetnsFailover[] = [];
    for (let i = 0; i < p.netnsFailovers; i++) {
      const lb = made.SINGLE[i % made.SINGLE.length]!;
      // A heartbeat of the amphora about to die has been recorded, as in a steady state.
      await sleep(BRIDGE_HEARTBEAT.intervalMs + 500);
      failovers.push(await failoverOnce(l, lb.id, lb.vip));
      progress(`  SINGLE failover ${i + 1}/${p.netnsFailovers}: VIP served again ${failovers[i]!.restored.toFixed(0)} ms after the kill (failover job started at ${failovers[i]!.detected.toFixed(0)} ms, LB ACTIVE at ${failovers[i]!.active.toFixed(0)} ms)`);
    }
    const pair = made.ACTIVE_STANDBY[0]!;
    progress(`netns: VIP takeover, ${p.takeoverRounds} rounds of the four faults, a new connection every ${PROBE_EVERY_MS} ms`);
    const takeover = await takeoverRounds(l, pair.id, pair.vip, p.takeoverRounds, fast);
    return {
      create_ms: { SINGLE: made.SINGLE.map((m) => m.ms), ACTIVE_STANDBY: made.ACTIVE_STANDBY.map((m) => m.ms) },
      create_steps_ms: { SINGLE: stepsOf(made.SINGLE), ACTIVE_STANDBY: stepsOf(made.ACTIVE_STANDBY) },
      first_answer_ms: { SINGLE: made.SINGLE.map((m) => m.firstAnswerMs), ACTIVE_STANDBY: made.ACTIVE_STANDBY.map((m) => m.firstAnswerMs) },
      pss_per_amphora_kib: pss,
      mem_available_kib: available,
      amphorae_per_machine_by_memory: running + Math.floor(available / pss.SINGLE),
      failover: failovers,
      takeover,
    };
  });
  const slow = await withLab(octaviaDefault, guard, async (l) => {
    const lb = await createOne(l, 'ACTIVE_STANDBY', 'bench-netns-octavia-interval');
    return takeoverRounds(l, lb.id, lb.vip, p.takeoverRounds, octaviaDefault);
  });
  return { ...main, heartbeat_interval_ms: BRIDGE_HEARTBEAT.intervalMs, heartbeat_timeout_ms: BRIDGE_HEARTBEAT.timeoutMs, takeover: [main.takeover, slow] };
}

/** The loopback figures of the same run that the netns ones are divided by. */
export interface LoopbackBaseline {
  amphora_create_median_ms: number;
  pss_per_amphora_kib: number;
  failover_median_ms: number;
}

const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;

export function renderNetns(f: NetnsFigures, local: LoopbackBaseline): string[] {
  const c = { SINGLE: median(f.create_ms.SINGLE), ACTIVE_STANDBY: median(f.create_ms.ACTIVE_STANDBY) };
  const failover = median(f.failover.map((x) => x.restored));
  const runs = (pick: (x: NetnsFailover) => number) => `median ${median(f.failover.map(pick)).toFixed(0)} (${f.failover.map((x) => pick(x).toFixed(0)).join(', ')})`;
  const [fast, slow] = f.takeover;
  const cell = (t: TakeoverFigures | undefined, fault: string) => {
    const x = t?.cases.find((k) => k.fault === fault);
    return x ? `${x.median_ms.toFixed(0)} (${x.runs_ms.join(', ')})` : '–';
  };
  const mib = (kib: number) => (kib / 1024).toFixed(1);
  return [
    `(d) netns amphorae on bridge networks (compute.driver netns, network.driver bridge, Ostias of the bench's own; heartbeat every ${f.heartbeat_interval_ms} ms, stale after ${f.heartbeat_timeout_ms} ms)`,
    `create → ACTIVE, the graph of (a), n=${f.create_ms.SINGLE.length} per topology (target: ACTIVE_STANDBY within 1.5x of SINGLE):`,
    grid([
      ['', 'median (ms)', 'min / max (ms)', 'ACTIVE → first answer (ms)', '÷ loopback amphora (a)', '÷ netns SINGLE'],
      ...(['SINGLE', 'ACTIVE_STANDBY'] as const).map((t) => [
        `  netns ${t}`,
        c[t].toFixed(0),
        `${Math.min(...f.create_ms[t]).toFixed(0)} / ${Math.max(...f.create_ms[t]).toFixed(0)}`,
        median(f.first_answer_ms[t]).toFixed(1),
        ratio(c[t], local.amphora_create_median_ms),
        ratio(c[t], c.SINGLE),
      ]),
      ...Object.keys(f.create_steps_ms.ACTIVE_STANDBY).map((step) => {
        const [single, pair] = (['SINGLE', 'ACTIVE_STANDBY'] as const).map((t) => f.create_steps_ms[t][step]);
        return [`    step ${step}`, `${single ? median(single).toFixed(0) : '–'} / ${pair ? median(pair).toFixed(0) : '–'}`, '', '', '', single && pair ? ratio(median(pair), median(single)) : '–'];
      }),
    ]),
    '  (a step row: SINGLE / ACTIVE_STANDBY medians)',
    `VIP takeover of an ACTIVE_STANDBY pair: first failed → first answered connection after the last failure, a new connection every ${PROBE_EVERY_MS} ms; median (rounds) in ms (targets: ≤ 500 at 100 ms, ≤ 1200 at 1000 ms):`,
    grid([
      ['', `advert ${fast?.advert_interval_ms} ms`, `advert ${slow?.advert_interval_ms} ms (Octavia's default)`],
      ...(fast?.cases ?? []).map((k) => [`  ${k.fault}`, cell(fast, k.fault), cell(slow, k.fault)]),
      ['  all faults, median', fast ? fast.median_ms.toFixed(0) : '–', slow ? slow.median_ms.toFixed(0) : '–'],
      ['  ÷ advertisement interval', fast ? ratio(fast.median_ms, fast.advert_interval_ms) : '–', slow ? ratio(slow.median_ms, slow.advert_interval_ms) : '–'],
    ]),
    `SINGLE failover, every process of the amphora namespace killed (GET every ${FAILOVER_POLL_MS} ms; target ≤ 5 s), in ms after the kill:`,
    `  VIP served by the replacement: ${runs((x) => x.restored)}; ${ratio(failover, f.heartbeat_timeout_ms)} the heartbeat timeout, ${(failover - f.heartbeat_timeout_ms).toFixed(0)} ms beyond it; loopback (b): ${local.failover_median_ms.toFixed(0)} ms at its default timers`,
    `  failover job started: ${runs((x) => x.detected)}; LB ACTIVE again, old amphora retired: ${runs((x) => x.active)}`,
    `memory, PSS of every process in an amphora namespace, idle: SINGLE ${mib(f.pss_per_amphora_kib.SINGLE)} MiB (${ratio(f.pss_per_amphora_kib.SINGLE, local.pss_per_amphora_kib)} a loopback amphora of (c)), ACTIVE_STANDBY ${mib(f.pss_per_amphora_kib.ACTIVE_STANDBY)} MiB per amphora (keepalived included; ${ratio(f.pss_per_amphora_kib.ACTIVE_STANDBY, f.pss_per_amphora_kib.SINGLE)} SINGLE)`,
    `  amphorae per machine by memory: ≈${f.amphorae_per_machine_by_memory} SINGLE ones (the running ones + MemAvailable ${(f.mem_available_kib / 1024 / 1024).toFixed(1)} GiB ÷ ${mib(f.pss_per_amphora_kib.SINGLE)} MiB); CPU, tasks and files as in (c)`,
  ];
}

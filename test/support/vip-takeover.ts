/**
 * Issue 13's VIP takeover between the two netns amphorae of an ACTIVE_STANDBY load balancer, as the e2e
 * test checks it and the lifecycle bench times it: which amphora holds the VIP, the four faults of the
 * MASTER (HAProxy killed, keepalived's VRRP child killed, VIP-network link cut, the whole amphora killed),
 * and the interruption a client opening a new connection every 20 ms sees.
 */
import { readFileSync } from 'node:fs';
import { amphoraNamespace, ip, netnsPids } from '../../src/linux-net/ip.js';
import { eventually, httpGet } from './amphora-fixtures.js';

/** How often the client opens a connection, and how long it waits for an answer. */
export const PROBE_EVERY_MS = 20;
export const PROBE_TIMEOUT_MS = 500;
/** Longest wait for the VIP to answer again after a fault. */
const RECOVERY_BOUND_MS = 20_000;

/** The VIP-network interface of an amphora. */
const VIP_INTERFACE = 'eth1';

export interface Fault {
  /** How the figures name it. */
  name: string;
  inject(namespace: string): Promise<void>;
  /** Undoes what the amphora cannot repair itself (the cut link); the others heal without help. */
  repair?(namespace: string): Promise<void>;
}

export const FAULTS = {
  haproxy: {
    name: "MASTER's HAProxy killed",
    inject: async (ns) => {
      for (const pid of processesIn(ns, 'haproxy')) process.kill(pid, 'SIGKILL');
    },
  },
  vrrpChild: {
    name: "MASTER's keepalived VRRP child killed",
    inject: async (ns) => {
      const keepalived = processesIn(ns, 'keepalived');
      const child = keepalived.find((pid) => keepalived.includes(Number(readStatus(pid, 'PPid'))));
      if (!child) throw new Error(`no VRRP child among the keepalived processes ${keepalived.join(', ') || '(none)'} of ${ns}`);
      process.kill(child, 'SIGKILL');
    },
  },
  link: {
    name: "MASTER's VIP-network link cut",
    inject: (ns) => ip('-n', ns, 'link', 'set', VIP_INTERFACE, 'down').then(() => undefined),
    repair: (ns) => ip('-n', ns, 'link', 'set', VIP_INTERFACE, 'up').then(() => undefined),
  },
  amphora: {
    name: 'MASTER amphora killed',
    inject: async (ns) => {
      for (const pid of netnsPids(ns)) process.kill(pid, 'SIGKILL');
    },
  },
} satisfies Record<string, Fault>;

export async function holdsVip(fabric: string, amphoraId: string, vip: string): Promise<boolean> {
  return (await ip('-n', amphoraNamespace(fabric, amphoraId), '-o', '-4', 'address', 'show').catch(() => '')).includes(`inet ${vip}/`);
}

export interface VipPair {
  active: string;
  standby: string;
}

/**
 * Waits until the load balancer has two amphorae in service (`inService`, their ids), exactly one holding
 * the VIP, `settled` says it is ACTIVE and the VIP answers; resolves with the one holding it and the other.
 */
export async function convergedPair(
  o: { fabric: string; vip: string; port: number; inService: () => Promise<string[]>; settled: () => Promise<boolean> },
  timeoutMs: number,
  pollMs: number,
): Promise<VipPair> {
  const pair = await eventually(
    async () => {
      const pair = await o.inService();
      if (pair.length !== 2) return undefined;
      const holding: string[] = [];
      for (const id of pair) if (await holdsVip(o.fabric, id, o.vip)) holding.push(id);
      if (holding.length !== 1 || !(await o.settled()) || (await httpGet(o.vip, o.port)).status !== 200) return undefined;
      return { active: holding[0]!, standby: pair.find((id) => id !== holding[0])! };
    },
    'two amphorae in service, one holding the VIP',
    timeoutMs,
    pollMs,
  );
  return pair!;
}

interface Outcome {
  at: number;
  ok: boolean;
}

/** Opens a new connection every PROBE_EVERY_MS (each given PROBE_TIMEOUT_MS to answer) until `enough` says so, at most `boundMs`. */
async function probe(vip: string, port: number, enough: (outcomes: readonly Outcome[], now: number) => boolean, boundMs = RECOVERY_BOUND_MS): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  const pending: Array<Promise<void>> = [];
  const start = Date.now();
  while (Date.now() - start < boundMs) {
    const at = Date.now();
    pending.push(httpGet(vip, port, '/', PROBE_TIMEOUT_MS).then((r) => void outcomes.push({ at, ok: r.status === 200 })));
    if (enough(outcomes, at)) break;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, PROBE_EVERY_MS - (Date.now() - at))));
  }
  await Promise.all(pending);
  return outcomes.sort((a, b) => a.at - b.at);
}

const lastFailureOf = (outcomes: readonly Outcome[]) => {
  const failures = outcomes.filter((o) => !o.ok);
  return failures.length ? Math.max(...failures.map((o) => o.at)) : null;
};

/** The span from the first failed connection to the first that succeeded after the last failed one, 0 when none failed. */
function gap(vip: string, port: number, outcomes: readonly Outcome[]): number {
  const firstFailure = outcomes.find((o) => !o.ok);
  if (!firstFailure) return 0;
  const lastFailure = lastFailureOf(outcomes)!;
  const recovered = outcomes.find((o) => o.ok && o.at > lastFailure);
  if (!recovered) throw new Error(`the VIP ${vip}:${port} did not answer again within ${RECOVERY_BOUND_MS / 1000} s (${outcomes.length} connections)`);
  return recovered.at - firstFailure.at;
}

/**
 * The interruption `fault()` causes, probing from it on until the VIP has answered for a second after the
 * last failure (3 s when nothing failed): see gap().
 */
export async function interruption(vip: string, port: number, fault: () => Promise<void>): Promise<number> {
  const start = Date.now();
  await fault();
  const outcomes = await probe(vip, port, (seen, now) => {
    const lastFailure = lastFailureOf(seen);
    return lastFailure === null ? now - start > 3_000 : now - lastFailure > 1_000 + PROBE_TIMEOUT_MS;
  });
  return gap(vip, port, outcomes);
}

/** Connections opened while `action` runs (at most `boundMs`) and for a second after it: how many, how many failed, and the interruption. */
export async function failuresDuring(vip: string, port: number, action: () => Promise<void>, boundMs: number): Promise<{ connections: number; failed: number; interruptionMs: number }> {
  let doneAt: number | null = null;
  let failure: unknown;
  const running = action().then(
    () => void (doneAt = Date.now()),
    (e: unknown) => void ((failure = e), (doneAt = Date.now())),
  );
  const outcomes = await probe(vip, port, (_, now) => doneAt !== null && now - doneAt > 1_000, boundMs);
  await running;
  if (failure) throw failure;
  return { connections: outcomes.length, failed: outcomes.filter((o) => !o.ok).length, interruptionMs: gap(vip, port, outcomes) };
}

function processesIn(ns: string, comm: string): number[] {
  return netnsPids(ns).filter((pid) => readStatus(pid, 'Name') === comm);
}

function readStatus(pid: number, field: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`^${field}:\\s+(\\S+)`, 'm'))?.[1];
  } catch {
    return undefined; // exited meanwhile
  }
}

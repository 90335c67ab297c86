/**
 * Issue 13's VIP takeover between the two netns amphorae of an ACTIVE_STANDBY load balancer, as the e2e
 * test checks it and the lifecycle bench times it: which amphora holds the VIP, the four faults of the
 * MASTER (HAProxy killed, keepalived's VRRP child killed, VIP-network link cut, the whole amphora killed),
 * and the interruption a client opening a new connection every 20 ms sees (src/cli/baseline/interruption.ts).
 */
import { readFileSync } from 'node:fs';
import { amphoraNamespace, ip, netnsPids } from '../../src/linux-net/ip.js';
import { httpGet } from '../../src/cli/baseline/interruption.js';
import { eventually } from './amphora-fixtures.js';

export { failuresDuring, interruption, PROBE_EVERY_MS, PROBE_TIMEOUT_MS } from '../../src/cli/baseline/interruption.js';

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

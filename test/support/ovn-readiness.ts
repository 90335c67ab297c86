/**
 * When traffic through an OVN load balancer means something: every health-checked backend's
 * Service_Monitor row says what we expect, the logical flows balance to exactly the expected
 * backends, and the chassis has those flows (`--wait=hv sync`). Without this gate the first
 * connections after programming may be lost (../shared/reference/ovn.md §B.6 item 5).
 */
import assert from 'node:assert/strict';
import type { OvnSandbox } from './ovn-sandbox.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const POLL_MS = 100;

/** The `status` of the Service_Monitor rows probing ip:port ('' while unprobed, several lines if several rows). */
export function monitorStatus(sb: OvnSandbox, ip: string, port: number): Promise<string> {
  return sb.sbctl('--bare', '--columns=status', 'find', 'Service_Monitor', `ip=${ip}`, `port=${port}`);
}

/** Waits until the Service_Monitor of ip:port reports `want`, then until the chassis has the resulting flows. */
export async function waitMonitor(sb: OvnSandbox, ip: string, port: number, want: 'online' | 'offline', timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let seen = '';
  while ((seen = await monitorStatus(sb, ip, port)) !== want) {
    if (Date.now() > deadline) assert.fail(`Service_Monitor ${ip}:${port} is '${seen}', not '${want}', after ${timeoutMs} ms`);
    await sleep(POLL_MS);
  }
  await sb.nbctl('--wait=hv', 'sync');
}

/** The backend lists of the logical flows balancing to `port`, each sorted. */
async function flowBackends(sb: OvnSandbox, port: number): Promise<string[]> {
  const actions = await sb.sbctl('--bare', '--columns=actions', 'list', 'Logical_Flow');
  return [...actions.matchAll(/ct_lb_mark\(backends=([^;)]*)/g)].map((m) => m[1]!.split(',').sort().join(',')).filter((b) => b.includes(`:${port}`));
}

/**
 * Waits until every logical flow balancing to `port` lists exactly `want` as backends (northd
 * has applied the monitors' status and the NB vips), then until the chassis has those flows.
 */
export async function waitBackends(sb: OvnSandbox, port: number, want: readonly string[], timeoutMs = 15_000): Promise<void> {
  const expected = want.map((ip) => `${ip}:${port}`).sort().join(',');
  const deadline = Date.now() + timeoutMs;
  let seen: string[] = [];
  while (!((seen = await flowBackends(sb, port)).length > 0 && seen.every((b) => b === expected))) {
    if (Date.now() > deadline) assert.fail(`logical flows balance to [${seen.join(' | ')}], not ${expected}, after ${timeoutMs} ms`);
    await sleep(POLL_MS);
  }
  await sb.nbctl('--wait=hv', 'sync');
}

/**
 * The two load balancers the amphora data-plane benches compare — the amphora `ostia up` builds and the
 * hand-written HAProxy beside it — and what the benches read from them: the load balancer reaching ACTIVE,
 * the amphora's directory and rendered config, its agent's fallbacks to a reload, and the HAProxy settings
 * the hand-written baseline must share with the amphora for the comparison to be of configs alone.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { HaproxyRuntime } from '../../src/amphora-agent/haproxy/runtime.js';
import type { HandHaproxy } from './hand-haproxy.js';
import { waitSettled, type ApiClient } from './lifecycle-api.js';
import { haproxyPidsUnder } from './processes.js';

/** Between two GETs of a resource the bench waits for. */
export const API_POLL_MS = 20;
/** What the agent logs (src/amphora-agent/apply.ts) when a change falls back to a reload. */
const AGENT_RELOAD_FALLBACK = 'runtime update incomplete, reloading instead:';

/** Either load balancer: where it listens, and its HAProxy. */
export interface HaproxyTarget {
  readonly label: string;
  readonly address: string;
  readonly port: number;
  readonly runtime: HaproxyRuntime;
  /** The master and its workers (old workers finishing after a reload included). */
  haproxyPids(): number[];
}

export interface AmphoraTarget extends HaproxyTarget {
  /** The amphora's directory: its haproxy.cfg, stats socket and agent.log. */
  readonly dir: string;
  /** Its haproxy.cfg as the agent rendered it for the load balancer. */
  readonly config: string;
}

export interface HandTarget extends HaproxyTarget {
  readonly haproxy: HandHaproxy;
}

/** Polls the load balancer until it leaves PENDING_*; anything but ACTIVE then is a failure. */
export async function waitLbActive(api: ApiClient, id: string, timeoutMs: number): Promise<void> {
  const lb = await waitSettled(api, id, API_POLL_MS, timeoutMs);
  if (lb.provisioning_status !== 'ACTIVE') throw new Error(`load balancer ${id} went to ${lb.provisioning_status}`);
}

/** The amphora serving `lbId` (the one whose haproxy.cfg names it), as the target listening on `address:port`. */
export function findAmphora(dataDir: string, lbId: string, address: string, port: number): AmphoraTarget {
  const root = join(dataDir, 'amphorae');
  const dirs = readdirSync(root)
    .map((d) => join(root, d))
    .filter((d) => existsSync(join(d, 'haproxy.cfg')) && readFileSync(join(d, 'haproxy.cfg'), 'utf8').includes(lbId));
  if (dirs.length !== 1) throw new Error(`expected one amphora directory serving ${lbId} under ${root}, found ${dirs.length}`);
  const dir = dirs[0]!;
  return {
    label: 'amphora',
    address,
    port,
    runtime: new HaproxyRuntime(join(dir, 'haproxy.sock')),
    haproxyPids: () => haproxyPidsUnder(dir),
    dir,
    config: readFileSync(join(dir, 'haproxy.cfg'), 'utf8'),
  };
}

export function handTarget(haproxy: HandHaproxy, address: string, port: number): HandTarget {
  return { label: 'hand-written', address, port, runtime: haproxy.runtime, haproxyPids: () => haproxy.pids(), haproxy };
}

/**
 * The changes the amphora's agent could not make through the runtime API and reloaded for instead, since
 * `since` (epoch ms): HAProxy's reason for each, from agent.log.
 */
export function agentReloadReasons(amphora: AmphoraTarget, since: number): string[] {
  const reasons: string[] = [];
  for (const line of readFileSync(join(amphora.dir, 'agent.log'), 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    const entry = JSON.parse(line) as { time?: number; msg?: string };
    if ((entry.time ?? 0) >= since && entry.msg?.startsWith(AGENT_RELOAD_FALLBACK)) reasons.push(entry.msg.slice(AGENT_RELOAD_FALLBACK.length).trim());
  }
  return reasons;
}

export interface HaproxySettings {
  version: string;
  nbthread: number;
  maxconn: number;
}

/** As the running HAProxy reports them (`show info`). */
export async function haproxySettings(t: HaproxyTarget): Promise<HaproxySettings> {
  const info = await t.runtime.showInfo();
  return { version: info.Version!, nbthread: Number(info.Nbthread), maxconn: Number(info.Maxconn) };
}

/** Refuses a hand-written HAProxy whose binary or limits differ from the amphora's. */
export async function assertSameHaproxy(hand: HaproxyTarget, amphora: HaproxySettings): Promise<void> {
  const h = await haproxySettings(hand);
  if (h.nbthread !== amphora.nbthread || h.maxconn !== amphora.maxconn || h.version !== amphora.version)
    throw new Error(`the hand-written HAProxy runs nbthread ${h.nbthread}, maxconn ${h.maxconn}, ${h.version}; the amphora's ${amphora.nbthread}, ${amphora.maxconn}, ${amphora.version}`);
}

/**
 * The amphora's UDP listeners: the nftables table of ./nft-script.ts, kept in step with the
 * applied config and with the health checks of ./health-checks.ts.
 *
 * A config whose rules are those applied already (only members changed) and every change of a
 * member's health replace map elements in one `nft -f` transaction: 'runtime', as HAProxy's
 * member changes are. Anything else replaces the whole table in one transaction: 'reload'.
 * A config with no UDP listener never runs nft (an amphora without CAP_NET_ADMIN, under the
 * local compute driver, never gets one: the provider refuses UDP there).
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import type { AmphoraConfig, PoolConfig } from '../../domain/amphora-config.js';
import { backendName } from '../haproxy/names.js';
import type { StatusSnapshot } from '../heartbeat.js';
import { checksOf, HealthChecks } from './health-checks.js';
import { counterName, DELETE_TABLE, elementsScript, rulesScript, servingMembers, TABLE, udpListeners } from './nft-script.js';

export type UdpApplied = 'reload' | 'runtime' | 'unchanged';

/** `nft` with `args`, `script` on its standard input; rejects with nft's own words. */
export function nft(args: readonly string[], script = ''): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile('nft', [...args], { timeout: 10_000, maxBuffer: 16 * 1024 * 1024 }, (e, stdout, stderr) =>
      e ? reject(new Error(`nft ${args.join(' ')} failed: ${stderr.trim() || e.message}`)) : resolve(stdout),
    );
    child.stdin?.end(script);
  });
}

export class UdpBalancer {
  private config: AmphoraConfig | null = null;
  /** The rules in the table now ('' = no table of ours). */
  private rules = '';
  private readonly checks: HealthChecks;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly log: Pick<Console, 'info' | 'warn'>) {
    this.checks = new HealthChecks({ onChange: () => void this.serialized(() => this.refreshElements()), log });
  }

  /** Throws a RenderError when `config` cannot be served, before anything changes. */
  check(config: AmphoraConfig): void {
    rulesScript(config);
    elementsScript(config, new Map());
    checksOf(uniquePools(config));
  }

  /** Makes the table serve `config` (see the module comment). */
  apply(config: AmphoraConfig): Promise<UdpApplied> {
    return this.serialized(async () => {
      const rules = rulesScript(config);
      const pools = uniquePools(config);
      const how: UdpApplied = rules === '' && this.rules === '' ? 'unchanged' : rules === this.rules ? 'runtime' : 'reload';
      if (how === 'reload' && rules !== '') requireForwarding(config);
      this.checks.update(pools);
      if (how !== 'unchanged') await nft(['-f', '-'], rules === '' ? DELETE_TABLE : (how === 'reload' ? rules : '') + elementsScript(config, this.checks.health()));
      this.config = config;
      this.rules = rules;
      return how;
    });
  }

  /** Member, pool and listener statuses in the heartbeat's terms, with each listener's flow count. */
  async status(): Promise<StatusSnapshot> {
    const snapshot: StatusSnapshot = { listeners: {}, pools: {} };
    const config = this.config;
    if (!config || this.rules === '') return snapshot;
    const flows = await this.flowCounts();
    for (const { listener, pool } of udpListeners(config)) {
      const serving = new Set(servingMembers(pool, this.checks.health()).map((m) => m.id));
      const members = Object.fromEntries(pool.members.map((m) => [m.id, this.memberStatus(m, pool)]));
      snapshot.pools[backendName(pool.id, listener.id)] = { status: serving.size > 0 ? 'UP' : 'DOWN', members };
      // Only a flow's first datagram passes the NAT hooks, so flows are what nftables counts here; bytes are not measured.
      const total = flows.get(counterName(listener.id)) ?? 0;
      snapshot.listeners[listener.id] = { status: 'OPEN', stats: { bytesIn: 0, bytesOut: 0, activeConnections: 0, totalConnections: total, requestErrors: 0 } };
    }
    return snapshot;
  }

  stop(): void {
    this.checks.stop();
  }

  private memberStatus(m: PoolConfig['members'][number], pool: PoolConfig): string {
    if (!m.enabled) return 'MAINT';
    const state = this.checks.state(m.id);
    if (state === 'down') return 'DOWN';
    if (m.weight === 0) return 'DRAIN';
    return pool.monitor?.enabled ? 'UP' : 'no check';
  }

  private async flowCounts(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    const listed = JSON.parse(await nft(['-j', 'list', 'counters', 'table', 'inet', TABLE])) as { nftables: Array<{ counter?: { name: string; packets: number } }> };
    for (const item of listed.nftables) if (item.counter) out.set(item.counter.name, item.counter.packets);
    return out;
  }

  private async refreshElements(): Promise<void> {
    if (!this.config || this.rules === '') return;
    await nft(['-f', '-'], elementsScript(this.config, this.checks.health())).catch((e: Error) => this.log.warn(`UDP members not updated after a health change: ${e.message}`));
  }

  private serialized<T>(task: () => Promise<T>): Promise<T> {
    const next = this.queue.then(task, task);
    this.queue = next.catch(() => undefined);
    return next;
  }
}

const FORWARDING = { 4: '/proc/sys/net/ipv4/ip_forward', 6: '/proc/sys/net/ipv6/conf/all/forwarding' } as const;

/**
 * DNAT to members forwards datagrams, and a new network namespace forwards nothing: the switch is
 * turned on if it is off and the agent may, and otherwise the push fails saying who must.
 */
function requireForwarding(config: AmphoraConfig): void {
  const families = new Set(udpListeners(config).flatMap(({ vips }) => ([4, 6] as const).filter((f) => vips[f].length > 0)));
  for (const family of families) {
    const file = FORWARDING[family];
    if (readFileSync(file, 'utf8').trim() === '1') continue;
    try {
      writeFileSync(file, '1');
    } catch (e) {
      throw new Error(`IPv${family} forwarding is off in the amphora's network namespace and the agent cannot turn it on (${(e as NodeJS.ErrnoException).code}): the compute driver must set ${file.slice('/proc/sys/'.length).replaceAll('/', '.')}=1 when it builds the namespace`);
    }
  }
}

function uniquePools(config: AmphoraConfig): PoolConfig[] {
  return [...new Map(udpListeners(config).map(({ pool }) => [pool.id, pool])).values()];
}

/**
 * The OVN bench's system under test: a sandbox OVN (NB/SB ovsdb-server, northd, OVS userspace,
 * ovn-controller; no hosts) with the lab's switches and router, and an in-process Ostia (API and
 * worker, SQLite file in a temp dir, default worker settings) whose ovn provider writes into it.
 * Load balancers are created through the API (inject) and watched settle by one shared poller.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../../src/config.js';
import type { Northbound } from '../../src/providers/ovn/northbound.js';
import { startHarness, type Harness } from '../../test/support/harness.js';
import { addLabTopology, graphBody, ovnConfig, PUBLIC_SUBNET } from '../../test/support/ovn-lab.js';
import { startOvnSandbox, type OvnSandbox } from '../../test/support/ovn-sandbox.js';
import { sleep } from './poll.js';

/**
 * The lab's public subnet is a /24 (151 VIPs); the scale runs need 10,000. Same network and
 * switch, a /16 of its own (the router's port keeps its /24: nothing here sends traffic).
 */
const BENCH_PUBLIC_CIDR = '10.128.0.0/16';
const BENCH_PUBLIC_POOL = { start: '10.128.0.10', end: '10.128.255.250' };

/** How often the settle watcher reads the statuses: the resolution of the create → ACTIVE figures. */
export const SETTLE_POLL_MS = 5;

export type Provider = 'ovn' | 'noop';

/**
 * Resolves each watched load balancer's wait when its provisioning_status leaves PENDING_*,
 * with performance.now() of the poll that saw it. One query per poll for everything in flight,
 * so that watching 16 costs what watching one does.
 */
class SettleWatcher {
  private readonly waiting = new Map<string, { resolve: (v: { status: string; at: number }) => void; reject: (e: Error) => void; deadline: number }>();
  private running = false;

  constructor(private readonly h: Harness) {}

  watch(id: string, timeoutMs: number): Promise<{ status: string; at: number }> {
    const p = new Promise<{ status: string; at: number }>((resolve, reject) => this.waiting.set(id, { resolve, reject, deadline: performance.now() + timeoutMs }));
    if (!this.running) void this.loop();
    return p;
  }

  private async loop(): Promise<void> {
    this.running = true;
    try {
      while (this.waiting.size) {
        const ids = [...this.waiting.keys()];
        const rows = await this.h.runtime.db.kysely.selectFrom('load_balancer').select(['id', 'provisioning_status']).where('id', 'in', ids).execute();
        const at = performance.now();
        const status = new Map(rows.map((r) => [r.id, r.provisioning_status]));
        for (const id of ids) {
          const w = this.waiting.get(id)!;
          // A deleted load balancer's row is gone.
          const s = status.get(id) ?? 'DELETED';
          if (!s.startsWith('PENDING_')) {
            this.waiting.delete(id);
            w.resolve({ status: s, at });
          } else if (at > w.deadline) {
            this.waiting.delete(id);
            w.reject(new Error(`load balancer ${id} still ${s} after its deadline`));
          }
        }
        await sleep(SETTLE_POLL_MS);
      }
    } catch (e) {
      for (const w of this.waiting.values()) w.reject(e as Error);
      this.waiting.clear();
    } finally {
      this.running = false;
    }
  }
}

export interface CreateTiming {
  id: string;
  /** POST answered (inject: API handling only, no socket). */
  postMs: number;
  /** POST sent → provisioning_status ACTIVE seen. */
  activeMs: number;
}

export interface OvnRig {
  sb: OvnSandbox;
  h: Harness;
  nb: Northbound;
  create(name: string, provider: Provider, timeoutMs: number): Promise<CreateTiming>;
  /** Cascade delete, resolved when the row is gone. */
  remove(id: string, timeoutMs: number): Promise<void>;
  /** Bytes of the NB database file (ovsdb-server's append-only log until it compacts). */
  nbFileBytes(): number;
  close(): Promise<void>;
}

export async function startOvnRig(): Promise<OvnRig> {
  const sb = await startOvnSandbox();
  const dir = mkdtempSync(join(tmpdir(), 'ostia-bench-ovn-'));
  let h: Harness | undefined;
  try {
    await addLabTopology(sb);
    const config = ovnConfig(sb) as { network: { networks: Array<{ subnets: Array<Record<string, unknown>> }> } };
    const publicSubnet = config.network.networks.flatMap((n) => n.subnets).find((s) => s.id === PUBLIC_SUBNET)!;
    Object.assign(publicSubnet, { cidr: BENCH_PUBLIC_CIDR, gateway_ip: null, allocation_pools: [BENCH_PUBLIC_POOL] });
    // The harness tunes the worker for tests; the bench measures the shipped defaults.
    h = await startHarness({ ...config, database: { url: `sqlite:${join(dir, 'ostia.db')}` }, worker: defaultConfig('').worker });
    // Opens the NB connection and its monitor now, not inside the first timed create.
    const { nb } = await h.runtime.ovn();
    const harness = h;
    const watcher = new SettleWatcher(harness);
    return {
      sb,
      h: harness,
      nb,
      async create(name, provider, timeoutMs) {
        const t0 = performance.now();
        const res = await harness.request('POST', '/v2/lbaas/loadbalancers', { body: graphBody(name, provider) });
        const postMs = performance.now() - t0;
        if (res.statusCode !== 201) throw new Error(`POST load balancer ${name}: HTTP ${res.statusCode} ${res.body.slice(0, 300)}`);
        const id = (res.json() as { loadbalancer: { id: string } }).loadbalancer.id;
        const { status, at } = await watcher.watch(id, timeoutMs);
        if (status !== 'ACTIVE') {
          const lb = await harness.runtime.db.kysely.selectFrom('load_balancer').select('status_reason').where('id', '=', id).executeTakeFirst();
          throw new Error(`load balancer ${id} (${provider}) went to ${status}: ${lb?.status_reason ?? 'no reason recorded'}`);
        }
        return { id, postMs, activeMs: at - t0 };
      },
      async remove(id, timeoutMs) {
        const res = await harness.request('DELETE', `/v2/lbaas/loadbalancers/${id}?cascade=true`);
        if (res.statusCode !== 204) throw new Error(`DELETE load balancer ${id}: HTTP ${res.statusCode} ${res.body.slice(0, 300)}`);
        const { status } = await watcher.watch(id, timeoutMs);
        if (status !== 'DELETED') throw new Error(`load balancer ${id}: delete ended ${status}`);
      },
      nbFileBytes: () => statSync(join(sb.runDir, 'nb.db')).size,
      async close() {
        try {
          await harness.close();
        } finally {
          rmSync(dir, { recursive: true, force: true });
          await sb.close();
        }
      },
    };
  } catch (e) {
    await h?.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    await sb.close().catch(() => undefined);
    throw e;
  }
}

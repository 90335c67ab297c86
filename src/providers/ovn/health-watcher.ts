/**
 * Member health of ovn load balancers, from the Southbound `Service_Monitor` rows that
 * ovn-controller keeps (../shared/reference/ovn.md §A.6). The watcher monitors that table and,
 * for each burst of changes, finds the probed members they concern — same address (IPv6
 * compared normalised), port and protocol, in a pool of an ovn load balancer with a monitor OVN
 * runs — then derives and writes the statuses of those load balancers in one transaction.
 *
 * A `Service_Monitor` row names the backend by ip, port, protocol and logical port; Ostia does
 * not record members' logical ports, so two members with the same address and port on different
 * networks share their rows' verdict, the worst one.
 */
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { Db } from '../../db/database.js';
import { loadTrees, writeStatusChanges, type StatusChange } from '../../operating-status/derivation.js';
import type { Monitor, OvsdbClient, Row, RowChange } from '../../ovn/ovsdb/index.js';
import { SB_DB } from '../../ovn/connection.js';
import { findProbedMembers, healthFacts, loadProbedMembers, memberKey, ovnStatusChanges, rowKey, verdictsOf, SERVICE_MONITOR, type ProbedMember, type ServiceMonitorStatus } from './statuses.js';

const { table: TABLE, columns: COLUMNS } = SERVICE_MONITOR;

export interface OvnHealthWatcherOptions {
  db: Db;
  /** A connected Southbound client; the watcher neither opens nor closes it. */
  sb: OvsdbClient;
  log: Logger;
  /** How long a burst of changes is gathered before one pass over them. */
  batchMs?: number;
  /** How long after a failed pass it is tried again. */
  retryMs?: number;
}

/** Backends changed since the last pass (key → port), or every backend. */
type Touched = Map<string, number> | 'all';

/**
 * Events: 'applied' (StatusChange[], ids of the load balancers whose members changed) after every
 * pass, 'failed' (Error) when a pass failed and will be retried.
 */
export class OvnHealthWatcher extends EventEmitter {
  private monitor: Monitor | undefined;
  /** Backends changed since the last pass; all of them at start and after a resync. */
  private touched: Touched = new Map();
  private timer: NodeJS.Timeout | undefined;
  private passing: Promise<boolean> | undefined;
  private closed = false;
  private readonly batchMs: number;
  private readonly retryMs: number;
  private readonly onChange = (c: RowChange) => this.touch([c.old, c.row]);
  private readonly onResync = () => this.touchAll();

  constructor(private readonly opts: OvnHealthWatcherOptions) {
    super();
    this.batchMs = opts.batchMs ?? 50;
    this.retryMs = opts.retryMs ?? 1000;
  }

  /**
   * Monitors `Service_Monitor` and applies what its rows say now; resolves after that first pass
   * (if it fails, it is logged, 'failed' is emitted and it is retried). Throws if the monitor
   * cannot be set up (e.g. the Southbound database is unreachable).
   */
  async start(): Promise<void> {
    const m = await this.opts.sb.monitor(SB_DB, { [TABLE]: { columns: COLUMNS } });
    if (this.closed) return this.opts.sb.cancelMonitor(m);
    this.monitor = m;
    m.on('change', this.onChange);
    m.on('resync', this.onResync);
    this.touched = 'all';
    await this.pass();
  }

  /** Stops watching; a pass under way finishes first. The Southbound client stays open. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    const m = this.monitor;
    this.monitor = undefined;
    m?.off('change', this.onChange);
    m?.off('resync', this.onResync);
    await this.passing;
    if (m) await this.opts.sb.cancelMonitor(m).catch((err: Error) => this.opts.log.warn({ err }, 'cancelling the Service_Monitor monitor failed'));
  }

  private touch(rows: Array<Row | undefined>): void {
    if (this.touched !== 'all') {
      for (const row of rows) {
        const key = row && rowKey(row);
        if (key) this.touched.set(key, row.port as number);
      }
    }
    this.schedule(this.batchMs);
  }

  private touchAll(): void {
    this.touched = 'all';
    this.schedule(this.batchMs);
  }

  private schedule(delayMs: number): void {
    if (this.closed || this.timer || this.passing) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.pass();
    }, delayMs);
  }

  private async pass(): Promise<void> {
    const touched = this.touched;
    this.touched = new Map();
    this.passing = this.applyAndReport(touched);
    const applied = await this.passing;
    this.passing = undefined;
    if (!applied) this.schedule(this.retryMs);
    else if (this.hasWork()) this.schedule(this.batchMs);
  }

  private hasWork(): boolean {
    return this.touched === 'all' || this.touched.size > 0;
  }

  /** False when the pass failed: its backends are touched again, for the retry. */
  private async applyAndReport(touched: Touched): Promise<boolean> {
    try {
      const { changes, loadBalancers } = touched === 'all' || touched.size ? await this.apply(touched) : { changes: [], loadBalancers: [] };
      this.emit('applied', changes, loadBalancers);
      return true;
    } catch (err) {
      this.touched = touched === 'all' || this.touched === 'all' ? 'all' : new Map([...touched, ...this.touched]);
      this.opts.log.error({ err }, 'applying OVN Service_Monitor statuses failed; retrying');
      this.emit('failed', err);
      return false;
    }
  }

  /** One transaction: the touched backends' load balancers, their trees, their new statuses. */
  private apply(touched: Touched): Promise<{ changes: StatusChange[]; loadBalancers: string[] }> {
    return this.opts.db.kysely.transaction().execute(async (trx) => {
      const ports = touched === 'all' ? undefined : [...new Set(touched.values())];
      const candidates = await findProbedMembers(trx, ports);
      const lbIds = [...new Set(candidates.filter((m) => touched === 'all' || touched.has(memberKey(m) ?? '')).map((m) => m.loadBalancerId))];
      const [members, trees] = await Promise.all([loadProbedMembers(trx, lbIds), loadTrees(trx, lbIds)]);
      const verdicts = this.verdicts(touched === 'all' ? undefined : new Set(members.map((m) => m.port)));
      const byLb = new Map<string, ProbedMember[]>();
      for (const m of members) {
        const list = byLb.get(m.loadBalancerId) ?? [];
        list.push(m);
        byLb.set(m.loadBalancerId, list);
      }
      const changes: StatusChange[] = [];
      const loadBalancers: string[] = [];
      for (const [lbId, tree] of trees) {
        const facts = healthFacts(byLb.get(lbId) ?? [], (m) => verdicts.get(memberKey(m) ?? ''));
        const lbChanges = ovnStatusChanges(tree, facts);
        if (lbChanges.some((c) => c.table === 'member')) loadBalancers.push(lbId);
        changes.push(...lbChanges);
      }
      await writeStatusChanges(trx, changes);
      if (changes.length) this.opts.log.info({ changes: changes.length, loadBalancers: lbIds.length }, 'OVN member health applied');
      return { changes, loadBalancers };
    });
  }

  /** Backend key → the verdict of its `Service_Monitor` rows (on `ports`, or all), as cached now. */
  private verdicts(ports?: ReadonlySet<number>): Map<string, ServiceMonitorStatus> {
    const rows = this.monitor?.rows(TABLE) ?? [];
    return verdictsOf(ports ? rows.filter((r) => ports.has(r.port as number)) : rows);
  }

}

/**
 * The orphan reaper: what outlived its amphora row. Compute instances and management ports
 * no live amphora row claims are deleted or released; DELETED rows are removed after a retention period (so `openstack
 * loadbalancer amphora list` history and failover traces can still name them for a while);
 * statistics of gone listeners are removed, and gone amphorae stop counting connections.
 */
import type { Logger } from 'pino';
import type { Db } from '../../../db/database.js';
import type { ComputeDriver } from '../../../compute/compute-driver.js';
import type { NetworkDriver } from '../../../network/network-driver.js';
import { MANAGEMENT_DEVICE_OWNER } from '../../../network/management-ports.js';
import { timestamp } from '../../../domain/time.js';

export interface OrphanReaperDeps {
  db: Db;
  compute: ComputeDriver;
  network: NetworkDriver;
  log: Logger;
  now?: () => number;
}

export interface ReapOutcome {
  computeDeleted: string[];
  /** Amphora ids whose management address was released. */
  portsReleased: string[];
  rowsRemoved: string[];
}

/** DELETED amphora rows are kept this long. */
export const DELETED_RETENTION_MS = 60 * 60_000;

export class OrphanReaper {
  /**
   * Instances and ports found unclaimed on the previous run. One is reaped only when it is
   * unclaimed twice in a row, so a flow that boots (or allocates) first and records its
   * amphora a moment later is never raced.
   */
  private suspects = new Set<string>();
  private suspectPorts = new Set<string>();
  private readonly now: () => number;

  constructor(private readonly deps: OrphanReaperDeps) {
    this.now = deps.now ?? Date.now;
  }

  async run(): Promise<ReapOutcome> {
    const computeDeleted = await this.reapCompute();
    const portsReleased = await this.releasePorts();
    const rowsRemoved = await this.removeDeletedRows();
    await this.tidyStatistics();
    return { computeDeleted, portsReleased, rowsRemoved };
  }

  private async reapCompute(): Promise<string[]> {
    const { db, compute, log } = this.deps;
    const instances = await compute.list();
    const rows = instances.length
      ? await db.kysely.selectFrom('amphora').select(['id', 'compute_id']).where('id', 'in', instances.map((i) => i.amphoraId)).where('status', '!=', 'DELETED').execute()
      : [];
    const claimed = new Map(rows.map((r) => [r.id, r.compute_id]));
    const unclaimed = instances.filter((i) => {
      if (!claimed.has(i.amphoraId)) return true;
      const computeId = claimed.get(i.amphoraId);
      return computeId !== null && computeId !== i.computeId;
    });
    const deleted: string[] = [];
    for (const { computeId, amphoraId } of unclaimed.filter((i) => this.suspects.has(i.computeId))) {
      try {
        await compute.delete(computeId);
        deleted.push(computeId);
        log.warn({ computeId, amphora: amphoraId }, 'deleted a compute instance no live amphora claims');
      } catch (err) {
        log.error({ err, computeId }, 'deleting an orphaned compute instance failed; retrying on the next run');
      }
    }
    this.suspects = new Set(unclaimed.map((i) => i.computeId).filter((id) => !deleted.includes(id)));
    return deleted;
  }

  private async releasePorts(): Promise<string[]> {
    const { db, network } = this.deps;
    const unclaimed = await db.kysely
      .selectFrom('port')
      .select('device_id')
      .where('device_owner', '=', MANAGEMENT_DEVICE_OWNER)
      .where(({ not, exists, selectFrom }) =>
        not(exists(selectFrom('amphora').select('amphora.id').whereRef('amphora.id', '=', 'port.device_id').where('amphora.status', '!=', 'DELETED'))),
      )
      .execute();
    const released = unclaimed.map((p) => p.device_id).filter((id) => this.suspectPorts.has(id));
    for (const amphoraId of released) await network.releaseManagementAddress(db.kysely, amphoraId);
    this.suspectPorts = new Set(unclaimed.map((p) => p.device_id).filter((id) => !released.includes(id)));
    return released;
  }

  private async removeDeletedRows(): Promise<string[]> {
    const cutoff = timestamp(new Date(this.now() - DELETED_RETENTION_MS));
    const db = this.deps.db.kysely;
    const doomed = await db
      .selectFrom('amphora')
      .select('id')
      .where('status', '=', 'DELETED')
      .where((eb) => eb(eb.fn.coalesce('updated_at', 'created_at'), '<', cutoff))
      .execute();
    const ids = doomed.map((r) => r.id);
    if (ids.length) await db.deleteFrom('amphora').where('id', 'in', ids).where('status', '=', 'DELETED').execute();
    return ids;
  }

  /** Counters stay (listener totals include failed-over amphorae); current connections of gone amphorae do not. */
  private async tidyStatistics(): Promise<void> {
    const db = this.deps.db.kysely;
    await db.deleteFrom('listener_statistics').where(({ not, exists, selectFrom }) => not(exists(selectFrom('listener').select('listener.id').whereRef('listener.id', '=', 'listener_statistics.listener_id')))).execute();
    await db
      .updateTable('listener_statistics')
      .set({ active_connections: 0 })
      .where('active_connections', '!=', 0)
      .where(({ not, exists, selectFrom }) =>
        not(exists(selectFrom('amphora').select('amphora.id').whereRef('amphora.id', '=', 'listener_statistics.amphora_id').where('amphora.status', '!=', 'DELETED'))),
      )
      .execute();
  }
}

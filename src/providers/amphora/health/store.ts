/**
 * What a batch of accepted heartbeats changes in the database, in one transaction: each
 * amphora's last heartbeat (time, and its sequence number within its agent's boot, for
 * operators: replays are judged by the receiver, replay.ts), its return from FAILOVER_STOPPED, the
 * operating statuses of the load balancers it serves, and listener statistics.
 */
import type { Db } from '../../../db/database.js';
import { timestamp } from '../../../domain/time.js';
import type { AcceptedHeartbeat } from './receiver.js';
import { deriveStatuses, heartbeatObservation, loadTrees, writeStatusChanges, type StatusChange } from '../../../operating-status/derivation.js';
import { writeStats, type StatsRow } from './stats.js';

/** Amphorae that report for their load balancer; others (booting, being deleted) only prove they are alive. */
const SERVING = ['ALLOCATED', 'FAILOVER_STOPPED'];

export interface WriteOutcome {
  /** Amphorae whose report lacked an enabled listener: their heartbeat did not count as alive. */
  incomplete: string[];
  /** Amphorae that are not live (deleted, or never ours): their reports changed nothing. */
  unknown: string[];
}

export async function writeHeartbeats(db: Db, batch: readonly AcceptedHeartbeat[]): Promise<WriteOutcome> {
  return db.kysely.transaction().execute(async (trx) => {
    const amphorae = await trx
      .selectFrom('amphora')
      .select(['id', 'load_balancer_id', 'status', 'config_version'])
      .where('id', 'in', batch.map((b) => b.heartbeat.amphoraId))
      .where('status', '!=', 'DELETED')
      .execute();
    const byId = new Map(amphorae.map((a) => [a.id, a]));
    const serving = amphorae.filter((a) => a.load_balancer_id && SERVING.includes(a.status));
    const trees = await loadTrees(trx, [...new Set(serving.map((a) => a.load_balancer_id!))]);
    const changes: StatusChange[] = [];
    const stats: StatsRow[] = [];
    const incomplete: string[] = [];
    const unknown: string[] = [];

    for (const { heartbeat, receivedAt, stats: deltas } of batch) {
      const amp = byId.get(heartbeat.amphoraId);
      if (!amp) {
        unknown.push(heartbeat.amphoraId);
        continue;
      }
      // A heartbeat sent before its amphora applied a configuration the controller saw it apply (and
      // read here after the job settled) describes objects as they were: it proves life, no status.
      const outdated = heartbeat.configVersion < amp.config_version;
      const tree = amp.load_balancer_id && SERVING.includes(amp.status) && !outdated ? trees.get(amp.load_balancer_id) : undefined;
      const derived = tree ? deriveStatuses(tree, heartbeatObservation(heartbeat, tree.lb.config_version)) : { changes: [], listenersComplete: true };
      if (!derived.listenersComplete) incomplete.push(amp.id);
      changes.push(...derived.changes);
      const listeners = new Set(tree?.listeners.map((l) => l.id));
      for (const [listenerId, delta] of deltas) if (listeners.has(listenerId)) stats.push({ listenerId, amphoraId: amp.id, delta });

      const alive = derived.listenersComplete;
      await trx
        .updateTable('amphora')
        .set({
          last_heartbeat_seq: heartbeat.seq,
          ...(alive && { last_heartbeat_at: receivedAt }),
          // Heartbeats are back: the circuit breaker's hold is over.
          ...(alive && amp.status === 'FAILOVER_STOPPED' && { status: 'ALLOCATED', status_reason: null, updated_at: timestamp() }),
        })
        .where('id', '=', amp.id)
        .where('status', '=', amp.status)
        .execute();
    }
    await writeStatusChanges(trx, changes);
    await writeStats(trx, stats, Date.now());
    return { incomplete, unknown };
  });
}

/**
 * Spare amphorae (Octavia's spare pool): amphorae booted ahead, with no load balancer, their agent
 * serving, status READY. A create or failover adopts one instead of booting its own, which takes the
 * agent's start (most of a create's time) out of the way; housekeeping boots replacements in the
 * background up to `amphora.sparePoolSize`, and retires a spare whose processes died.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Db } from '../../db/database.js';
import { newAmphoraRow, type AmphoraRow } from '../../db/records/amphora.js';
import { timestamp } from '../../domain/time.js';
import type { AmphoraDeps } from './deps.js';
import { bootAmphora, destroyCompute, findAmphora, updateAmphora, waitForAgentOf } from './steps.js';

/** A spare's states: being booted by a housekeeper, or serving and free. */
const SPARE_STATES = ['PENDING_CREATE', 'BOOTING', 'READY'] as const;
/** …and being retired, which a round retries when a retirement failed half-way. */
const SPARE_ROWS = [...SPARE_STATES, 'PENDING_DELETE'] as const;

export interface SpareRound {
  booted: string[];
  retired: string[];
}

export interface SparePoolDeps {
  db: Db;
  log: Logger;
  amphora: AmphoraDeps;
  /** How many spares to keep (amphora.sparePoolSize). */
  size: number;
  now?: () => number;
}

export class SparePool {
  private readonly now: () => number;
  private readonly stopping = new AbortController();

  constructor(private readonly deps: SparePoolDeps) {
    this.now = deps.now ?? Date.now;
  }

  /**
   * One round: retires spares whose processes died, or whose boot was abandoned (its housekeeper died
   * mid-boot), or that exceed the size, then boots the missing ones at once.
   */
  async run(): Promise<SpareRound> {
    const { db, amphora, size } = this.deps;
    const spares = await db.kysely.selectFrom('amphora').selectAll().where('load_balancer_id', 'is', null).where('status', 'in', SPARE_ROWS).orderBy('created_at').execute();
    const abandonedBefore = timestamp(new Date(this.now() - 2 * amphora.settings.bootTimeoutMs));
    const dead: AmphoraRow[] = [];
    for (const spare of spares) {
      if (spare.status === 'PENDING_DELETE') dead.push(spare);
      else if (spare.status !== 'READY') {
        if (spare.created_at < abandonedBefore) dead.push(spare);
      } else if (!spare.compute_id || (await amphora.compute.status(spare.compute_id)) === 'stopped') dead.push(spare);
    }
    const alive = spares.filter((s) => !dead.includes(s));
    const excess = alive.filter((s) => s.status === 'READY').slice(0, Math.max(0, alive.length - size));
    const retired = await this.retire([...dead, ...excess]);
    const missing = Math.max(0, size - (alive.length - excess.length));
    const booted = (await Promise.all(Array.from({ length: missing }, () => this.bootOne()))).filter((id): id is string => id !== undefined);
    return { booted, retired };
  }

  /** Stops a round's boots: a closing housekeeper does not wait for agents to start. */
  close(): void {
    this.stopping.abort(new Error('housekeeping is stopping'));
  }

  private async bootOne(): Promise<string | undefined> {
    const { db, amphora, log } = this.deps;
    const id = randomUUID();
    await db.kysely.transaction().execute(async (trx) => {
      const address = await amphora.network.allocateManagementAddress(trx, id);
      await trx.insertInto('amphora').values(newAmphoraRow(id, address, amphora.settings.agentPort, { status: 'PENDING_CREATE' })).execute();
    });
    const ctx = { db, signal: this.stopping.signal, heartbeat: async () => {} };
    try {
      await bootAmphora(ctx, amphora, (await findAmphora(db.kysely, id))!);
      await waitForAgentOf(ctx, amphora, (await findAmphora(db.kysely, id))!);
      await db.kysely.updateTable('amphora').set({ status: 'READY', updated_at: timestamp() }).where('id', '=', id).where('status', '=', 'BOOTING').where('load_balancer_id', 'is', null).execute();
      log.info({ amphora: id }, 'spare amphora ready');
      return id;
    } catch (err) {
      if (!this.stopping.signal.aborted) log.error({ err, amphora: id }, 'booting a spare amphora failed; it is retired and another is booted on the next round');
      await this.retire([(await findAmphora(db.kysely, id))!]);
      return undefined;
    }
  }

  /**
   * Stops and forgets spares no job took: claimed first (PENDING_DELETE, only while still free, so a
   * job adopting it meanwhile keeps it), then processes and management address, then the row DELETED.
   */
  private async retire(spares: readonly AmphoraRow[]): Promise<string[]> {
    const { db, amphora, log } = this.deps;
    const retired: string[] = [];
    for (const spare of spares) {
      try {
        const claimed = await db.kysely
          .updateTable('amphora')
          .set({ status: 'PENDING_DELETE', updated_at: timestamp() })
          .where('id', '=', spare.id)
          .where('status', 'in', SPARE_ROWS)
          .where('load_balancer_id', 'is', null)
          .executeTakeFirst();
        if (claimed.numUpdatedRows !== 1n) continue;
        await destroyCompute(amphora, spare);
        await amphora.network.releaseManagementAddress(db.kysely, spare.id);
        await updateAmphora(db.kysely, spare.id, { status: 'DELETED' });
        retired.push(spare.id);
      } catch (err) {
        log.error({ err, amphora: spare.id }, 'retiring a spare amphora failed; retrying on the next round');
      }
    }
    return retired;
  }
}

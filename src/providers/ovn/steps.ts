/** The OVN provider's steps; flows.ts puts them in order and says how they ride out a Northbound outage. */
import { loadBalancerCodec } from '../../db/records/load-balancer.js';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Step, StepContext } from '../../provider-contract/flow.js';
import { setOnOffStatus, settleSuccess, treeIds } from '../../db/lb-tree.js';
import { loadTrees, writeStatusChanges } from '../../operating-status/derivation.js';
import { DisconnectedError } from '../../ovn/ovsdb/index.js';
import type { OvnDeps, OvnDepsLoader } from './deps.js';
import { plannedState, releaseHealthPorts, type PlannedState } from './state.js';
import { ovnStatusChanges } from './statuses.js';
import { recordMigration } from '../migration-record.js';

const HEARTBEAT_MS = 5_000;

/** Runs `write` once the Northbound connection is up, waiting (and heartbeating) through an outage. */
async function whenConnected<T>(ctx: StepContext, deps: OvnDeps, write: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + deps.reconnectWaitMs;
  for (;;) {
    if (deps.nb.client.connected) {
      try {
        return await write();
      } catch (e) {
        if (!(e instanceof DisconnectedError)) throw e;
      }
    }
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`the OVN Northbound database (${deps.nb.client.remotes.join(',')}) has been unreachable for ${deps.reconnectWaitMs / 1000} s; check that ovsdb-server runs and ovn.nbConnection points at it`);
    ctx.log.warn({ remotes: deps.nb.client.remotes }, 'northbound database unreachable; waiting for the reconnection');
    // One listener and one timer per round, both gone when the round ends.
    const round = new AbortController();
    const signal = AbortSignal.any([ctx.signal, round.signal]);
    await Promise.race([once(deps.nb.client, 'reconnected', { signal }), sleep(Math.min(HEARTBEAT_MS, left), undefined, { signal })]).catch(() => undefined);
    round.abort();
    ctx.signal.throwIfAborted();
    await ctx.heartbeat();
  }
}

/** Makes the load balancer's rows what its tree says; resolves with the plan of the attempt that committed. */
function syncNorthbound(ctx: StepContext, deps: OvnDeps): Promise<PlannedState> {
  return whenConnected(ctx, deps, async () => {
    // The plan of the attempt that committed (sync re-plans when another writer got in first).
    let last: PlannedState | undefined;
    const outcome = await deps.nb.sync(ctx.loadBalancerId, async () => (last = await plannedState(ctx.db, deps, ctx.loadBalancerId, true)).desired);
    ctx.log.debug({ ...outcome }, 'northbound in sync');
    await releaseHealthPorts(ctx.db, deps, outcome.releasedSources);
    return last!;
  });
}

async function removeRows(ctx: StepContext, deps: OvnDeps): Promise<void> {
  const lb = await ctx.db.kysely.selectFrom('load_balancer').select(['vip_port_id', 'additional_vips']).where('id', '=', ctx.loadBalancerId).executeTakeFirstOrThrow();
  const ports = [lb.vip_port_id, ...loadBalancerCodec.decode(lb).additional_vips.map((v) => v.port_id)].filter((p): p is string => !!p);
  await whenConnected(ctx, deps, async () => {
    const outcome = await deps.nb.remove(ctx.loadBalancerId, ports);
    await releaseHealthPorts(ctx.db, deps, outcome.releasedSources);
  });
}

export function syncAndSettle(load: OvnDepsLoader): Step {
  return {
    name: 'sync-and-settle',
    async run(ctx) {
      const planned = await syncNorthbound(ctx, await load());
      await ctx.db.kysely.transaction().execute(async (trx) => {
        await recordMigration(trx, ctx);
        if (!(await settleSuccess(trx, ctx.loadBalancerId))) return;
        const observed = (await loadTrees(trx, [ctx.loadBalancerId])).get(ctx.loadBalancerId);
        if (observed) await writeStatusChanges(trx, ovnStatusChanges(observed, planned.facts));
        // A monitor has no health of its own: OVN runs it when it is enabled.
        await setOnOffStatus(trx, 'health_monitor', (await treeIds(trx, ctx.loadBalancerId)).healthMonitors);
      });
    },
  };
}

export function removeNorthbound(load: OvnDepsLoader): Step {
  return {
    name: 'remove-northbound',
    async run(ctx) {
      await removeRows(ctx, await load());
    },
  };
}

/** How long a move waits for every chassis to apply a change before it hands the VIP on. */
const APPLIED_TIMEOUT_MS = 30_000;

/** The rows as the tree says, once every chassis runs them. */
async function writtenEverywhere(ctx: StepContext, load: OvnDepsLoader): Promise<void> {
  const deps = await load();
  await syncNorthbound(ctx, deps);
  await deps.nb.appliedEverywhere(APPLIED_TIMEOUT_MS);
}

/**
 * A move to OVN (../provider-moves.ts): the rows written while the amphorae still serve, and every
 * chassis running them before the VIP is handed over. Undone by removing them.
 */
export function writeNorthbound(load: OvnDepsLoader): Step {
  return {
    name: 'write-northbound',
    run: (ctx) => writtenEverywhere(ctx, load),
    revert: async (ctx) => removeRows(ctx, await load()),
  };
}

/**
 * A move from OVN: the rows go once the amphorae serve; resolved when every chassis has stopped serving
 * them. Undone by writing them again, before the amphorae built are taken down.
 */
export function withdrawNorthbound(load: OvnDepsLoader): Step {
  return {
    name: 'withdraw-northbound',
    async run(ctx) {
      const deps = await load();
      await removeRows(ctx, deps);
      await deps.nb.appliedEverywhere(APPLIED_TIMEOUT_MS);
    },
    revert: (ctx) => writtenEverywhere(ctx, load),
  };
}

/** After the rows are gone: the tree settles as deleted. */
export const settleDeleted: Step = {
  name: 'settle',
  async run(ctx) {
    await settleSuccess(ctx.db.kysely, ctx.loadBalancerId);
  },
};

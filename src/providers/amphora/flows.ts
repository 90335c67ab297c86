/**
 * The amphora provider's flows: which steps each operation runs, and what a failure leaves.
 *
 *   loadbalancer.create   create-amphora (one STANDALONE, or a MASTER and a BACKUP for ACTIVE_STANDBY) → boot-compute → wait-for-agent → plug-vip → push-config
 *                         → verify-certificates → mark-active
 *   *.failover            the same build, then retire-old-amphorae, then mark-active: the
 *                         replacement serves before the old one stops (both HAProxies bind the
 *                         VIP with SO_REUSEPORT meanwhile, so connections keep being accepted); a failure is
 *                         remembered per load balancer (db/failover-memory), mark-active forgets it.
 *                         A load balancer failover of a pair does it twice: the standby, then the active,
 *                         so one half serves throughout; a failure of the second leaves the first in service
 *   child changes, loadbalancer.update
 *                         push-config → verify-certificates → settle; a change the amphorae
 *                         refused puts only the changed objects in ERROR (verify-certificates
 *                         checks at the VIP that new or changed TLS listeners serve what they
 *                         should, and rolls a changed listener's certificates back if not)
 *   loadbalancer.migrate  the failover's rounds for the placement moved to (flavor, topology), each
 *                         round's new amphorae configured before claim-vip moves the traffic to them,
 *                         then the old ones drained and retired (a pair's leaving MASTER hands the VIPs
 *                         over: it stays the others' peer until it goes), the survivors configured
 *                         without them; mark-active records the new
 *                         placement. A failure takes down what the job built: the previous amphorae
 *                         kept serving, the load balancer goes back to ACTIVE with the reason
 *   loadbalancer.migrate to another provider (ovn): ../provider-moves.ts
 *   loadbalancer.delete   stop-amphorae → settle
 *   amphora.config        push-config (to that amphora; no status changes)
 *   amphora.delete        delete-amphora
 */
import type { Flow, StepContext } from '../../provider-contract/flow.js';
import type { Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { settleFailure } from '../../db/lb-tree.js';
import type { Operation, StepPayload } from '../../provider-contract/operations.js';
import { amphoraToOvn, moveDeps, movingTo, type MoveDeps } from '../provider-moves.js';
import { PROVIDER } from './capabilities.js';
import type { AmphoraDepsLoader } from './deps.js';
import { verifyCertificates } from './verify-certificates.js';
import { rememberFailure } from '../../db/failover-memory.js';
import { failoverOwnerReason, failureKind, ownerFailureReason, refusedChangeReason } from './failures.js';
import { settleAmphoraTree, settleRefusedChange } from './statuses.js';
import {
  bootCompute, builtAndKept, builtKeptAndLeaving, claimVip, builtByJob, createAmphora, deleteAmphora, findBuiltAmphorae, inService, markActive, namedInPayload, plugVip, pushConfig,
  retireOldAmphorae, settle, stopAmphorae, unfinishedBuilt, updateAmphora, waitForAgent, type Round,
} from './steps.js';

const reason = (step: string, error: Error) => `${step}: ${error.message}`;

/**
 * The load balancer goes to ERROR with the reason, and so do the amphorae the job was building,
 * in one transaction (as mark-active settles both): whoever sees the load balancer leave PENDING_*
 * finds the amphora's reason already there.
 */
async function failLoadBalancer(ctx: StepContext, step: string, error: Error, ownerText = ownerFailureReason(step, error), alsoIn?: (trx: Transaction<Database>) => Promise<void>): Promise<void> {
  await ctx.db.kysely.transaction().execute(async (trx) => {
    for (const built of await unfinishedBuilt(trx, ctx.jobId)) await updateAmphora(trx, built.id, { status: 'ERROR', status_reason: reason(step, error) });
    await settleFailure(trx, ctx.loadBalancerId, ownerText);
    await alsoIn?.(trx);
  });
}

/**
 * As failLoadBalancer, and the load balancer remembers the failure (see failover-memory), so the
 * amphorae that replace each other do not each start a new series of attempts. Its owner reads
 * what happened and what brings it back; the amphorae (an admin's) keep the step's detail.
 */
async function failFailover(ctx: StepContext, step: string, error: Error): Promise<void> {
  const kind = failureKind(step, error);
  await failLoadBalancer(ctx, step, error, failoverOwnerReason(kind), (trx) => rememberFailure(trx, ctx.loadBalancerId, kind));
  ctx.log.warn({ lb: ctx.loadBalancerId, step, kind, err: error }, kind === 'configuration' ? 'failover failed on configuration; stopped until the load balancer changes' : 'failover failed; retried after a back-off');
}

/**
 * A change to the tree that failed: when the amphorae kept their previous configuration, only
 * the objects changed go to ERROR and the load balancer stays usable (./failures.ts); otherwise
 * the load balancer fails. The trace and the amphora keep the step's detail.
 */
function failChange(load: AmphoraDepsLoader): Flow['onFailure'] {
  return async (ctx, step, error) => {
    const cause = refusedChangeReason(step, error);
    if (cause === null) return failLoadBalancer(ctx, step, error);
    const { dataPlane } = await load();
    await ctx.db.kysely.transaction().execute((trx) => settleRefusedChange(trx, ctx.loadBalancerId, cause, { dataPlane }));
    ctx.log.warn({ lb: ctx.loadBalancerId, step, err: error }, 'a change was not applied; the amphorae keep their previous configuration');
  };
}

/**
 * A migration that failed: what it built is down (the reverts) or ERROR, the amphorae it did not yet
 * replace still serve, so the load balancer is ACTIVE again under its previous placement, with the reason.
 */
function failMigration(load: AmphoraDepsLoader): Flow['onFailure'] {
  return async (ctx, step, error) => {
    const { dataPlane } = await load();
    const to = ctx.payload.migration?.to;
    await ctx.db.kysely.transaction().execute(async (trx) => {
      const built = await findBuiltAmphorae(trx, ctx.jobId);
      for (const amp of built.filter((a) => a.status !== 'ALLOCATED')) await updateAmphora(trx, amp.id, { status: 'ERROR', status_reason: reason(step, error) });
      const halfway = built.some((a) => a.status === 'ALLOCATED');
      if (!(await settleAmphoraTree(trx, ctx.loadBalancerId, { dataPlane }))) return;
      const target = to ? `flavor ${to.flavor_id ?? 'none'}${to.topology ? `, topology ${to.topology}` : ''}` : 'the new placement';
      const kept = halfway ? 'half of its amphorae were replaced and serve beside the other half' : 'it still serves from its previous amphorae';
      const text = `the migration to ${target} failed at ${step}: ${error.message}; ${kept}. Migrate again, or see the job's trace.`;
      await trx.updateTable('load_balancer').set({ status_reason: text }).where('id', '=', ctx.loadBalancerId).execute();
    });
    ctx.log.warn({ lb: ctx.loadBalancerId, step, err: error }, 'migration failed; the load balancer serves as before');
  };
}

export function amphoraFlows(load: AmphoraDepsLoader, moves: MoveDeps = {}): (op: Operation, payload?: StepPayload) => Flow {
  const build = (round: Round) => [createAmphora(load, round), bootCompute(load, round), waitForAgent(load, round), plugVip(load, round)];
  const replace = (round: Round) => [...build(round), pushConfig(load, builtAndKept(round)), retireOldAmphorae(load, round)];
  const create: Flow = { steps: [...build(0), pushConfig(load, builtByJob), verifyCertificates(load), markActive(load)], onFailure: failLoadBalancer };
  const failover: Flow = { steps: [...replace(0), markActive(load)], onFailure: failFailover };
  const failoverInTurn: Flow = { steps: [...replace(0), ...replace(1), markActive(load)], onFailure: failFailover };
  const move = (round: Round) => [...build(round), pushConfig(load, builtKeptAndLeaving(round)), claimVip(load, round), retireOldAmphorae(load, round)];
  const migrate: Flow = { steps: [...move(0), ...move(1), pushConfig(load, inService), markActive(load)], onFailure: failMigration(load) };
  const change: Flow = { steps: [pushConfig(load, inService), verifyCertificates(load), settle(load)], onFailure: failChange(load) };
  const remove: Flow = { steps: [stopAmphorae(load), settle(load)], onFailure: failLoadBalancer };
  // Not under the load balancer's lock: other jobs' pending objects must not be settled, nor the load balancer failed.
  const configure: Flow = {
    steps: [pushConfig(load, namedInPayload)],
    async onFailure(ctx, step, error) {
      await updateAmphora(ctx.db.kysely, String(ctx.payload.amphora_id), { status_reason: reason(step, error) });
    },
  };
  const deleteOne: Flow = {
    steps: [deleteAmphora(load)],
    async onFailure(ctx, step, error) {
      await updateAmphora(ctx.db.kysely, String(ctx.payload.amphora_id), { status: 'ERROR', status_reason: reason(step, error) });
    },
  };
  return (op, payload) => {
    switch (op) {
      case 'loadbalancer.create':
        return create;
      case 'loadbalancer.failover':
        return failoverInTurn;
      case 'loadbalancer.migrate': {
        const to = movingTo(PROVIDER, payload);
        return to ? amphoraToOvn(load, moveDeps(moves, to).ovn!) : migrate;
      }
      case 'amphora.failover':
        return failover;
      case 'loadbalancer.delete':
        return remove;
      case 'amphora.config':
        return configure;
      case 'amphora.delete':
        return deleteOne;
      default:
        return change;
    }
  };
}

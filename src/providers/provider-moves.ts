/**
 * Moves between the amphora and ovn providers (`PUT …/migrate` naming the other provider), the VIP
 * kept: the amphorae's ports are ports of the VIP's OVN switch (`ovn.integrationBridge`), so the
 * address and its port stay and only who answers for it changes. The job runs under the provider the
 * load balancer leaves; each flow builds and checks the new data plane before the traffic moves:
 *
 *   amphora → ovn   relay-on (the amphorae forward what the switch rewrites to a member) → write-northbound
 *                   (the rows, and every chassis running them) → hand-over-vip (the amphorae announce the
 *                   VIP at the router's MAC, which OVN answers with) → retire-amphorae → sync-and-settle
 *                   (the load balancer is the ovn provider's from then on)
 *   ovn → amphora   create-amphora → boot-compute → wait-for-agent → plug-vip (the VIP let through, not
 *                   held) → relay-on → push-config → claim-vip (clients send to the amphora, which still
 *                   relays what the switch rewrites) → withdraw-northbound (every chassis stopped serving
 *                   the rows) → relay-off → mark-active
 *
 * New connections keep being served throughout; connections open across the moment the switch starts
 * (or stops) rewriting the VIP are cut, since the amphora terminates TCP and OVN does not. A failure
 * reverts what the job did (rows removed, the VIP announced at the amphorae's own MACs again, the
 * amphorae built taken down) and the load balancer is ACTIVE under its previous provider with the reason;
 * once the VIP is handed over, nothing undoes the move: an amphora that cannot be retired stays in ERROR.
 */
import type { Config } from '../config.js';
import type { Flow, Step, StepContext } from '../provider-contract/flow.js';
import { whyNoMoves } from './movable.js';
import type { StepPayload } from '../provider-contract/operations.js';
import { settleSuccess } from '../db/lb-tree.js';
import { recordMigration } from './migration-record.js';
import type { AmphoraDepsLoader } from './amphora/deps.js';
import type { OvnDepsLoader } from './ovn/deps.js';
import { bootCompute, builtByJob, claimVip, createAmphora, markActive, plugVip, pushConfig, waitForAgent } from './amphora/steps.js';
import { builtHere, handOverVip, relayOff, relayOn, retireServing, serving } from './amphora/vip-handover.js';
import { syncAndSettle, withdrawNorthbound, writeNorthbound } from './ovn/steps.js';

/** The other provider's machinery, for the moves to it. */
export interface MoveDeps {
  amphora?: AmphoraDepsLoader;
  ovn?: OvnDepsLoader;
}

/** What the drivers get: both loaders when moves are possible, none otherwise. */
export function providerMoves(config: Config, amphora: AmphoraDepsLoader, ovn: OvnDepsLoader): MoveDeps {
  return whyNoMoves(config) ? {} : { amphora, ovn };
}

/** The provider a migration's job moves the load balancer to, when that is not `own`. */
export function movingTo(own: string, payload: StepPayload | undefined): string | undefined {
  const to = payload?.migration?.to.provider;
  return to && to !== own ? to : undefined;
}

/** The machinery a move to `to` needs; a move to a provider this deployment cannot move to fails its job with why. */
export function moveDeps(moves: MoveDeps, to: string): MoveDeps {
  const known = to === 'ovn' ? moves.ovn : to === 'amphora' ? moves.amphora : undefined;
  if (!known) throw new Error(`a load balancer cannot move to provider ${to} here: moves go between the amphora and ovn providers, both enabled, with ovn.integrationBridge set`);
  return moves;
}

/** Steps after which the VIP is the new provider's: a failure there leaves the move done. */
const PAST_HAND_OVER = new Set(['retire-amphorae', 'sync-and-settle', 'relay-off', 'mark-active']);

/**
 * The load balancer is ACTIVE again with the reason: under the provider it left when the move failed
 * before the VIP changed hands (the reverts have run), under the new one after.
 */
function onFailure(from: string): Flow['onFailure'] {
  return async (ctx: StepContext, step, error) => {
    const to = ctx.payload.migration?.to.provider ?? 'the other provider';
    const done = PAST_HAND_OVER.has(step);
    const text = done
      ? `the move to provider ${to} failed at ${step} after ${to} took the VIP: ${error.message}; it serves from provider ${to}. Update the load balancer to settle it again.`
      : `the move to provider ${to} failed at ${step}: ${error.message}; it still serves from provider ${from}. Migrate again, or see the job's trace.`;
    await ctx.db.kysely.transaction().execute(async (trx) => {
      if (done) await recordMigration(trx, ctx);
      if (await settleSuccess(trx, ctx.loadBalancerId)) await trx.updateTable('load_balancer').set({ status_reason: text }).where('id', '=', ctx.loadBalancerId).execute();
    });
    ctx.log.warn({ lb: ctx.loadBalancerId, step, err: error }, 'provider move failed');
  };
}

/** A move to OVN takes its rows back only while amphorae still serve: after the hand-over they are all that does. */
function writtenWhileAmphoraeServe(step: Step): Step {
  return { ...step, revert: async (ctx) => void ((await serving(ctx)).length && (await step.revert!(ctx))) };
}

export function amphoraToOvn(amphora: AmphoraDepsLoader, ovn: OvnDepsLoader): Flow {
  return {
    steps: [relayOn(amphora, serving), writtenWhileAmphoraeServe(writeNorthbound(ovn)), handOverVip(amphora), retireServing(amphora), syncAndSettle(ovn)],
    onFailure: onFailure('amphora'),
  };
}

export function ovnToAmphora(ovn: OvnDepsLoader, amphora: AmphoraDepsLoader): Flow {
  return {
    steps: [
      createAmphora(amphora), bootCompute(amphora), waitForAgent(amphora), plugVip(amphora), relayOn(amphora, builtHere), pushConfig(amphora, builtByJob),
      claimVip(amphora), withdrawNorthbound(ovn), relayOff(amphora, builtHere), markActive(amphora),
    ],
    onFailure: onFailure('ovn'),
  };
}

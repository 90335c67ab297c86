/**
 * The amphorae's side of a move between the amphora and ovn providers (../provider-moves.ts): their
 * ports are ports of the VIP's OVN switch (network driver `bridge` with `ovn.integrationBridge`), so
 * the VIP changes hands by who answers for it: the amphorae (their MACs) or OVN (the router's MAC,
 * with the switch rewriting the VIP to a member).
 */
import type { Step, StepContext } from '../../provider-contract/flow.js';
import type { OvnVipHandover } from '../../network/network-driver.js';
import type { AmphoraRow } from '../../db/records/amphora.js';
import type { AmphoraDeps, AmphoraDepsLoader } from './deps.js';
import { allocated, builtAmphorae, retireInTurn, vipsOf } from './steps.js';

/** Which amphorae a step acts on: those in service (a move to OVN), or those the job built (a move from it). */
export type Whose = (ctx: StepContext) => Promise<AmphoraRow[]>;
export const serving: Whose = (ctx) => allocated(ctx);
export const builtHere: Whose = (ctx) => builtAmphorae(ctx);

/** The network driver's hand-over, which only drivers with amphora ports on OVN switches have. */
export function handover(deps: Pick<AmphoraDeps, 'network'>): OvnVipHandover {
  const h = deps.network.ovn;
  if (!h) throw new Error('the amphorae are not on OVN switches (ovn.integrationBridge is not set): a load balancer cannot move between the amphora and ovn providers here');
  return h;
}

async function relayAll(ctx: StepContext, load: AmphoraDepsLoader, whose: Whose, on: boolean): Promise<void> {
  const h = handover(await load());
  for (const amp of await whose(ctx)) await h.relay(amp.id, on);
}

/**
 * The amphorae forward what the switch rewrote to a member while OVN's load balancer and they both
 * serve the VIP: a client that still sends to an amphora's MAC reaches the member through it.
 */
export function relayOn(load: AmphoraDepsLoader, whose: Whose): Step {
  return {
    name: 'relay-on',
    run: (ctx) => relayAll(ctx, load, whose, true),
    revert: (ctx) => relayAll(ctx, load, whose, false),
  };
}

export function relayOff(load: AmphoraDepsLoader, whose: Whose): Step {
  return { name: 'relay-off', run: (ctx) => relayAll(ctx, load, whose, false) };
}

/**
 * Every amphora in service announces its addresses at the MAC of the router on the VIP's switch, which
 * OVN answers the VIP with: clients send there, OVN serves them. Undone by announcing them at their own again.
 */
export function handOverVip(load: AmphoraDepsLoader): Step {
  return {
    name: 'hand-over-vip',
    async run(ctx) {
      const h = handover(await load());
      const { subnetId } = await vipsOf(ctx.db.kysely, ctx.loadBalancerId);
      const mac = await h.routerMac(subnetId!);
      for (const amp of await serving(ctx)) await h.handOver(amp.id, mac);
    },
    async revert(ctx) {
      const h = handover(await load());
      for (const amp of await serving(ctx)) await h.reclaim(amp.id);
    },
  };
}

/** Every amphora of the load balancer goes once OVN serves it; one that will not is left in ERROR with the reason. */
export function retireServing(load: AmphoraDepsLoader): Step {
  return {
    name: 'retire-amphorae',
    async run(ctx) {
      await retireInTurn(ctx, await load(), await serving(ctx), 'retire-amphorae');
    },
  };
}

/**
 * Whether load balancers move between providers here (providers/provider-moves.ts does it): read by
 * the API, which refuses a move that cannot be made, and by the runtime, which gives the drivers what
 * a move needs.
 */
import type { Config } from '../config.js';
import { providerEnabled } from './registry.js';

/** The providers a load balancer moves between, its VIP kept. */
export const MOVABLE: ReadonlySet<string> = new Set(['amphora', 'ovn']);

/** Why load balancers cannot move between the amphora and ovn providers in this deployment, or null when they can. */
export function whyNoMoves(config: Config): string | null {
  const enabled = (p: string) => providerEnabled(config.api.enabledProviders, p);
  if (!enabled('amphora') || !enabled('ovn')) return 'moves go between the amphora and ovn providers, and this deployment does not enable both (api.enabledProviders)';
  if (!config.ovn.integrationBridge.ovsdb)
    return "the amphorae are not on OVN's switches, so OVN cannot take their VIPs over (set ovn.integrationBridge: amphorae of compute.driver netns then plug into OVN)";
  return null;
}


/**
 * Where and how a load balancer is built: its provider, its flavor and its topology. A migration
 * (`PUT /v2/lbaas/loadbalancers/{id}/migrate`, an Ostia extension) moves it from one placement to
 * another with its VIP kept.
 */
import type { Topology } from './enums.js';

export interface Placement {
  provider: string;
  flavor_id: string | null;
  /** The load balancer's own choice; null: what the flavor (or the default) says. */
  topology: Topology | null;
}

export interface Migration {
  from: Placement;
  to: Placement;
}

/** The topology a load balancer is built with: its own choice, else its flavor's, else SINGLE (Octavia's default). */
export function effectiveTopology(own: Topology | null, flavorTopology: Topology | null): Topology {
  return own ?? flavorTopology ?? 'SINGLE';
}

/** The topology a flavor profile's data (its JSON text) asks for, if any. */
export function flavorTopology(flavorData: string | null): Topology | null {
  const asked = (JSON.parse(flavorData ?? '{}') as { loadbalancer_topology?: unknown }).loadbalancer_topology;
  return asked === 'SINGLE' || asked === 'ACTIVE_STANDBY' ? asked : null;
}

/** `provider amphora, flavor 5c…, topology ACTIVE_STANDBY`: for reasons and answers. */
export function describePlacement(p: Placement, topology: Topology): string {
  return `provider ${p.provider}, ${p.flavor_id ? `flavor ${p.flavor_id}` : 'no flavor'}, topology ${topology}`;
}

/** What the OVN provider's flows use: the Northbound connection and Ostia's networks as OVN sees them. */
import type { Config } from '../../config.js';
import type { NetworkCatalog } from '../../network/catalog.js';
import type { OvsdbClient } from '../../ovn/ovsdb/index.js';
import type { NetworkView } from './desired.js';
import type { Northbound } from './northbound.js';

export interface OvnDeps {
  nb: Northbound;
  catalog: NetworkCatalog;
  network: NetworkView;
  /**
   * The Southbound connection, for the probes' verdicts when a change settles; undefined while
   * the database cannot be reached (the health role's watcher catches up when it can).
   */
  southbound(): Promise<OvsdbClient | undefined>;
  /** How long a flow waits for a lost Northbound connection to come back before it fails. */
  reconnectWaitMs: number;
}

export type OvnDepsLoader = () => Promise<OvnDeps>;

export function networkView(catalog: NetworkCatalog, ovn: Config['ovn']): NetworkView {
  const switches = new Map(ovn.networks.map((n) => [n.networkId, n.logicalSwitch]));
  return {
    subnet(id) {
      const s = catalog.subnet(id);
      return s && { id: s.id, cidr: s.cidr, networkId: s.network_id };
    },
    switchName: (networkId) => switches.get(networkId),
  };
}

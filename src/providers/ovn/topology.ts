/**
 * The parts of the Northbound topology the provider reads, from a monitor's cache: which
 * logical switch is which network, which routers sit on a switch (router ports, as Neutron
 * leaves them), which switches hang off a router, and which switch port holds a member's
 * address (the port OVN probes the member through).
 *
 * Every load balancer adds a port to its VIP's switch, so nothing here may walk a switch's ports
 * per change: ports are indexed by name and address as the monitor reports them, a switch's port
 * set is built once per version of its row, and the router topology is computed once per change
 * of routers, router ports or router-type switch ports.
 */
import { mapToRecord, Uuid, type Monitor, type Row, type RowChange } from '../../ovn/ovsdb/index.js';
import { ipVersion } from '../../domain/net.js';

/** What the provider monitors in the Northbound database. */
export const NB_TABLES = {
  Load_Balancer: { columns: ['name', 'protocol', 'vips', 'selection_fields', 'options', 'external_ids', 'health_check', 'ip_port_mappings'] },
  Load_Balancer_Health_Check: { columns: ['vip', 'options', 'external_ids'] },
  Logical_Switch: { columns: ['name', 'ports', 'load_balancer'] },
  Logical_Switch_Port: { columns: ['name', 'type', 'addresses', 'options', 'external_ids'] },
  Logical_Router: { columns: ['name', 'ports', 'load_balancer'] },
  Logical_Router_Port: { columns: ['name', 'networks'] },
};

export interface Named {
  uuid: string;
  name: string;
  row: Row;
}

const uuids = (d: unknown): string[] => (Array.isArray(d) ? d.filter((a): a is Uuid => a instanceof Uuid).map((a) => a.uuid) : []);
const strings = (d: unknown): string[] => (Array.isArray(d) ? d.map(String) : typeof d === 'string' ? [d] : []);
/** The IPs of a port's `addresses` entries (`MAC IP…`). */
const addressesOf = (row: Row): string[] => strings(row.addresses).flatMap((a) => a.split(/\s+/).slice(1));

/** A set of the uuids in a column, built once per row version (rows are replaced, never mutated, on change). */
const setCache = new WeakMap<object, Set<string>>();
export function uuidSet(row: Row, column: string): Set<string> {
  const key = row[column] as object | undefined;
  if (!key || typeof key !== 'object') return new Set();
  let set = setCache.get(key);
  if (!set) setCache.set(key, (set = new Set(uuids(key))));
  return set;
}

interface Routing {
  /** switch uuid → routers on it, by IP version of the router port. */
  routers: Map<string, Array<{ router: Named; version: number }>>;
  /** router uuid → switches on its ports. */
  switches: Map<string, Named[]>;
}

export class Topology {
  private readonly portsByName = new Map<string, string>();
  private readonly portsByAddress = new Map<string, Set<string>>();
  private routing: Routing | undefined;

  constructor(private readonly nb: Monitor) {
    for (const [uuid, row] of this.table('Logical_Switch_Port')) this.indexPort(uuid, undefined, row);
    nb.on('change', (c: RowChange) => {
      if (c.table === 'Logical_Switch_Port') {
        this.indexPort(c.uuid, c.old, c.row);
        if (c.old?.type === 'router' || c.row?.type === 'router') this.routing = undefined;
      } else if (c.table === 'Logical_Router' || c.table === 'Logical_Router_Port') this.routing = undefined;
    });
  }

  private table(name: string): Map<string, Row> {
    return this.nb.tables.get(name) ?? new Map();
  }

  private indexPort(uuid: string, old: Row | undefined, row: Row | undefined): void {
    if (old) {
      if (this.portsByName.get(String(old.name)) === uuid) this.portsByName.delete(String(old.name));
      for (const a of addressesOf(old)) this.portsByAddress.get(a)?.delete(uuid);
    }
    if (row) {
      this.portsByName.set(String(row.name), uuid);
      for (const a of addressesOf(row)) this.portsByAddress.set(a, (this.portsByAddress.get(a) ?? new Set()).add(uuid));
    }
  }

  switchNamed(name: string): Named | undefined {
    for (const [uuid, row] of this.table('Logical_Switch')) if (row.name === name) return { uuid, name, row };
    return undefined;
  }

  portNamed(name: string): Named | undefined {
    const uuid = this.portsByName.get(name);
    const row = uuid ? this.table('Logical_Switch_Port').get(uuid) : undefined;
    return uuid && row ? { uuid, name, row } : undefined;
  }

  /** The switch a port is on. */
  switchOfPort(portUuid: string): Named | undefined {
    for (const [uuid, row] of this.table('Logical_Switch')) if (uuidSet(row, 'ports').has(portUuid)) return { uuid, name: String(row.name), row };
    return undefined;
  }

  /** The plain switch port on `ls` that holds `address`, as Neutron's member ports do. */
  memberPort(ls: Named, address: string): Named | undefined {
    const onSwitch = uuidSet(ls.row, 'ports');
    for (const uuid of this.portsByAddress.get(address) ?? []) {
      const row = this.table('Logical_Switch_Port').get(uuid);
      if (row && row.type === '' && onSwitch.has(uuid)) return { uuid, name: String(row.name), row };
    }
    return undefined;
  }

  /**
   * Routers attached to switch `ls` through a router port whose first network has IP version
   * `version` (upstream associates only same-family routers).
   */
  routersOf(ls: Named, version: number): Named[] {
    return (this.routed().routers.get(ls.uuid) ?? []).filter((r) => r.version === version).map((r) => r.router);
  }

  /** Switches a router reaches through its ports (the other end of each router port). */
  switchesOf(lr: Named): Named[] {
    return this.routed().switches.get(lr.uuid) ?? [];
  }

  private routed(): Routing {
    if (this.routing) return this.routing;
    const lrps = new Map<string, { router: Named; version: number }>();
    for (const [uuid, row] of this.table('Logical_Router')) {
      const router = { uuid, name: String(row.name), row };
      for (const p of uuids(row.ports)) {
        const lrp = this.table('Logical_Router_Port').get(p);
        if (lrp) lrps.set(String(lrp.name), { router, version: ipVersion(strings(lrp.networks)[0]?.split('/')[0] ?? '') });
      }
    }
    const routing: Routing = { routers: new Map(), switches: new Map() };
    const lsps = this.table('Logical_Switch_Port');
    const routerPorts = [...lsps].filter(([, row]) => row.type === 'router');
    for (const [uuid, row] of this.table('Logical_Switch')) {
      const ls = { uuid, name: String(row.name), row };
      const ports = uuidSet(row, 'ports');
      for (const [lspUuid, lsp] of routerPorts) {
        const peer = lrps.get(mapToRecord(lsp.options)['router-port'] ?? '');
        if (!peer || !ports.has(lspUuid)) continue;
        routing.routers.set(uuid, [...(routing.routers.get(uuid) ?? []), peer]);
        routing.switches.set(peer.router.uuid, [...(routing.switches.get(peer.router.uuid) ?? []), ls]);
      }
    }
    this.routing = routing;
    return routing;
  }
}

/**
 * The parts of the Northbound topology the provider reads, from a monitor's cache: which
 * logical switch is which network, which routers sit on a switch (router ports, as Neutron
 * leaves them), which switches hang off a router, and which switch port holds a member's
 * address (the port OVN probes the member through).
 */
import { mapToRecord, Uuid, type Monitor, type Row } from '../../ovn/ovsdb/index.js';
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

export class Topology {
  constructor(private readonly nb: Monitor) {}

  private table(name: string): Map<string, Row> {
    return this.nb.tables.get(name) ?? new Map();
  }

  private named(table: string, name: string): Named | undefined {
    for (const [uuid, row] of this.table(table)) if (row.name === name) return { uuid, name, row };
    return undefined;
  }

  switchNamed(name: string): Named | undefined {
    return this.named('Logical_Switch', name);
  }

  portNamed(name: string): Named | undefined {
    return this.named('Logical_Switch_Port', name);
  }

  /** The ports of switch `ls`, with their rows. */
  portsOf(ls: Named): Named[] {
    const ports = this.table('Logical_Switch_Port');
    return uuids(ls.row.ports).flatMap((uuid) => {
      const row = ports.get(uuid);
      return row ? [{ uuid, name: String(row.name), row }] : [];
    });
  }

  /** The switch port that holds `address` among its addresses (`MAC IP…`), as Neutron's member ports do. */
  memberPort(ls: Named, address: string): Named | undefined {
    return this.portsOf(ls).find((p) => p.row.type === '' && strings(p.row.addresses).some((a) => a.split(/\s+/).slice(1).includes(address)));
  }

  /**
   * Routers attached to switch `ls` through a router port whose first network has IP version
   * `version` (upstream associates only same-family routers).
   */
  routersOf(ls: Named, version: number): Named[] {
    const routerPortNames = new Set(
      this.portsOf(ls)
        .filter((p) => p.row.type === 'router')
        .map((p) => mapToRecord(p.row.options)['router-port'])
        .filter((n): n is string => !!n),
    );
    const lrps = this.table('Logical_Router_Port');
    const out: Named[] = [];
    for (const [uuid, row] of this.table('Logical_Router')) {
      const onSwitch = uuids(row.ports).some((p) => {
        const lrp = lrps.get(p);
        return lrp && routerPortNames.has(String(lrp.name)) && ipVersion(strings(lrp.networks)[0]?.split('/')[0] ?? '') === version;
      });
      if (onSwitch) out.push({ uuid, name: String(row.name), row });
    }
    return out;
  }

  /** Switches a router reaches through its ports (the other end of each router port). */
  switchesOf(lr: Named): Named[] {
    const lrps = this.table('Logical_Router_Port');
    const names = new Set(uuids(lr.row.ports).map((p) => String(lrps.get(p)?.name ?? '')));
    const out: Named[] = [];
    for (const [uuid, row] of this.table('Logical_Switch')) {
      const ls = { uuid, name: String(row.name), row };
      if (this.portsOf(ls).some((p) => p.row.type === 'router' && names.has(mapToRecord(p.row.options)['router-port'] ?? ''))) out.push(ls);
    }
    return out;
  }

}

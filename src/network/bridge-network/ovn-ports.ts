/**
 * Amphora ports on OVN logical switches (`ovn.integrationBridge` set): what Neutron and Nova do for
 * an instance's port in an OVN cloud, done by Ostia. The switch port is a Northbound row Ostia
 * writes (the port's MAC and address, no port security: an amphora sends from the VIPs it holds,
 * and a move hands them on); the veth's outer end is an interface of the integration bridge whose
 * `iface-id` names that row, so this machine's ovn-controller binds it. A port is plugged once
 * OVN says so (the row's `up`, set when the chassis has installed its flows).
 */
import { execFile } from 'node:child_process';
import type { Config } from '../../config.js';
import { connectNorthbound, NB_DB } from '../../ovn/connection.js';
import { NamedUuid, Uuid, mapToRecord, type OvsdbClient, type Row } from '../../ovn/ovsdb/index.js';
import { ip } from '../../linux-net/ip.js';

/** How long OVN may take to bind a new port: northd and ovn-controller each take a turn. */
const BIND_TIMEOUT_MS = 20_000;
const OVS_TIMEOUT_S = 15;
const CONNECT_TIMEOUT_MS = 15_000;
const OWNER = { key: 'ostia:owner', value: 'amphora-port' };

export class OvnPorts {
  private readonly switches: Map<string, string>;

  constructor(
    private readonly ovn: Config['ovn'],
    /** Tells this Ostia's ports from another's on the same switches. */
    private readonly tag: string,
  ) {
    this.switches = new Map(ovn.integrationBridge.ovsdb ? ovn.networks.map((n) => [n.networkId, n.logicalSwitch]) : []);
  }

  /** The logical switch network `networkId` is, when amphorae plug into it through OVN. */
  switchOf(networkId: string): string | undefined {
    return this.switches.get(networkId);
  }

  /** The namespace holding the integration bridge, where the outer ends go (null: this machine's own). */
  get namespace(): string | null {
    return this.ovn.integrationBridge.namespace || null;
  }

  /**
   * A connection for one plug, unplug or question: they come with amphorae booting and moving, seldom, so
   * none is kept open (nothing to close with the process, nothing to keep it alive).
   */
  private async northbound<T>(use: (nb: OvsdbClient) => Promise<T>): Promise<T> {
    let nb: OvsdbClient;
    try {
      nb = await connectNorthbound(this.ovn, undefined, { connectTimeoutMs: CONNECT_TIMEOUT_MS });
    } catch (e) {
      throw new Error(`amphora ports on OVN: cannot reach the Northbound database ${this.ovn.nbConnection} (${(e as Error).message}); check ovn.nbConnection`);
    }
    try {
      return await use(nb);
    } finally {
      nb.close();
    }
  }

  private portName(end: string): string {
    return `ostia-${this.tag}-${end}`;
  }

  /**
   * Puts `end` (already made, in `namespace`) on the switch of `networkId` as a port holding `mac
   * address`, and resolves once OVN has bound it. Plugging again replaces the row's addresses.
   */
  async plug(networkId: string, end: string, mac: string, address: string): Promise<void> {
    const ls = this.switchOf(networkId)!;
    const name = this.portName(end);
    await this.northbound(async (nb) => {
      const [found] = await nb.transact(NB_DB, [{ op: 'select', table: 'Logical_Switch_Port', where: [['name', '==', name]], columns: ['_uuid'] }]);
      const row = { name, addresses: [`${mac} ${address}`] as unknown as Row['addresses'], external_ids: { [OWNER.key]: OWNER.value } };
      const exists = found?.op === 'select' && found.rows.length > 0;
      await nb.transact(
        NB_DB,
        exists
          ? [{ op: 'update', table: 'Logical_Switch_Port', where: [['name', '==', name]], row }]
          : [
              { op: 'insert', table: 'Logical_Switch_Port', row, uuidName: 'port' },
              { op: 'mutate', table: 'Logical_Switch', where: [['name', '==', ls]], mutations: [['ports', 'insert', new NamedUuid('port')]] },
            ],
      );
      await this.vsctl('--may-exist', 'add-port', this.ovn.integrationBridge.bridge, end, '--', 'set', 'Interface', end, `external_ids:iface-id=${name}`);
      await ip(...(this.namespace ? ['-n', this.namespace] : []), 'link', 'set', end, 'up');
      try {
        await nb.transact(NB_DB, [{ op: 'wait', table: 'Logical_Switch_Port', where: [['name', '==', name]], columns: ['up'], until: '==', rows: [{ up: true }], timeoutMs: BIND_TIMEOUT_MS }]);
      } catch (e) {
        throw new Error(`OVN did not bind switch port ${name} of ${ls} within ${BIND_TIMEOUT_MS / 1000} s (${(e as Error).message}): is ovn-controller running on this machine, on bridge ${this.ovn.integrationBridge.bridge}? See \`ovn-sbctl show\``);
      }
    });
  }

  /** Takes `end` off the integration bridge and its row off the switch; absent ones are fine. */
  async unplug(end: string): Promise<void> {
    await this.vsctl('--if-exists', 'del-port', this.ovn.integrationBridge.bridge, end);
    const name = this.portName(end);
    await this.northbound(async (nb) => {
      const [found] = await nb.transact(NB_DB, [{ op: 'select', table: 'Logical_Switch_Port', where: [['name', '==', name]], columns: ['_uuid'] }]);
      const uuid = found?.op === 'select' ? (found.rows[0]?._uuid as Uuid | undefined) : undefined;
      // Deleting it from the switch's ports is enough: switch ports are not a root table.
      if (uuid) await nb.transact(NB_DB, [{ op: 'mutate', table: 'Logical_Switch', where: [['ports', 'includes', uuid]], mutations: [['ports', 'delete', uuid]] }]);
    });
  }

  /** The MAC the switch port of `end` holds, if it has one. */
  async portMac(end: string): Promise<string | undefined> {
    const [found] = await this.northbound((nb) => nb.transact(NB_DB, [{ op: 'select', table: 'Logical_Switch_Port', where: [['name', '==', this.portName(end)]], columns: ['addresses'] }]));
    const addresses = found?.op === 'select' ? found.rows[0]?.addresses : undefined;
    const first = Array.isArray(addresses) ? addresses[0] : addresses;
    return typeof first === 'string' ? first.split(/\s+/)[0] : undefined;
  }

  /**
   * The MAC of the router on the switch of `networkId` (its router port's peer), which answers for
   * the load balancers OVN serves there: what a move to OVN announces the VIPs at.
   */
  async routerMac(networkId: string): Promise<string> {
    const ls = this.switchOf(networkId)!;
    const [sw, routerPorts, lrps] = await this.northbound((nb) =>
      nb.transact(NB_DB, [
        { op: 'select', table: 'Logical_Switch', where: [['name', '==', ls]], columns: ['ports'] },
        { op: 'select', table: 'Logical_Switch_Port', where: [['type', '==', 'router']], columns: ['_uuid', 'options'] },
        { op: 'select', table: 'Logical_Router_Port', where: [], columns: ['name', 'mac'] },
      ]),
    );
    const rows = (r: (typeof sw)) => (r?.op === 'select' ? r.rows : []);
    const ports = rows(sw)[0]?.ports;
    const onSwitch = new Set((Array.isArray(ports) ? ports : [ports]).filter((p): p is Uuid => p instanceof Uuid).map((p) => p.uuid));
    const macs = new Map(rows(lrps).map((r) => [String(r.name), r.mac]));
    for (const lsp of rows(routerPorts)) {
      if (!onSwitch.has((lsp._uuid as Uuid).uuid)) continue;
      const mac = macs.get(mapToRecord(lsp.options)['router-port'] ?? '');
      if (typeof mac === 'string') return mac;
    }
    throw new Error(`logical switch ${ls} has no router port: OVN answers for a load balancer's VIP through a router on its subnet (the ovn provider needs one there)`);
  }

  private vsctl(...args: string[]): Promise<string> {
    const argv = [`--db=${this.ovn.integrationBridge.ovsdb}`, `--timeout=${OVS_TIMEOUT_S}`, ...args];
    return new Promise((resolve, reject) =>
      execFile('ovs-vsctl', argv, { timeout: (OVS_TIMEOUT_S + 5) * 1000 }, (e, stdout, stderr) =>
        e ? reject(new Error(`ovs-vsctl ${args.join(' ')} failed: ${(stderr || e.message).trim()}; check ovn.integrationBridge (Open vSwitch at ${this.ovn.integrationBridge.ovsdb})`)) : resolve(stdout),
      ),
    );
  }
}

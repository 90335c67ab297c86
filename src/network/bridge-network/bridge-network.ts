/**
 * Network driver `bridge`: Ostia's networks are Linux bridges in a network namespace of its own,
 * the fabric (`ostia-<tag>`, the tag from the data directory, so two Ostias or two test runs never
 * share one).
 *
 * - The management network: bridge `br-mgmt` with `amphora.managementNetwork.cidr`, and a veth whose
 *   fabric end is a port of the bridge and whose other end, in the controller's own namespace, holds
 *   the CIDR's first address. The controller's agent client and heartbeat receiver use that address,
 *   and nothing else of the machine is on the network. Amphorae (compute driver `netns`) plug into it
 *   with the addresses allocated here as `port` rows (../management-ports.ts).
 * - Each configured network (`network.networks`): a bridge `br-<network id>`. A subnet with a
 *   `gateway_ip` has that address on a veth from the bridge to the controller's namespace (the
 *   network's *leg*), so this machine reaches its VIPs (the README's `curl`) and its servers; a subnet
 *   without one is reachable only from the namespaces plugged into it. The legs do not route: this
 *   machine's forwarding setting is left alone.
 * - An amphora's ports (./amphora-ports.ts): its base port on the VIP network as `eth1`, holding its
 *   own address and, unless keepalived moves them (ACTIVE_STANDBY), the VIPs; one port per member
 *   network it must reach (`n-<network id>`).
 * - With `ovn.integrationBridge` set, the networks `ovn.networks` maps are OVN logical switches instead
 *   (./ovn-ports.ts): no bridge and no leg for them (OVN's routers are their gateways), and an amphora's
 *   port there is a switch port on the integration bridge, so the ovn provider's load balancers and the
 *   amphorae share those networks and a load balancer can move between them with its VIP.
 */
import type { Kysely, Transaction } from 'kysely';
import { dataDirTag } from '../../config.js';
import type { Database } from '../../db/schema.js';
import { bigIntToIp, cidrContains, ipToBigInt, ipVersion, parseCidr, parseHostPort } from '../../domain/net.js';
import { amphoraNamespace, deleteLink, deleteNetns, ensureNetns, ip, ipBatch, linkExists, linkMac, MANAGEMENT_INTERFACE, namespaceIdentity, namespacesUnavailable, netnsExists, type BridgeAttachment } from '../../linux-net/ip.js';
import { NetworkCatalog } from '../catalog.js';
import { checkManagementNetwork, ManagementPorts, type ManagementNetworkConfig } from '../management-ports.js';
import type { BasePort, NetworkDriver, OvnVipHandover, SecurityGroup, VipPlug } from '../network-driver.js';
import { addPortSecurity, removePortSecurity } from '../../linux-net/port-security.js';
import { renderAmphoraFirewall, type VipListener } from './security-groups.js';
import type { SecurityGroupRule } from '../../domain/security-group-rule.js';
import { nftApply } from '../../linux-net/nft.js';
import { AmphoraPorts, MEMBER_DEVICE_OWNER, VRRP_DEVICE_OWNER, type AmphoraPort } from './amphora-ports.js';
import { OvnPorts } from './ovn-ports.js';
import type { Config } from '../../config.js';


export const MANAGEMENT_BRIDGE = 'br-mgmt';
/** The fabric end of the controller's veth. */
const CONTROLLER_PORT = 'controller';
const LOOPBACK_V4 = parseCidr('127.0.0.0/8')!;
/** How long a bridge port may take to forward once its veth is up (the kernel sees carrier changes within a second). */
const PORT_FORWARDING_MS = 5_000;
/** The amphora's interface on the VIP network. */
export const VIP_INTERFACE = 'eth1';

/** `ip` commands putting the VIPs on the amphora's VIP interface (`replace`: again without an error). */
const vipAddressCommands = (addresses: readonly string[], verb: 'add' | 'replace') => addresses.map((vip) => `address ${verb} ${vip}/${ipVersion(vip) === 6 ? 128 : 32} dev ${VIP_INTERFACE}`);

const hex = (id: string, n: number) => id.replace(/-/g, '').slice(0, n);
/** Interface names are at most 15 characters: these are 14, 13 and 15. */
const networkBridge = (networkId: string) => `br-${hex(networkId, 11)}`;
const legFabricEnd = (networkId: string) => `g${hex(networkId, 12)}`;
const amphoraPortEnd = (amphoraId: string, networkId?: string) => (networkId ? `m${hex(amphoraId, 8)}${hex(networkId, 6)}` : `v${hex(amphoraId, 12)}`);
const memberInterface = (networkId: string) => `n-${hex(networkId, 10)}`;

export class BridgeNetwork implements NetworkDriver {
  /** The fabric namespace. */
  readonly fabric: string;
  /** The controller's address on the management network: the CIDR's first. */
  readonly controllerAddress: string;
  private readonly prefixLength: number;
  /** The controller's end of its veth, in its own namespace (named like the fabric: at most 15 characters). */
  private readonly hostLink: string;
  private readonly tag: string;
  private readonly ports: ManagementPorts;
  private readonly amphoraPorts: AmphoraPorts;
  /** The security group last written into each amphora's namespace, and which namespace that was. */
  private readonly firewalls = new Map<string, { namespace: number | null; script: string }>();
  private readonly ovnPorts: OvnPorts | undefined;
  readonly ovn: OvnVipHandover | undefined;

  constructor(
    dataDir: string,
    private readonly config: ManagementNetworkConfig,
    /** The tenant networks; none by default (the management network alone). */
    private readonly catalog: NetworkCatalog = new NetworkCatalog({ networks: [], qosPolicies: [], securityGroups: [] }),
    ovn?: Config['ovn'],
  ) {
    const cidr = parseCidr(config.cidr);
    checkManagementNetwork(config, (c) =>
      c.version !== 4 || cidrContains(LOOPBACK_V4, bigIntToIp(c.network, 4))
        ? 'must be IPv4 outside 127.0.0.0/8: the bridge network driver puts it on a Linux bridge'
        : c.prefix < 16 || c.prefix > 29
          ? 'must have a prefix from /16 to /29'
          : null,
    );
    const loopback = catalog.subnets.find((sub) => sub.ip_version === 4 && cidrContains(LOOPBACK_V4, bigIntToIp(sub.cidrParsed.network, 4)));
    if (loopback)
      throw new Error(`subnet ${loopback.id} (${loopback.cidr}) of network.networks is in 127.0.0.0/8, which cannot be a Linux bridge's network: give the bridge network driver real CIDRs (left at their defaults, they become ranges of 198.18.0.0/15)`);
    this.prefixLength = cidr!.prefix;
    this.controllerAddress = bigIntToIp(cidr!.network + 1n, 4);
    if (ipToBigInt(config.start) <= cidr!.network + 1n)
      throw new Error(`amphora.managementNetwork.start ${config.start} must come after ${this.controllerAddress}, the controller's address on the management network`);
    this.tag = dataDirTag(dataDir);
    this.fabric = `ostia-${this.tag}`;
    this.hostLink = this.fabric;
    this.ports = new ManagementPorts(config);
    this.amphoraPorts = new AmphoraPorts(catalog);
    this.ovnPorts = ovn?.integrationBridge.ovsdb ? new OvnPorts(ovn, this.tag) : undefined;
    this.ovn = this.ovnPorts && this.ovnHandover(this.ovnPorts);
  }

  private onOvn(networkId: string): boolean {
    return this.ovnPorts?.switchOf(networkId) !== undefined;
  }

  /** The networks that are Linux bridges of the fabric. */
  private get bridged() {
    return this.catalog.networks.filter((n) => !this.onOvn(n.id));
  }

  private ovnHandover(ports: OvnPorts): OvnVipHandover {
    const netns = (amphoraId: string) => amphoraNamespace(this.fabric, amphoraId);
    // A new MAC makes the namespace announce every address of the interface at it (arp_notify; ndisc_notify for IPv6).
    const announceAt = async (amphoraId: string, mac: string) => {
      if (!(await linkExists(VIP_INTERFACE, netns(amphoraId)))) return;
      await ip('netns', 'exec', netns(amphoraId), 'sh', '-c', `echo 1 > /proc/sys/net/ipv6/conf/${VIP_INTERFACE}/ndisc_notify`);
      await ip('-n', netns(amphoraId), 'link', 'set', 'dev', VIP_INTERFACE, 'address', mac);
    };
    return {
      onOvn: (subnetId) => this.onOvn(this.amphoraPorts.subnet(subnetId).network_id),
      relay: async (amphoraId, on) => {
        const v = on ? 1 : 0;
        // Redirects would tell clients to skip the amphora for a member's address: they cannot, the switch rewrote it.
        await ip('netns', 'exec', netns(amphoraId), 'sh', '-c', `echo 0 > /proc/sys/net/ipv4/conf/all/send_redirects && echo 0 > /proc/sys/net/ipv4/conf/${VIP_INTERFACE}/send_redirects && echo ${v} > /proc/sys/net/ipv4/ip_forward && echo ${v} > /proc/sys/net/ipv6/conf/all/forwarding`);
      },
      handOver: announceAt,
      reclaim: async (amphoraId) => {
        const mac = await ports.portMac(amphoraPortEnd(amphoraId));
        if (mac) await announceAt(amphoraId, mac);
      },
      routerMac: (subnetId) => ports.routerMac(this.amphoraPorts.subnet(subnetId).network_id),
    };
  }

  /** Where amphorae plug their management port (the netns compute driver's `management`). */
  get management(): BridgeAttachment {
    return { namespace: this.fabric, bridge: MANAGEMENT_BRIDGE, prefixLength: this.prefixLength };
  }

  /** The controller's addresses on tenant networks: the subnets' gateways, on its legs. */
  get legAddresses(): string[] {
    return this.catalog.subnets.flatMap((sub) => (sub.gateway_ip && !this.onOvn(sub.network_id) ? [sub.gateway_ip] : []));
  }

  /**
   * Builds the fabric, the management network and the tenant networks, or completes what a crash left
   * half built; what exists is kept, so amphorae running on it stay connected across controller restarts.
   */
  async open(): Promise<void> {
    const why = namespacesUnavailable();
    if (why) throw new Error(`network.driver bridge cannot build its networks: ${why}`);
    await this.checkAddressesFree();
    await ensureNetns(this.fabric);
    await this.ensureBridge(MANAGEMENT_BRIDGE);
    await this.ensureLeg(this.hostLink, CONTROLLER_PORT, MANAGEMENT_BRIDGE, [`${this.controllerAddress}/${this.prefixLength}`]);
    for (const network of this.bridged) {
      await this.ensureBridge(networkBridge(network.id));
      const gateways = this.catalog.subnets.filter((sub) => sub.network_id === network.id && sub.gateway_ip).map((sub) => `${sub.gateway_ip}/${sub.cidrParsed.prefix}`);
      if (gateways.length) await this.ensureLeg(this.legName(network.id), legFabricEnd(network.id), networkBridge(network.id), gateways);
    }
  }

  /** Removes the fabric and the controller's veths: every amphora still plugged in loses its networks. */
  async destroy(): Promise<void> {
    await deleteLink(this.hostLink);
    for (const network of this.bridged) await deleteLink(this.legName(network.id));
    await deleteNetns(this.fabric);
  }

  /** The bridge of a configured network, where test namespaces (or operators' servers) plug in. */
  tenantBridge(networkId: string): BridgeAttachment & { gateway: string | null } {
    const subnet = this.catalog.pickSubnet(networkId);
    if (!subnet) throw new Error(`network ${networkId} is not in network.networks, or has no subnet`);
    if (this.onOvn(networkId)) throw new Error(`network ${networkId} is OVN logical switch ${this.ovnPorts!.switchOf(networkId)}, not a bridge: plug into it through OVN`);
    return { namespace: this.fabric, bridge: networkBridge(networkId), prefixLength: subnet.cidrParsed.prefix, gateway: subnet.gateway_ip };
  }

  allocateManagementAddress(trx: Transaction<Database>, amphoraId: string): Promise<string> {
    return this.ports.allocate(trx, amphoraId);
  }

  releaseManagementAddress(db: Kysely<Database>, amphoraId: string): Promise<void> {
    return this.ports.release(db, amphoraId);
  }

  /**
   * The amphora's base port on the VIP network as its `eth1`: its own address, the VIPs unless they
   * float, and a default route through the subnet's gateway. Plugged anew when a resumed step finds it
   * plugged: the addresses are those of the rows either way. The amphora's namespace announces
   * (arp_notify) the addresses once its port forwards, so the network learns a failover's new amphora,
   * or a new load balancer's amphora on a VIP another held before.
   */
  async plugVip(db: Kysely<Database>, plug: VipPlug): Promise<BasePort> {
    const port = await this.amphoraPorts.ensure(db, plug.amphoraId, plug.subnetId, VRRP_DEVICE_OWNER);
    const vips = plug.floating ? [] : vipAddressCommands(plug.addresses, 'add');
    const route = port.subnet.gateway_ip && port.subnet.ip_version === 4 ? [`route replace default via ${port.subnet.gateway_ip} dev ${VIP_INTERFACE}`] : [];
    await this.plugAmphora(plug.amphoraId, port, amphoraPortEnd(plug.amphoraId), VIP_INTERFACE, vips, route, plug.addresses);
    return { portId: port.id, address: port.address, interface: VIP_INTERFACE };
  }

  async claimVip(_db: Kysely<Database>, plug: Omit<VipPlug, 'floating'>): Promise<void> {
    const netns = amphoraNamespace(this.fabric, plug.amphoraId);
    await ipBatch(netns, vipAddressCommands(plug.addresses, 'replace'));
    // As after a plug: setting the MAC the interface has makes the namespace announce its addresses (arp_notify).
    await ip('-n', netns, 'link', 'set', 'dev', VIP_INTERFACE, 'address', await linkMac(VIP_INTERFACE, netns));
  }

  async unplugVip(db: Kysely<Database>, amphoraId: string): Promise<void> {
    await this.unplugAmphora(amphoraPortEnd(amphoraId));
    await this.amphoraPorts.release(db, amphoraId, VRRP_DEVICE_OWNER);
    for (const port of await this.amphoraPorts.memberPorts(db, amphoraId)) await this.unplugMember(db, amphoraId, port.subnet.network_id, port.subnet.id);
  }

  /**
   * A port on each member network the amphora must reach (but the VIP network, where `eth1` is), and
   * none on the others: what Octavia's network driver does when members come and go.
   */
  async plugMemberNetworks(db: Kysely<Database>, amphoraId: string, vipSubnetId: string, memberAddresses: readonly string[]): Promise<void> {
    const vipNetwork = this.amphoraPorts.subnet(vipSubnetId).network_id;
    const wanted = new Map<string, string>();
    for (const address of memberAddresses) {
      const subnet = this.catalog.subnets.find((sub) => cidrContains(sub.cidrParsed, address));
      if (subnet && subnet.network_id !== vipNetwork && !wanted.has(subnet.network_id)) wanted.set(subnet.network_id, subnet.id);
    }
    const held = await this.amphoraPorts.memberPorts(db, amphoraId);
    for (const port of held) if (wanted.get(port.subnet.network_id) !== port.subnet.id) await this.unplugMember(db, amphoraId, port.subnet.network_id, port.subnet.id);
    for (const [networkId, subnetId] of wanted) {
      if (held.some((p) => p.subnet.id === subnetId) && (await linkExists(amphoraPortEnd(amphoraId, networkId), this.fabric))) continue;
      const port = await this.amphoraPorts.ensure(db, amphoraId, subnetId, MEMBER_DEVICE_OWNER);
      await this.plugAmphora(amphoraId, port, amphoraPortEnd(amphoraId, networkId), memberInterface(networkId), [], [], []);
    }
  }

  private async unplugMember(db: Kysely<Database>, amphoraId: string, networkId: string, subnetId: string): Promise<void> {
    await this.unplugAmphora(amphoraPortEnd(amphoraId, networkId));
    await this.amphoraPorts.release(db, amphoraId, MEMBER_DEVICE_OWNER, subnetId);
  }

  /**
   * A veth from the port's network bridge to `inside` of the amphora's namespace, holding the port's address
   * and then `addresses`; `routes` once it is up. Port security lets through frames of the inside end's MAC
   * from the port's address and `allowedPairs` only (Neutron's allowed address pairs: the VIP).
   */
  private async plugAmphora(amphoraId: string, port: AmphoraPort, fabricEnd: string, inside: string, addresses: string[], routes: string[], allowedPairs: readonly string[]): Promise<void> {
    const netns = amphoraNamespace(this.fabric, amphoraId);
    if (!netnsExists(netns)) throw new Error(`amphora ${amphoraId} has no network namespace ${netns} to plug its port into: it is not running (compute.driver netns boots it first)`);
    await this.unplugAmphora(fabricEnd);
    if (this.ovnPorts && this.onOvn(port.subnet.network_id)) return this.plugOnOvn(this.ovnPorts, netns, port, fabricEnd, inside, addresses, routes);
    await ipBatch(this.fabric, [`link add ${fabricEnd} type veth peer name ${inside} netns ${netns}`]);
    const mac = await linkMac(inside, netns);
    await addPortSecurity(this.fabric, fabricEnd, { mac, addresses: [port.address, ...allowedPairs] });
    await ipBatch(this.fabric, [`link set ${fabricEnd} master ${networkBridge(port.subnet.network_id)} up`]);
    await ipBatch(netns, [`address add ${port.address}/${port.subnet.cidrParsed.prefix} dev ${inside}`, ...addresses]);
    await ipBatch(netns, [`link set ${inside} up`, ...routes]);
    // The announcement at link up goes out before the bridge enables the port (it does once it sees
    // the veth's carrier) and is lost: neighbours keep the MAC of the address's last holder, the
    // previous amphora of a reused VIP, for as long as they trust it. Setting the MAC it has makes
    // the namespace (arp_notify) announce again, through the port forwarding by then.
    await this.untilForwarding(fabricEnd);
    await ip('-n', netns, 'link', 'set', 'dev', inside, 'address', mac);
  }

  /** As plugAmphora, on an OVN switch: the outer end on the integration bridge, the switch port holding its MAC and address. */
  private async plugOnOvn(ports: OvnPorts, netns: string, port: AmphoraPort, outerEnd: string, inside: string, addresses: string[], routes: string[]): Promise<void> {
    await ip(...(ports.namespace ? ['-n', ports.namespace] : []), 'link', 'add', outerEnd, 'type', 'veth', 'peer', 'name', inside, 'netns', netns);
    const mac = await linkMac(inside, netns);
    // OVS's userspace datapath passes on partially checksummed packets as they are: TCP through it fails
    // unless the kernel fills in the checksums. Harmless with the kernel datapath.
    await ip('netns', 'exec', netns, 'ethtool', '-K', inside, 'tx', 'off').catch((e: Error) => {
      throw new Error(`${e.message} (ethtool is needed to plug amphorae into OVN: apt-get install ethtool)`);
    });
    await ipBatch(netns, [`address add ${port.address}/${port.subnet.cidrParsed.prefix} dev ${inside}`, ...addresses]);
    await ipBatch(netns, [`link set ${inside} up`, ...routes]);
    await ports.plug(port.subnet.network_id, outerEnd, mac, port.address);
    // Announced again once OVN forwards (see plugAmphora).
    await ip('-n', netns, 'link', 'set', 'dev', inside, 'address', mac);
  }

  private async untilForwarding(fabricEnd: string): Promise<void> {
    const deadline = Date.now() + PORT_FORWARDING_MS;
    for (;;) {
      const [link] = JSON.parse(await ip('-n', this.fabric, '-j', '-d', 'link', 'show', 'dev', fabricEnd)) as Array<{ linkinfo?: { info_slave_data?: { state?: string } } }>;
      const state = link?.linkinfo?.info_slave_data?.state;
      if (state === 'forwarding') return;
      if (Date.now() > deadline) throw new Error(`port ${fabricEnd} of fabric ${this.fabric} is ${state ?? 'in no bridge'}, not forwarding, ${PORT_FORWARDING_MS} ms after it came up: see \`bridge -n ${this.fabric} link\``);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  private async unplugAmphora(fabricEnd: string): Promise<void> {
    await deleteLink(fabricEnd, this.fabric);
    await removePortSecurity(this.fabric, fabricEnd);
    // plugOnOvn makes the outer end before the switch port and unplug removes it last: no end, nothing on OVN.
    const outer = this.ovnPorts?.namespace ?? undefined;
    if (!this.ovnPorts || !(await linkExists(fabricEnd, outer))) return;
    await this.ovnPorts.unplug(fabricEnd);
    await deleteLink(fabricEnd, outer);
  }

  /**
   * The amphora's security group (./security-groups.ts) on its management port, its base port (when
   * plugged) and its member-network ports. Every configuration push asks for it, a member change as
   * much as a new listener: the rules are written only when they differ from those last written into
   * this very namespace (a rebooted amphora's is a new one, with no table).
   */
  async updateSecurityGroup(db: Kysely<Database>, amphoraId: string, group: SecurityGroup): Promise<void> {
    const netns = amphoraNamespace(this.fabric, amphoraId);
    const [plugged, memberPorts] = await Promise.all([this.amphoraPorts.isPlugged(db, amphoraId, VRRP_DEVICE_OWNER), this.amphoraPorts.memberPorts(db, amphoraId)]);
    const script = renderAmphoraFirewall({
      management: {
        iface: MANAGEMENT_INTERFACE,
        controller: this.controllerAddress,
        agentPort: group.agentPort,
        heartbeatTargets: group.heartbeatTargets.map((t) => {
          const { host, port } = parseHostPort(t, 'amphora.healthListen');
          return { address: host, port };
        }),
      },
      vip: plugged ? { iface: VIP_INTERFACE, ...this.vipAdmits(group), vrrpPeers: group.peers } : null,
      members: memberPorts.map((p) => ({ iface: memberInterface(p.subnet.network_id) })),
      controlPlane: this.legAddresses,
    });
    const namespace = namespaceIdentity(netns);
    const last = this.firewalls.get(amphoraId);
    if (last && last.namespace === namespace && last.script === script) return;
    await nftApply(netns, script);
    this.firewalls.set(amphoraId, { namespace, script });
  }

  /**
   * What the VIP port admits besides VRRP: the pair's HAProxy peers, and the listeners from their allowed
   * CIDRs or, when the load balancer names security groups of its own, their ingress rules instead.
   */
  private vipAdmits(group: SecurityGroup): { listeners: VipListener[]; groupRules: SecurityGroupRule[] } {
    const peersPort = { protocol: 'tcp' as const, port: group.peersPort, allowedCidrs: group.peers.map((p) => `${p}/${ipVersion(p) === 6 ? 128 : 32}`) };
    const peers = group.peers.length ? [peersPort] : [];
    if (!group.vipSecurityGroups.length) return { listeners: [...group.listeners, ...peers], groupRules: [] };
    const groupRules = group.vipSecurityGroups.flatMap((id) => {
      const configured = this.catalog.securityGroup(id);
      if (!configured) throw new Error(`security group ${id} of the load balancer's vip_sg_ids is no longer in network.securityGroups: put it back, or set the load balancer's vip_sg_ids without it`);
      return configured.rules ?? [];
    });
    return { listeners: peers, groupRules };
  }

  private legName(networkId: string): string {
    return `o${this.tag.slice(0, 6)}${hex(networkId, 6)}`;
  }

  private async ensureBridge(bridge: string): Promise<void> {
    if (!(await linkExists(bridge, this.fabric))) await ip('-n', this.fabric, 'link', 'add', bridge, 'type', 'bridge');
    await ip('-n', this.fabric, 'link', 'set', bridge, 'up');
  }

  /** A veth from `bridge` in the fabric (end `fabricEnd`) to the controller's namespace (end `hostEnd`), holding `addresses`. */
  private async ensureLeg(hostEnd: string, fabricEnd: string, bridge: string, addresses: string[]): Promise<void> {
    if (!(await linkExists(hostEnd))) {
      await deleteLink(fabricEnd, this.fabric);
      await ip('link', 'add', hostEnd, 'type', 'veth', 'peer', 'name', fabricEnd, 'netns', this.fabric);
    }
    await ip('-n', this.fabric, 'link', 'set', fabricEnd, 'master', bridge, 'up');
    for (const address of addresses) await ip('address', 'replace', address, 'dev', hostEnd);
    await ip('link', 'set', hostEnd, 'up');
  }

  /**
   * Another interface of the controller's namespace holding an address of a network the controller
   * gets a leg on would make routes ambiguous.
   */
  private async checkAddressesFree(): Promise<void> {
    const ours = new Set([this.hostLink, ...this.bridged.map((n) => this.legName(n.id))]);
    const checked = [{ cidr: this.config.cidr, what: 'amphora.managementNetwork.cidr', remedy: 'set amphora.managementNetwork to a free range' }];
    for (const sub of this.catalog.subnets)
      if (sub.gateway_ip && !this.onOvn(sub.network_id)) checked.push({ cidr: sub.cidr, what: `subnet ${sub.id} (${sub.name})`, remedy: 'give the subnet a free range in network.networks, or no gateway_ip' });
    for (const { cidr, what, remedy } of checked) {
      const lines = (await ip('-o', 'address', 'show', 'to', cidr)).split('\n').filter(Boolean);
      const other = lines.map((line) => line.split(/\s+/)[1]!).find((link) => !ours.has(link));
      if (other) throw new Error(`${what} ${cidr} is already on interface ${other} of this machine (another Ostia, or a network of its own): ${remedy}`);
    }
  }
}

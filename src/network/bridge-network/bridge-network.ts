/**
 * Network driver `bridge`: Ostia's networks are Linux bridges in a network namespace of its own,
 * the fabric (`ostia-<tag>`, the tag from the data directory, so two Ostias or two test runs never
 * share one). This step builds the management network: bridge `br-mgmt` with
 * `amphora.managementNetwork.cidr`, and a veth whose fabric end is a port of the bridge and whose
 * other end, in the controller's own namespace, holds the CIDR's first address. The controller's
 * agent client and heartbeat receiver use that address as they would any other, and nothing else
 * of the machine is on the network. Amphorae (compute driver `netns`) plug into the bridge with
 * the addresses allocated here as `port` rows (../management-ports.ts), so a restarted
 * controller finds them where it left them.
 *
 * Tenant networks (VIP ports, member subnets) and security groups as nftables rules are the next
 * steps of this driver; until then it plugs no VIP.
 */
import type { Kysely, Transaction } from 'kysely';
import { dataDirTag } from '../../config.js';
import type { Database } from '../../db/schema.js';
import { bigIntToIp, cidrContains, ipToBigInt, parseCidr } from '../../domain/net.js';
import { deleteLink, deleteNetns, ensureNetns, ip, linkExists, namespacesUnavailable, type BridgeAttachment } from '../../linux-net/ip.js';
import { checkManagementNetwork, ManagementPorts, type ManagementNetworkConfig } from '../management-ports.js';
import type { NetworkDriver } from '../network-driver.js';

export const MANAGEMENT_BRIDGE = 'br-mgmt';
/** The fabric end of the controller's veth. */
const CONTROLLER_PORT = 'controller';
const LOOPBACK_V4 = parseCidr('127.0.0.0/8')!;

export class BridgeNetwork implements NetworkDriver {
  /** The fabric namespace. */
  readonly fabric: string;
  /** The controller's address on the management network: the CIDR's first. */
  readonly controllerAddress: string;
  private readonly prefixLength: number;
  /** The controller's end of its veth, in its own namespace (named like the fabric: at most 15 characters). */
  private readonly hostLink: string;
  private readonly ports: ManagementPorts;

  constructor(
    dataDir: string,
    private readonly config: ManagementNetworkConfig,
  ) {
    const cidr = parseCidr(config.cidr);
    checkManagementNetwork(config, (c) =>
      c.version !== 4 || cidrContains(LOOPBACK_V4, bigIntToIp(c.network, 4))
        ? 'must be IPv4 outside 127.0.0.0/8: the bridge network driver puts it on a Linux bridge'
        : c.prefix < 16 || c.prefix > 29
          ? 'must have a prefix from /16 to /29'
          : null,
    );
    this.prefixLength = cidr!.prefix;
    this.controllerAddress = bigIntToIp(cidr!.network + 1n, 4);
    if (ipToBigInt(config.start) <= cidr!.network + 1n)
      throw new Error(`amphora.managementNetwork.start ${config.start} must come after ${this.controllerAddress}, the controller's address on the management network`);
    this.fabric = `ostia-${dataDirTag(dataDir)}`;
    this.hostLink = this.fabric;
    this.ports = new ManagementPorts(config);
  }

  /** Where amphorae plug their management port (the netns compute driver's `management`). */
  get management(): BridgeAttachment {
    return { namespace: this.fabric, bridge: MANAGEMENT_BRIDGE, prefixLength: this.prefixLength };
  }

  /**
   * Builds the fabric and the management network, or completes what a crash left half built;
   * what exists is kept, so amphorae running on it stay connected across controller restarts.
   */
  async open(): Promise<void> {
    const why = namespacesUnavailable();
    if (why) throw new Error(`network.driver bridge cannot build its networks: ${why}`);
    await this.checkAddressFree();
    await ensureNetns(this.fabric);
    if (!(await linkExists(MANAGEMENT_BRIDGE, this.fabric))) await ip('-n', this.fabric, 'link', 'add', MANAGEMENT_BRIDGE, 'type', 'bridge');
    await ip('-n', this.fabric, 'link', 'set', MANAGEMENT_BRIDGE, 'up');
    if (!(await linkExists(this.hostLink))) {
      await deleteLink(CONTROLLER_PORT, this.fabric);
      await ip('link', 'add', this.hostLink, 'type', 'veth', 'peer', 'name', CONTROLLER_PORT, 'netns', this.fabric);
    }
    await ip('-n', this.fabric, 'link', 'set', CONTROLLER_PORT, 'master', MANAGEMENT_BRIDGE, 'up');
    await ip('address', 'replace', `${this.controllerAddress}/${this.prefixLength}`, 'dev', this.hostLink);
    await ip('link', 'set', this.hostLink, 'up');
  }

  /** Removes the fabric and the controller's veth: every amphora still plugged in loses its management network. */
  async destroy(): Promise<void> {
    await deleteLink(this.hostLink);
    await deleteNetns(this.fabric);
  }

  allocateManagementAddress(trx: Transaction<Database>, amphoraId: string): Promise<string> {
    return this.ports.allocate(trx, amphoraId);
  }

  releaseManagementAddress(db: Kysely<Database>, amphoraId: string): Promise<void> {
    return this.ports.release(db, amphoraId);
  }

  async plugVip(amphoraId: string, vip: string): Promise<void> {
    throw new Error(
      `cannot plug VIP ${vip} into amphora ${amphoraId}: the bridge network driver does not build tenant networks yet (VIP ports come in a later step of issue 13); use network.driver catalog with compute.driver local`,
    );
  }

  /** plugVip changed nothing, so there is nothing to undo. */
  async unplugVip(): Promise<void> {}

  /** Another interface of the controller's namespace holding an address of the network would make routes to amphorae ambiguous. */
  private async checkAddressFree(): Promise<void> {
    const lines = (await ip('-o', '-4', 'address', 'show', 'to', this.config.cidr)).split('\n').filter(Boolean);
    const other = lines.map((line) => line.split(/\s+/)[1]!).find((link) => link !== this.hostLink);
    if (other)
      throw new Error(
        `amphora.managementNetwork.cidr ${this.config.cidr} is already on interface ${other} of this machine (another Ostia, or a network of its own): set amphora.managementNetwork to a free range`,
      );
  }
}

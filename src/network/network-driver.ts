/**
 * Network drivers give amphorae their addresses: a management address the controller
 * reaches the agent on, and the VIPs HAProxy binds. Management addresses are `port` rows
 * written in the caller's transaction, so a failed flow step leaves none behind and two
 * amphorae can never be handed the same one.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/schema.js';

/** What plugVip is asked to plug: the load balancer's VIP addresses, on its VIP subnet, into one amphora. */
export interface VipPlug {
  amphoraId: string;
  /** The subnet of the first address; the others are on the same network, as Octavia requires of additional VIPs. */
  subnetId: string;
  addresses: readonly string[];
  /**
   * keepalived holds the addresses and moves them between the two amphorae of an ACTIVE_STANDBY pair:
   * the port must let them through, but the driver does not put them on the interface.
   */
  floating: boolean;
}

/** The amphora's own port on the VIP network (Octavia's VRRP or base port), where a driver makes one. */
export interface BasePort {
  portId: string;
  address: string;
  /** The interface inside the amphora: keepalived's `interface`, the amphora API's `vrrp_interface`. */
  interface: string;
}

/**
 * What may reach an amphora, as Octavia's VIP security group says it: its listeners (from their allowed
 * CIDRs), the other amphorae of its pair (VRRP and HAProxy peers), and the controller on the agent port;
 * and where it may send heartbeats.
 */
export interface SecurityGroup {
  listeners: Array<{ protocol: 'tcp' | 'udp' | 'sctp'; port: number; allowedCidrs: string[] }>;
  /**
   * The load balancer's `vip_sg_ids`: when any, their ingress rules, not the listeners, say what reaches the
   * VIP port (Octavia then writes no listener rule into its own group, only the pair's).
   */
  vipSecurityGroups: string[];
  /** The base addresses of the other amphorae of an ACTIVE_STANDBY pair. */
  peers: string[];
  peersPort: number;
  agentPort: number;
  /** `host:port` of the health managers. */
  heartbeatTargets: string[];
}

/**
 * A VIP moving between amphorae and OVN on one logical switch (a load balancer's move between the
 * amphora and ovn providers): the drivers whose amphora ports are OVN switch ports have this.
 */
export interface OvnVipHandover {
  /** Whether amphorae on the network of `subnetId` are ports of an OVN logical switch. */
  onOvn(subnetId: string): boolean;
  /**
   * The amphora forwards what reaches it for other addresses (on) or not (off): while OVN's load
   * balancer and the amphora both serve the VIP, clients still sending to the amphora's MAC have
   * their packets rewritten to a member by the switch, and the amphora passes them on.
   */
  relay(amphoraId: string, on: boolean): Promise<void>;
  /** The amphora announces its addresses at `mac` (the router's, which OVN answers the VIP with), so clients send there. */
  handOver(amphoraId: string, mac: string): Promise<void>;
  /** Undoes handOver: the amphora announces its addresses at its own MAC (its switch port's) again. */
  reclaim(amphoraId: string): Promise<void>;
  /** The MAC of the router on the switch of `subnetId`'s network. */
  routerMac(subnetId: string): Promise<string>;
}

export interface NetworkDriver {
  /** Present when amphora ports are OVN switch ports: see OvnVipHandover. */
  readonly ovn?: OvnVipHandover;
  /** The amphora's management address; asking again for the same amphora returns the same address. */
  allocateManagementAddress(trx: Transaction<Database>, amphoraId: string): Promise<string>;
  /** Frees it; releasing an amphora that holds none succeeds. */
  releaseManagementAddress(db: Kysely<Database>, amphoraId: string): Promise<void>;
  /** Makes the VIPs reachable on the amphora, so its HAProxy can bind them; plugging again changes nothing. */
  plugVip(db: Kysely<Database>, plug: VipPlug): Promise<BasePort | null>;
  /**
   * The amphora takes VIPs it was plugged with `floating` (let through, not held) and announces them,
   * so its neighbours send it the traffic: a migration's new amphora serves before it does this.
   * Claiming again changes nothing.
   */
  claimVip(db: Kysely<Database>, plug: Omit<VipPlug, 'floating'>): Promise<void>;
  /** Undoes plugVip and plugMemberNetworks; unplugging an amphora that has nothing plugged succeeds. */
  unplugVip(db: Kysely<Database>, amphoraId: string): Promise<void>;
  /**
   * Gives the amphora a port on the network of each member address (but the VIP network's) and none on
   * the others, as members come and go; addresses on no configured subnet are reached by route.
   */
  plugMemberNetworks(db: Kysely<Database>, amphoraId: string, vipSubnetId: string, memberAddresses: readonly string[]): Promise<void>;
  /** Applies the amphora's security group to its ports, replacing the previous one at once. */
  updateSecurityGroup(db: Kysely<Database>, amphoraId: string, group: SecurityGroup): Promise<void>;
}

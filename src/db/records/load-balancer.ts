import type { Topology, VnicType } from '../../domain/enums.js';
import { codec, type Row } from './codec.js';
import type { TreeObject } from './tree-object.js';

/** A VIP beyond the first, each on its own subnet of the VIP network. */
export interface AdditionalVip {
  subnet_id: string;
  ip_address: string;
  port_id: string;
}

export interface LoadBalancerRecord extends TreeObject {
  name: string;
  description: string;
  vip_address: string | null;
  vip_port_id: string | null;
  vip_subnet_id: string | null;
  vip_network_id: string | null;
  vip_qos_policy_id: string | null;
  vip_sg_ids: string[];
  vip_vnic_type: VnicType;
  additional_vips: AdditionalVip[];
  provider: string;
  flavor_id: string | null;
  availability_zone: string | null;
  /** Chosen by a migration apart from the flavor; null: what the flavor (or the default) says. */
  topology: Topology | null;
  /** Why the last operation failed, or null: an extension old clients ignore. */
  status_reason: string | null;
  /** Generation of the configuration pushed to its amphorae; bumped by every change. */
  config_version: number;
}

export type LoadBalancerRow = Row<LoadBalancerRecord>;

export const loadBalancerCodec = codec<LoadBalancerRecord>({ admin_state_up: 'bool', vip_sg_ids: 'json', additional_vips: 'json' });

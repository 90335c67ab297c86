import type { AmphoraRole, AmphoraStatus } from '../../domain/enums.js';
import { timestamp } from '../../domain/time.js';
import { codec, type Row } from './codec.js';
import type { Timestamps } from './tree-object.js';

export interface AmphoraRecord extends Timestamps {
  id: string;
  load_balancer_id: string | null;
  compute_id: string | null;
  lb_network_ip: string | null;
  vrrp_ip: string | null;
  ha_ip: string | null;
  vrrp_port_id: string | null;
  ha_port_id: string | null;
  cert_expiration: string | null;
  /** Its agent certificate is being rotated: the rotation owns it meanwhile. */
  cert_busy: boolean;
  role: AmphoraRole | null;
  status: AmphoraStatus;
  vrrp_interface: string | null;
  vrrp_id: number | null;
  vrrp_priority: number | null;
  cached_zone: string | null;
  image_id: string | null;
  compute_flavor: string | null;
  /** Epoch ms of the last accepted heartbeat, and its sequence number (replay guard). */
  last_heartbeat_at: number | null;
  last_heartbeat_seq: number | null;
  /** The config version this amphora last acknowledged. */
  config_version: number;
  /** https://<management address>:<port> of its agent. */
  agent_url: string | null;
  cert_serial: string | null;
  status_reason: string | null;
  /** The job that built or adopted it, and the slot of that job's build it fills (see the amphora steps' rounds); null for a spare. */
  job_id: string | null;
  job_slot: number | null;
}

export type AmphoraRow = Row<AmphoraRecord>;

export const amphoraCodec = codec<AmphoraRecord>({ cert_busy: 'bool' });

/** https://<management address>:<port>, an IPv6 address bracketed. */
export const agentUrlOf = (address: string, port: number): string => `https://${address.includes(':') ? `[${address}]` : address}:${port}`;

/** A new amphora on its management address, before its boot fills its compute, certificate and VRRP columns. */
export function newAmphoraRow(id: string, address: string, agentPort: number, given: Partial<AmphoraRow> & Pick<AmphoraRow, 'status'>): AmphoraRow {
  return {
    id,
    load_balancer_id: null,
    compute_id: null,
    lb_network_ip: address,
    vrrp_ip: null,
    ha_ip: null,
    vrrp_port_id: null,
    ha_port_id: null,
    cert_expiration: null,
    cert_busy: 0,
    role: null,
    vrrp_interface: null,
    vrrp_id: null,
    vrrp_priority: null,
    cached_zone: null,
    image_id: null,
    compute_flavor: null,
    last_heartbeat_at: null,
    last_heartbeat_seq: null,
    config_version: 0,
    agent_url: agentUrlOf(address, agentPort),
    cert_serial: null,
    status_reason: null,
    job_id: null,
    job_slot: null,
    created_at: timestamp(),
    updated_at: null,
    ...given,
  };
}

/** Counters per listener and amphora, accumulated from heartbeat deltas. */
export interface ListenerStatisticsRecord {
  listener_id: string;
  amphora_id: string;
  bytes_in: number;
  bytes_out: number;
  active_connections: number;
  total_connections: number;
  request_errors: number;
  updated_at: number;
}

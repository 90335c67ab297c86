/** Amphora rows → the wire form (admin API). */
import { amphoraCodec, type AmphoraRow } from '../../db/records/amphora.js';
import { isoFromEpochMs } from '../../domain/time.js';

/**
 * The wire key is `loadbalancer_id` (the api-ref's `load_balancer_id` example is wrong). Ostia adds
 * when its last heartbeat arrived and why it was failed over or stopped (`status_reason`).
 */
export function amphoraView(row: AmphoraRow) {
  return {
    id: row.id,
    loadbalancer_id: row.load_balancer_id,
    compute_id: row.compute_id,
    lb_network_ip: row.lb_network_ip,
    vrrp_ip: row.vrrp_ip,
    ha_ip: row.ha_ip,
    vrrp_port_id: row.vrrp_port_id,
    ha_port_id: row.ha_port_id,
    cert_expiration: row.cert_expiration,
    cert_busy: amphoraCodec.decode(row).cert_busy,
    role: row.role,
    status: row.status,
    vrrp_interface: row.vrrp_interface,
    vrrp_id: row.vrrp_id,
    vrrp_priority: row.vrrp_priority,
    cached_zone: row.cached_zone,
    created_at: row.created_at,
    updated_at: row.updated_at,
    image_id: row.image_id,
    compute_flavor: row.compute_flavor,
    last_heartbeat_at: row.last_heartbeat_at === null ? null : isoFromEpochMs(row.last_heartbeat_at),
    status_reason: row.status_reason,
  };
}

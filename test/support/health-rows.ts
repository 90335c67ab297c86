/**
 * Amphora rows written straight into the database for health-manager and housekeeping tests,
 * which exercise what a real provider leaves behind without booting amphorae.
 */
import { randomUUID } from 'node:crypto';
import type { AmphoraRow } from '../../src/db/records/amphora.js';
import type { Harness } from './harness.js';

export async function insertAmphora(h: Harness, lbId: string | null, patch: Partial<AmphoraRow> = {}): Promise<AmphoraRow> {
  const row: AmphoraRow = {
    id: randomUUID(),
    load_balancer_id: lbId,
    compute_id: randomUUID(),
    lb_network_ip: '127.80.0.10',
    vrrp_ip: null,
    ha_ip: null,
    vrrp_port_id: null,
    ha_port_id: null,
    cert_expiration: '2030-01-01T00:00:00',
    cert_busy: 0,
    role: 'STANDALONE',
    status: 'ALLOCATED',
    vrrp_interface: null,
    vrrp_id: null,
    vrrp_priority: null,
    cached_zone: null,
    image_id: null,
    compute_flavor: null,
    last_heartbeat_at: Date.now(),
    last_heartbeat_seq: null,
    config_version: 0,
    agent_url: null,
    cert_serial: null,
    status_reason: null,
    created_at: '2025-01-01T00:00:00',
    updated_at: null,
    ...patch,
  };
  await h.runtime.db.kysely.insertInto('amphora').values(row).execute();
  return row;
}

export async function amphoraRow(h: Harness, id: string): Promise<AmphoraRow | undefined> {
  return h.runtime.db.kysely.selectFrom('amphora').selectAll().where('id', '=', id).executeTakeFirst();
}

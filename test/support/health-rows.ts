/**
 * Amphora rows written straight into the database for health-manager and housekeeping tests,
 * which exercise what a real provider leaves behind without booting amphorae.
 */
import { randomUUID } from 'node:crypto';
import { newAmphoraRow, type AmphoraRow } from '../../src/db/records/amphora.js';
import type { Harness } from './harness.js';

export async function insertAmphora(h: Harness, lbId: string | null, patch: Partial<AmphoraRow> = {}): Promise<AmphoraRow> {
  const row = newAmphoraRow(randomUUID(), '127.80.0.10', 9443, {
    load_balancer_id: lbId,
    compute_id: randomUUID(),
    cert_expiration: '2030-01-01T00:00:00',
    role: 'STANDALONE',
    status: 'ALLOCATED',
    last_heartbeat_at: Date.now(),
    agent_url: null,
    created_at: '2025-01-01T00:00:00',
    ...patch,
  });
  await h.runtime.db.kysely.insertInto('amphora').values(row).execute();
  return row;
}

export async function amphoraRow(h: Harness, id: string): Promise<AmphoraRow | undefined> {
  return h.runtime.db.kysely.selectFrom('amphora').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Rows → the member's wire form (which has no `pool_id`, as in Octavia). */
import type { Kysely, Transaction } from 'kysely';
import type { Database, MemberTable } from '../../db/schema.js';
import { readTags } from '../tags.js';

export type MemberRow = MemberTable;

export interface MemberRelations {
  tags: Map<string, string[]>;
}

export async function memberRelations(db: Kysely<Database> | Transaction<Database>, ids: string[]): Promise<MemberRelations> {
  return { tags: await readTags(db, ids) };
}

export function memberView(row: MemberRow, rel: MemberRelations) {
  return {
    id: row.id,
    name: row.name,
    operating_status: row.operating_status,
    provisioning_status: row.provisioning_status,
    admin_state_up: row.admin_state_up === 1,
    address: row.address,
    protocol_port: row.protocol_port,
    weight: row.weight,
    backup: row.backup === 1,
    subnet_id: row.subnet_id,
    project_id: row.project_id,
    tenant_id: row.project_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
    monitor_address: row.monitor_address,
    monitor_port: row.monitor_port,
    tags: rel.tags.get(row.id) ?? [],
    vnic_type: row.vnic_type,
  };
}

export type MemberView = ReturnType<typeof memberView>;

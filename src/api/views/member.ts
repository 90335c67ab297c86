/** Rows → the member's wire form (which has no `pool_id`, as in Octavia). */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { memberCodec, type MemberRow } from '../../db/records/member.js';
import { readTags } from '../tags.js';
import { treeFields } from './tree-fields.js';


export interface MemberRelations {
  tags: Map<string, string[]>;
}

export async function memberRelations(db: Kysely<Database> | Transaction<Database>, ids: string[]): Promise<MemberRelations> {
  return { tags: await readTags(db, ids) };
}

export function memberView(row: MemberRow, rel: MemberRelations) {
  return {
    ...treeFields(row),
    name: row.name,
    address: row.address,
    protocol_port: row.protocol_port,
    weight: row.weight,
    backup: memberCodec.decode(row).backup,
    subnet_id: row.subnet_id,
    monitor_address: row.monitor_address,
    monitor_port: row.monitor_port,
    tags: rel.tags.get(row.id) ?? [],
    vnic_type: row.vnic_type,
  };
}

export async function renderMembers(db: Kysely<Database> | Transaction<Database>, rows: readonly MemberRow[]) {
  const rel = await memberRelations(db, rows.map((r) => r.id));
  return rows.map((r) => memberView(r, rel));
}

export type MemberView = ReturnType<typeof memberView>;

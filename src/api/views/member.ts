/** Rows → the member's wire form (which has no `pool_id`, as in Octavia). */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { memberCodec, type MemberRow } from '../../db/records/member.js';
import { readTags } from '../tags.js';
import { wants } from '../listing.js';
import { treeView } from './tree-fields.js';


export interface MemberRelations {
  tags: Map<string, string[]>;
}

export async function memberRelations(db: Kysely<Database> | Transaction<Database>, ids: string[], fields?: readonly string[] | null): Promise<MemberRelations> {
  return { tags: await readTags(db, wants(fields, 'tags') ? ids : []) };
}

export function memberView(row: MemberRow, rel: MemberRelations) {
  return treeView(row, {
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
  });
}

export async function renderMembers(db: Kysely<Database> | Transaction<Database>, rows: readonly MemberRow[], fields?: readonly string[] | null) {
  const rel = await memberRelations(db, rows.map((r) => r.id), fields);
  return rows.map((r) => memberView(r, rel));
}

export type MemberView = ReturnType<typeof memberView>;

/** Rows → the L7 rule's wire form. */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import { l7RuleCodec, type L7RuleRow } from '../../db/records/l7rule.js';
import { readTags } from '../tags.js';
import { wants } from '../listing.js';
import { treeView } from './tree-fields.js';


type Q = Kysely<Database> | Transaction<Database>;

export interface L7RuleRelations {
  tags: Map<string, string[]>;
}

export async function l7RuleRelations(db: Q, rows: readonly L7RuleRow[], fields?: readonly string[] | null): Promise<L7RuleRelations> {
  return { tags: await readTags(db, wants(fields, 'tags') ? rows.map((r) => r.id) : []) };
}

/** Rules have no name, no description and no l7policy_id on the wire. */
export function l7RuleView(row: L7RuleRow, rel: L7RuleRelations) {
  return treeView(row, {
    type: row.type,
    compare_type: row.compare_type,
    key: row.key,
    value: row.value,
    invert: l7RuleCodec.decode(row).invert,
    tags: rel.tags.get(row.id) ?? [],
  });
}

export async function renderL7Rules(db: Q, rows: readonly L7RuleRow[], fields?: readonly string[] | null) {
  const rel = await l7RuleRelations(db, rows, fields);
  return rows.map((r) => l7RuleView(r, rel));
}

export type L7RuleView = ReturnType<typeof l7RuleView>;

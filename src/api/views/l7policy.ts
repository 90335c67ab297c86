/** Rows → the L7 policy's wire form, with its rules as ids or (graph response) in full. */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { L7PolicyRow } from '../../db/records/l7policy.js';
import { readTags } from '../tags.js';
import { wants } from '../listing.js';
import type { L7RuleRow } from '../../db/records/l7rule.js';
import { l7RuleView } from './l7rule.js';
import { treeView } from './tree-fields.js';
import { inIds } from '../../db/dialect.js';


type Q = Kysely<Database> | Transaction<Database>;

export interface L7PolicyRelations {
  tags: Map<string, string[]>;
  rules: Map<string, L7RuleRow[]>;
}

/** Tags and rules of many policies in two queries whatever the page size. */
export async function l7PolicyRelations(db: Q, rows: readonly L7PolicyRow[], fields?: readonly string[] | null): Promise<L7PolicyRelations> {
  const ids = rows.map((r) => r.id);
  const rules = new Map<string, L7RuleRow[]>(ids.map((id) => [id, []]));
  if (ids.length && wants(fields, 'rules')) {
    const ruleRows = await db.selectFrom('l7rule').selectAll().where(inIds(db, 'l7policy_id', ids)).orderBy('created_at').orderBy('id').execute();
    for (const r of ruleRows) rules.get(r.l7policy_id)?.push(r);
  }
  return { tags: await readTags(db, wants(fields, 'tags') ? ids : []), rules };
}

function l7PolicyBase(row: L7PolicyRow, tags: Map<string, string[]>) {
  return treeView(row, {
    name: row.name,
    description: row.description,
    action: row.action,
    listener_id: row.listener_id,
    redirect_pool_id: row.redirect_pool_id,
    redirect_url: row.redirect_url,
    redirect_prefix: row.redirect_prefix,
    redirect_http_code: row.redirect_http_code,
    position: row.position,
    tags: tags.get(row.id) ?? [],
  });
}

export function l7PolicyView(row: L7PolicyRow, rel: L7PolicyRelations) {
  return Object.assign(l7PolicyBase(row, rel.tags), { rules: (rel.rules.get(row.id) ?? []).map((r) => ({ id: r.id })) });
}

export async function renderL7Policies(db: Q, rows: readonly L7PolicyRow[], fields?: readonly string[] | null) {
  const rel = await l7PolicyRelations(db, rows, fields);
  return rows.map((r) => l7PolicyView(r, rel));
}

/** The form inside a fully populated LB (graph create response): rules as full objects. */
export function l7PolicyFullView(row: L7PolicyRow, rules: readonly L7RuleRow[], tags: Map<string, string[]>) {
  return Object.assign(l7PolicyBase(row, tags), { rules: rules.map((rule) => l7RuleView(rule, { tags })) });
}

export type L7PolicyView = ReturnType<typeof l7PolicyView>;

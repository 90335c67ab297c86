/** Tags live in their own table so lists can filter on them in SQL. */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import { inIds } from '../db/dialect.js';

type Q = Kysely<Database> | Transaction<Database>;

/** Replaces the tags of `id` (PUT semantics: the list given is the whole list). */
export async function writeTags(db: Q, id: string, tags: readonly string[] | undefined): Promise<void> {
  if (tags === undefined) return;
  await db.deleteFrom('tag').where('resource_id', '=', id).execute();
  const unique = [...new Set(tags)];
  if (unique.length) await db.insertInto('tag').values(unique.map((tag) => ({ resource_id: id, tag }))).execute();
}

/** Tags of many objects in one query. */
export async function readTags(db: Q, ids: readonly string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(ids.map((id) => [id, []]));
  if (!ids.length) return out;
  const rows = await db.selectFrom('tag').select(['resource_id', 'tag']).where(inIds(db, 'resource_id', ids)).orderBy('tag').execute();
  for (const r of rows) out.get(r.resource_id)?.push(r.tag);
  return out;
}

/**
 * The values an advisory's fields hold in this service's database, on the load balancers of the providers
 * it names (not yet deleted), each with the first character the advisory's fix refuses, if any.
 */
import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { refusedCharacter, type Advisory, type AuditedField } from './advisory.js';

export interface StoredValue {
  fix: string;
  resource: AuditedField['resource'];
  field: string;
  object_id: string;
  load_balancer_id: string;
  project_id: string;
  provider: string;
  value: string;
  /** U+XXXX of the first character the fix refuses in the value, or null. */
  refused_character: string | null;
}

/** From each resource's table to its load balancer. */
const TO_LOAD_BALANCER: Record<AuditedField['resource'], string> = {
  loadbalancer: 'load_balancer o join load_balancer lb on lb.id = o.id',
  listener: 'listener o join load_balancer lb on lb.id = o.load_balancer_id',
  pool: 'pool o join load_balancer lb on lb.id = o.load_balancer_id',
  member: 'member o join pool p on p.id = o.pool_id join load_balancer lb on lb.id = p.load_balancer_id',
  healthmonitor: 'health_monitor o join pool p on p.id = o.pool_id join load_balancer lb on lb.id = p.load_balancer_id',
  l7policy: 'l7policy o join listener l on l.id = o.listener_id join load_balancer lb on lb.id = l.load_balancer_id',
  l7rule: 'l7rule o join l7policy p on p.id = o.l7policy_id join listener l on l.id = p.listener_id join load_balancer lb on lb.id = l.load_balancer_id',
};

/** One query per field the advisory names. */
export async function storedValues(db: Db, advisory: Advisory): Promise<StoredValue[]> {
  const found: StoredValue[] = [];
  for (const fix of advisory.fixes) {
    for (const { resource, field } of fix.fields) {
      // The table text is ours (above) and the column passed the advisory's ^[a-z_]+$: nothing a file could inject.
      const rows = await sql<{ object_id: string; load_balancer_id: string; project_id: string; provider: string; value: string }>`
        select o.id as object_id, lb.id as load_balancer_id, lb.project_id as project_id, lb.provider as provider, ${sql.ref(`o.${field}`)} as value
        from ${sql.raw(TO_LOAD_BALANCER[resource])}
        where ${sql.ref(`o.${field}`)} is not null and lb.provisioning_status <> 'DELETED' and lb.provider in (${sql.join(advisory.providers)})
        order by lb.project_id, lb.id, o.id`
        .execute(db.kysely)
        .catch((e: unknown) => {
          throw new Error(`advisory ${advisory.id} names ${resource}.${field}, which this database cannot read: ${(e as Error).message}`);
        });
      for (const row of rows.rows) found.push({ fix: fix.name, resource, field, ...row, value: String(row.value), refused_character: refusedCharacter(fix, String(row.value)) });
    }
  }
  return found;
}

/**
 * The certificates in use as `ostia certs` and the API's `GET /v2/ostia/certificates` list them: one
 * line per reference a listener or pool uses, in its role, soonest to expire first, with the days left
 * and the warning the log, the status tree and the metrics give.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { DAY_MS, daysToExpiry, expiryWarning, type CertificateLine } from '../domain/certificate-expiry.js';
import { timestamp } from '../domain/time.js';


export interface CertificateFilter {
  /** Only those expiring within this many days (expired ones included). */
  withinDays?: number;
  /** Only this project's. */
  projectId?: string;
}

export async function listCertificatesInUse(db: Kysely<Database>, filter: CertificateFilter = {}, now = new Date()): Promise<CertificateLine[]> {
  const { withinDays, projectId } = filter;
  const rows = await db
    .selectFrom('certificate_in_use')
    .selectAll()
    .$if(withinDays !== undefined, (q) => q.where('not_after', '<=', timestamp(new Date(now.getTime() + withinDays! * DAY_MS))))
    .$if(projectId !== undefined, (q) => q.where('project_id', '=', projectId!))
    .orderBy('not_after')
    .orderBy('object_id')
    .orderBy('role')
    .orderBy('ref')
    .execute();
  return rows.map((row) => {
    const days = daysToExpiry(row.not_after, now);
    return {
      object_kind: row.object_kind,
      object_id: row.object_id,
      load_balancer_id: row.load_balancer_id,
      project_id: row.project_id,
      role: row.role,
      ref: row.ref,
      not_after: row.not_after,
      days_to_expiry: days,
      warning: expiryWarning(days),
      fingerprint_sha256: row.fingerprint_sha256,
      subject_cn: row.subject_cn,
    };
  });
}

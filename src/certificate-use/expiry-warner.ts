/**
 * Certificate expiry warnings: a certificate in use that reaches one of
 * CertificateExpiryWarningDays gets one warning in the log for that threshold. The claim is
 * the row's warned_days, set by a conditional update, so several housekeepers never warn
 * twice; a renewed certificate is recorded afresh (warned_days null) and warned about again
 * when its own time comes.
 */
import type { Logger } from 'pino';
import type { Db } from '../db/database.js';
import { CertificateExpiryWarningDays } from '../domain/defaults.js';
import { DAY_MS, daysToExpiry, expiryWarning } from '../domain/certificate-expiry.js';
import { timestamp } from '../domain/time.js';

export interface ExpiryWarnerDeps {
  db: Db;
  log: Pick<Logger, 'warn'>;
  now?: () => number;
}

export interface ExpiryWarning {
  object_kind: string;
  object_id: string;
  role: string;
  ref: string;
  load_balancer_id: string;
  project_id: string;
  not_after: string;
  /** The threshold this warning is for. */
  threshold: number;
  days_to_expiry: number;
}

export class CertificateExpiryWarner {
  private readonly now: () => number;

  constructor(private readonly deps: ExpiryWarnerDeps) {
    this.now = deps.now ?? Date.now;
  }

  async run(): Promise<ExpiryWarning[]> {
    const { db, log } = this.deps;
    const now = new Date(this.now());
    const warned: ExpiryWarning[] = [];
    // Nearest threshold first: a certificate first seen 5 days from expiry is warned about once, at 7, not at 30, 14 and 7.
    for (const threshold of [...CertificateExpiryWarningDays].sort((a, b) => a - b)) {
      const rows = await db.kysely
        .updateTable('certificate_in_use')
        .set({ warned_days: threshold })
        .where('not_after', '<=', timestamp(new Date(now.getTime() + threshold * DAY_MS)))
        .where((eb) => eb.or([eb('warned_days', 'is', null), eb('warned_days', '>', threshold)]))
        .returning(['object_kind', 'object_id', 'role', 'ref', 'load_balancer_id', 'project_id', 'not_after'])
        .execute();
      for (const row of rows) {
        const days = daysToExpiry(row.not_after, now);
        const warning: ExpiryWarning = { ...row, threshold, days_to_expiry: days };
        warned.push(warning);
        log.warn(
          { [row.object_kind]: row.object_id, role: row.role, lb: row.load_balancer_id, project: row.project_id, ref: row.ref, days_left: Math.floor(days), not_after: row.not_after, threshold },
          `certificate of ${row.object_kind} ${row.object_id} ${expiryWarning(days)} (${row.not_after} UTC)`,
        );
      }
    }
    return warned;
  }
}

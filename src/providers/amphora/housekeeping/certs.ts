/**
 * Agent certificate rotation: an amphora whose server certificate expires within
 * `certRotateBeforeDays` gets a new one from the CA, pushed to its agent; the row records the
 * new expiry and serial. `cert_busy` is the claim, so several housekeepers never rotate the
 * same amphora at once; a claim older than CLAIM_EXPIRY_MS is from a housekeeper that died.
 */
import type { Logger } from 'pino';
import type { Db } from '../../../db/database.js';
import type { AmphoraRow } from '../../../db/records/amphora.js';
import type { IssuedCert } from '../../../pki/ca.js';
import { timestamp } from '../../../domain/time.js';
import type { AmphoraStatus } from '../../../domain/enums.js';

const DAY_MS = 86_400_000;
const CLAIM_EXPIRY_MS = 10 * 60_000;
/** Only amphorae whose agent runs and answers can take a new certificate. */
const ROTATABLE: readonly AmphoraStatus[] = ['ALLOCATED', 'READY', 'FAILOVER_STOPPED'];

export type RotationTarget = Pick<AmphoraRow, 'id' | 'lb_network_ip' | 'agent_url'>;

export interface CertRotatorDeps {
  db: Db;
  log: Logger;
  /** Issues an agent server certificate (CertificateAuthority.issueAmphoraCert). */
  issue(amphoraId: string, managementAddress: string, validDays: number): Promise<IssuedCert>;
  /** Sends `pem` (certificate then key) to the amphora's agent (AgentClient.putCertificate). */
  push(amp: RotationTarget, pem: string): Promise<void>;
  validityDays: number;
  rotateBeforeDays: number;
  now?: () => number;
}

export interface RotationOutcome {
  rotated: string[];
  failed: string[];
}

export class CertRotator {
  private readonly now: () => number;

  constructor(private readonly deps: CertRotatorDeps) {
    this.now = deps.now ?? Date.now;
  }

  async run(): Promise<RotationOutcome> {
    const { db } = this.deps;
    const horizon = timestamp(new Date(this.now() + this.deps.rotateBeforeDays * DAY_MS));
    const due = await db.kysely
      .selectFrom('amphora')
      .select(['id', 'lb_network_ip', 'agent_url'])
      .where('status', 'in', ROTATABLE)
      .where('agent_url', 'is not', null)
      .where('lb_network_ip', 'is not', null)
      .where('cert_expiration', '<', horizon)
      .orderBy('cert_expiration')
      .execute();
    const outcome: RotationOutcome = { rotated: [], failed: [] };
    for (const amp of due) {
      if (!(await this.claim(amp.id))) continue;
      const ok = await this.rotate(amp);
      (ok ? outcome.rotated : outcome.failed).push(amp.id);
    }
    return outcome;
  }

  private async claim(id: string): Promise<boolean> {
    const now = this.now();
    const r = await this.deps.db.kysely
      .updateTable('amphora')
      .set({ cert_busy: 1, updated_at: timestamp(new Date(now)) })
      .where('id', '=', id)
      .where((eb) => eb.or([eb('cert_busy', '=', 0), eb('updated_at', '<', timestamp(new Date(now - CLAIM_EXPIRY_MS)))]))
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  private async rotate(amp: RotationTarget): Promise<boolean> {
    const { db, log } = this.deps;
    try {
      const cert = await this.deps.issue(amp.id, amp.lb_network_ip!, this.deps.validityDays);
      await this.deps.push(amp, cert.certPem + cert.keyPem);
      await db.kysely
        .updateTable('amphora')
        .set({ cert_busy: 0, cert_expiration: timestamp(cert.notAfter), cert_serial: cert.serial, updated_at: timestamp(new Date(this.now())) })
        .where('id', '=', amp.id)
        .execute();
      log.info({ amphora: amp.id, serial: cert.serial, notAfter: cert.notAfter }, 'rotated the agent certificate');
      return true;
    } catch (err) {
      await db.kysely.updateTable('amphora').set({ cert_busy: 0 }).where('id', '=', amp.id).execute();
      log.error({ err, amphora: amp.id }, 'rotating the agent certificate failed; retrying on the next run');
      return false;
    }
  }
}

/**
 * What a load balancer's listeners and pools use — certificates, CA bundles, CRLs — with the
 * date each stops being valid, recorded in `certificate_in_use` after every job of the load
 * balancer. Expiry is then listed (`ostia certs`), exported (`/metrics`), shown in the status
 * tree and warned about (housekeeping) from the database alone, without reading the key
 * manager again.
 *
 * Recording never fails a job and never stops at one bad reference: a reference that cannot
 * be read (deleted meanwhile, the key manager unreachable, material that no longer parses)
 * is logged by name, and its last recorded row, if any, is kept — a certificate HAProxy still
 * serves still expires, even when its secret has gone.
 */
import type { BaseLogger } from 'pino';
import type { Db } from '../db/database.js';
import type { CertificateInUseRecord } from '../db/records/certificate-in-use.js';
import { CertificateError, type CaBundle } from '../tls/certificates.js';
import type { KeyManager } from '../keymanager/index.js';
import { readCaBundle, readCertificate, readCrl } from '../keymanager/tls-material.js';
import type { CertificateObjectKind, CertificateRole } from '../domain/certificate-expiry.js';
import { timestamp } from '../domain/time.js';
import { listenerRefUses, poolRefUses, type RefUse } from './consumers.js';

type Log = Pick<BaseLogger, 'warn' | 'error'>;

/** One reference held by one object, in one role. */
interface Use extends RefUse {
  objectKind: CertificateObjectKind;
  objectId: string;
  projectId: string;
}

interface Reading {
  notAfter: Date;
  fingerprintSha256: string | null;
  subjectCn: string | null;
}

const CERTIFICATE_ROLES: ReadonlySet<CertificateRole> = new Set(['default', 'sni', 'certificate']);
const CA_ROLES: ReadonlySet<CertificateRole> = new Set(['client_ca', 'ca']);

/**
 * Replaces the rows of `loadBalancerId` with what its listeners and pools (those not being
 * deleted) use now. A row whose object, role, reference and not-after are unchanged keeps
 * its warned_days; a renewed certificate starts again from none. A load balancer that no
 * longer exists, or is being deleted, loses its rows.
 */
export async function recordCertificatesInUse(keyManager: KeyManager, db: Db, loadBalancerId: string, log: Log, now = new Date()): Promise<void> {
  const uses = await usesOf(db, loadBalancerId);
  const readings = await readAll(keyManager, uses, now);
  const failed = new Map<string, { reason: string; uses: string[]; kept: boolean }>();

  await db.kysely.transaction().execute(async (trx) => {
    // Locked on PostgreSQL: two workers finishing jobs of one load balancer would both insert
    // its rows, and a housekeeper's warned_days set after this read would be lost (warned twice).
    let previousRows = trx.selectFrom('certificate_in_use').selectAll().where('load_balancer_id', '=', loadBalancerId);
    if (db.dialect === 'postgres') {
      await trx.selectFrom('load_balancer').select('id').where('id', '=', loadBalancerId).forUpdate().execute();
      previousRows = previousRows.forUpdate();
    }
    const previous = await previousRows.execute();
    const before = new Map(previous.map((row) => [rowKey(row.object_id, row.role, row.ref), row]));
    const rows: CertificateInUseRecord[] = [];
    for (const [i, use] of uses.entries()) {
      const reading = readings[i]!;
      const last = before.get(rowKey(use.objectId, use.role, use.ref));
      if (reading instanceof Error) {
        const entry = failed.get(use.ref) ?? { reason: reading.message, uses: [], kept: false };
        entry.uses.push(`${use.objectKind}/${use.objectId} ${use.role}`);
        failed.set(use.ref, entry);
        if (last) {
          rows.push(last);
          entry.kept = true;
        }
        continue;
      }
      if (!reading) continue;
      const notAfter = timestamp(reading.notAfter);
      rows.push({
        object_id: use.objectId,
        object_kind: use.objectKind,
        role: use.role,
        ref: use.ref,
        load_balancer_id: loadBalancerId,
        project_id: use.projectId,
        not_after: notAfter,
        fingerprint_sha256: reading.fingerprintSha256,
        subject_cn: reading.subjectCn,
        warned_days: last?.not_after === notAfter ? last.warned_days : null,
        recorded_at: timestamp(now),
      });
    }
    await trx.deleteFrom('certificate_in_use').where('load_balancer_id', '=', loadBalancerId).execute();
    if (rows.length) await trx.insertInto('certificate_in_use').values(rows).execute();
  });

  for (const [ref, { reason, uses: users, kept }] of failed) {
    // The reason names the reference and what is wrong, never the material (see CertificateError).
    log.warn({ ref, lb: loadBalancerId, uses: users, reason }, `cannot read a certificate in use; ${kept ? 'its last recorded expiry stands' : 'its expiry is not tracked until it can be read'}`);
  }
}

/**
 * What runs after every job that ended, done or failed (providers/certificate-bookkeeping.ts):
 * records the load balancer's certificates when it uses any or had rows (one query decides, so
 * a load balancer without TLS costs nothing more). Never throws: the job's outcome stands.
 */
export async function recordAfterJob(keyManager: KeyManager, db: Db, loadBalancerId: string, log: Log): Promise<void> {
  try {
    if (await concernsCertificates(db, loadBalancerId)) await recordCertificatesInUse(keyManager, db, loadBalancerId, log);
  } catch (err) {
    log.error({ err, lb: loadBalancerId }, 'recording the certificates in use failed; the next job of the load balancer records them again');
  }
}

/** Whether the load balancer has rows, or a listener or pool holding a reference. */
export async function concernsCertificates(db: Db, loadBalancerId: string): Promise<boolean> {
  const row = await db.kysely
    .selectNoFrom((eb) => [
      eb.or([
        eb.exists(eb.selectFrom('certificate_in_use').select('object_id').where('load_balancer_id', '=', loadBalancerId)),
        eb.exists(
          eb.selectFrom('listener').select('id').where('load_balancer_id', '=', loadBalancerId).where((l) =>
            l.or([
              l('default_tls_container_ref', 'is not', null),
              l('sni_container_refs', '<>', '[]'),
              l('client_ca_tls_container_ref', 'is not', null),
              l('client_crl_container_ref', 'is not', null),
            ]),
          ),
        ),
        eb.exists(
          eb.selectFrom('pool').select('id').where('load_balancer_id', '=', loadBalancerId).where((p) =>
            p.or([p('tls_container_ref', 'is not', null), p('ca_tls_container_ref', 'is not', null), p('crl_container_ref', 'is not', null)]),
          ),
        ),
      ]).as('concerned'),
    ])
    .executeTakeFirstOrThrow();
  // PostgreSQL answers a boolean, SQLite 1 or 0.
  return Number(row.concerned) === 1;
}

const rowKey = (objectId: string, role: string, ref: string) => `${objectId} ${role} ${ref}`;

async function usesOf(db: Db, loadBalancerId: string): Promise<Use[]> {
  const k = db.kysely;
  const lb = await k.selectFrom('load_balancer').select('provisioning_status').where('id', '=', loadBalancerId).executeTakeFirst();
  if (!lb || lb.provisioning_status === 'PENDING_DELETE') return [];
  const [listeners, pools] = await Promise.all([
    k.selectFrom('listener')
      .select(['id', 'project_id', 'default_tls_container_ref', 'sni_container_refs', 'client_ca_tls_container_ref', 'client_crl_container_ref'])
      .where('load_balancer_id', '=', loadBalancerId)
      .where('provisioning_status', '<>', 'PENDING_DELETE')
      .orderBy('id')
      .execute(),
    k.selectFrom('pool')
      .select(['id', 'project_id', 'tls_container_ref', 'ca_tls_container_ref', 'crl_container_ref'])
      .where('load_balancer_id', '=', loadBalancerId)
      .where('provisioning_status', '<>', 'PENDING_DELETE')
      .orderBy('id')
      .execute(),
  ]);
  return [
    ...listeners.flatMap((l) => listenerRefUses(l).map((u): Use => ({ objectKind: 'listener', objectId: l.id, projectId: l.project_id, ...u }))),
    ...pools.flatMap((p) => poolRefUses(p).map((u): Use => ({ objectKind: 'pool', objectId: p.id, projectId: p.project_id, ...u }))),
  ];
}

/**
 * Each use's reading, an Error when it cannot be read, or null when there is nothing to track
 * (a CRL without a next update). Everything starts at once and each distinct reference is
 * read once, as the service, expired material included: what is in use is still served.
 */
async function readAll(keyManager: KeyManager, uses: readonly Use[], now: Date): Promise<Array<Reading | Error | null>> {
  const options = { now, acceptExpired: true };
  // A bundle shared by several listeners is parsed once (PKCS#12 key derivation is slow).
  const certificates = new Map<string, Promise<Reading>>();
  const caBundles = new Map<string, Promise<CaBundle>>();
  const crls = new Map<string, Promise<Reading | null>>();
  const caBundle = (ref: string) => once(caBundles, ref, () => readCaBundle(keyManager, ref, options));

  const read = async ({ role, ref, caRef }: Use): Promise<Reading | null> => {
    if (CERTIFICATE_ROLES.has(role)) {
      return once(certificates, ref, async () => {
        const bundle = await readCertificate(keyManager, ref, options);
        return { notAfter: bundle.notAfter, fingerprintSha256: bundle.fingerprintSha256, subjectCn: bundle.subjectCn };
      });
    }
    if (CA_ROLES.has(role)) return { notAfter: (await caBundle(ref)).notAfter, fingerprintSha256: null, subjectCn: null };
    if (!caRef) throw new CertificateError(ref, 'a revocation list without a CA certificate cannot be checked');
    return once(crls, `${ref} ${caRef}`, async () => {
      const crl = await readCrl(keyManager, ref, await caBundle(caRef), options);
      return crl.nextUpdate ? { notAfter: crl.nextUpdate, fingerprintSha256: null, subjectCn: null } : null;
    });
  };
  return Promise.all(uses.map((use) => read(use).catch((e: unknown) => (e instanceof Error ? e : new Error(String(e))))));
}

/** The promise cached under `key`, started on first ask; its rejection is reported by whoever awaits it. */
function once<T>(cache: Map<string, Promise<T>>, key: string, start: () => Promise<T>): Promise<T> {
  let promise = cache.get(key);
  if (!promise) {
    promise = start();
    promise.catch(() => undefined);
    cache.set(key, promise);
  }
  return promise;
}

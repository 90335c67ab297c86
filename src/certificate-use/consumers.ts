/**
 * Listeners and pools as consumers of the certificates they reference, as Barbican records
 * who uses a secret or container. The API registers an object once its create or update has
 * committed; its provider's job hook (providers/certificate-bookkeeping.ts) unregisters it once
 * the job that deletes it has removed its row, and unregisters the references an update
 * replaced only once that job has ended: until the new certificate is verified as served, the
 * previous one may be put back.
 *
 * Bookkeeping never fails the operation it follows: that operation has committed (or its
 * rows are gone), and a consumer record only informs owners who is using their secrets. A
 * failure is logged, and the next change of the object's references registers all of them
 * again (registering is idempotent).
 */
import { listenerCodec } from '../db/records/listener.js';
import type { BaseLogger } from 'pino';
import type { Db } from '../db/database.js';
import type { ListenerRow } from '../db/records/listener.js';
import type { PoolRow } from '../db/records/pool.js';
import type { ConsumerRegistration, KeyManager } from '../keymanager/index.js';
import type { CertificateRole } from '../domain/certificate-expiry.js';

type ConsumerKind = 'listener' | 'pool';
type Log = Pick<BaseLogger, 'warn'>;

export function consumerOf(kind: ConsumerKind, id: string): ConsumerRegistration {
  return { service: 'octavia', resourceType: kind, resourceId: id };
}

export type ListenerRefColumns = Pick<ListenerRow, 'default_tls_container_ref' | 'sni_container_refs' | 'client_ca_tls_container_ref' | 'client_crl_container_ref'>;
export type PoolRefColumns = Pick<PoolRow, 'tls_container_ref' | 'ca_tls_container_ref' | 'crl_container_ref'>;

export function listenerRefColumns(row: ListenerRefColumns): ListenerRefColumns {
  const { default_tls_container_ref, sni_container_refs, client_ca_tls_container_ref, client_crl_container_ref } = row;
  return { default_tls_container_ref, sni_container_refs, client_ca_tls_container_ref, client_crl_container_ref };
}

export function poolRefColumns(row: PoolRefColumns): PoolRefColumns {
  const { tls_container_ref, ca_tls_container_ref, crl_container_ref } = row;
  return { tls_container_ref, ca_tls_container_ref, crl_container_ref };
}

/**
 * A job payload's record of an update that changed certificate references: the reference
 * columns before and as requested. The job hook releases what neither the object nor its
 * rollback keeps; the amphora provider puts `previous` back when the new certificate is not
 * served as it should be.
 */
export type TlsChange =
  | { kind: 'listener'; id: string; previous: ListenerRefColumns; requested: ListenerRefColumns }
  | { kind: 'pool'; id: string; previous: PoolRefColumns; requested: PoolRefColumns };

function refsOf(change: TlsChange, columns: ListenerRefColumns | PoolRefColumns): string[] {
  return change.kind === 'listener' ? listenerRefsInUse(columns as ListenerRefColumns) : poolRefsInUse(columns as PoolRefColumns);
}

/** After the job of `change`: unregisters the references the object no longer uses (it may have kept or got back either side). */
export async function releaseReplaced(keyManager: KeyManager, db: Db, log: Log, change: TlsChange | null): Promise<void> {
  if (!change) return;
  const current = change.kind === 'listener'
    ? await db.kysely.selectFrom('listener').selectAll().where('id', '=', change.id).executeTakeFirst()
    : await db.kysely.selectFrom('pool').selectAll().where('id', '=', change.id).executeTakeFirst();
  // A deleted object's references are released with its row (releaseRemoved).
  if (!current) return;
  const touched = [...new Set([...refsOf(change, change.previous), ...refsOf(change, change.requested)])];
  await syncConsumers(keyManager, log, consumerOf(change.kind, change.id), touched, refsOf(change, current));
}

/** One reference an object holds, in its role; a CRL with the CA bundle that must have signed it. */
export interface RefUse {
  role: CertificateRole;
  ref: string;
  caRef: string | null;
}

/** Which column holds what: the one place that maps a row's reference columns to roles. */
export function listenerRefUses(row: ListenerRefColumns): RefUse[] {
  return uses([
    ['default', row.default_tls_container_ref, null],
    ...listenerCodec.decode(row).sni_container_refs.map((ref): Slot => ['sni', ref, null]),
    ['client_ca', row.client_ca_tls_container_ref, null],
    ['client_crl', row.client_crl_container_ref, row.client_ca_tls_container_ref],
  ]);
}

export function poolRefUses(row: PoolRefColumns): RefUse[] {
  return uses([
    ['certificate', row.tls_container_ref, null],
    ['ca', row.ca_tls_container_ref, null],
    ['crl', row.crl_container_ref, row.ca_tls_container_ref],
  ]);
}

type Slot = [CertificateRole, string | null, string | null];

/** The filled slots, each (role, reference) once. */
function uses(slots: readonly Slot[]): RefUse[] {
  const out: RefUse[] = [];
  for (const [role, ref, caRef] of slots) if (ref && !out.some((u) => u.role === role && u.ref === ref)) out.push({ role, ref, caRef });
  return out;
}

const distinct = (refs: readonly string[]): string[] => [...new Set(refs)];

/** Every reference a stored listener uses. */
export function listenerRefsInUse(row: ListenerRefColumns): string[] {
  return distinct(listenerRefUses(row).map((u) => u.ref));
}

export function poolRefsInUse(row: PoolRefColumns): string[] {
  return distinct(poolRefUses(row).map((u) => u.ref));
}

/** Registers `after` (all of it, to repair an earlier failed attempt) and unregisters what only `before` held. */
export async function syncConsumers(keyManager: KeyManager, log: Log, consumer: ConsumerRegistration, before: readonly string[], after: readonly string[]): Promise<void> {
  const dropped = before.filter((ref) => !after.includes(ref));
  await Promise.all([
    ...after.map((ref) => keyManager.registerConsumer(ref, consumer).catch((err: unknown) => warn(log, 'registering', ref, consumer, err))),
    ...dropped.map((ref) => keyManager.unregisterConsumer(ref, consumer).catch((err: unknown) => warn(log, 'unregistering', ref, consumer, err))),
  ]);
}

function warn(log: Log, action: string, ref: string, consumer: ConsumerRegistration, err: unknown): void {
  // The message of a key manager failure names the reference at most; never a payload.
  const reason = err instanceof Error ? err.message : String(err);
  log.warn({ ref, consumer: `${consumer.resourceType}/${consumer.resourceId}`, reason }, `${action} a certificate consumer failed`);
}

export interface PendingRelease {
  readonly kind: ConsumerKind;
  readonly id: string;
  readonly refs: readonly string[];
}

/**
 * What a job of `lbId` is about to remove, taken before it runs: the listeners and pools in
 * PENDING_DELETE, or all of them when the load balancer itself is being deleted. The load
 * balancer is locked while the job runs, so this cannot change underneath it.
 */
export async function pendingReleases(db: Db, lbId: string): Promise<PendingRelease[]> {
  const k = db.kysely;
  const lb = await k.selectFrom('load_balancer').select('provisioning_status').where('id', '=', lbId).executeTakeFirst();
  const everything = lb?.provisioning_status === 'PENDING_DELETE';
  let listeners = k.selectFrom('listener').selectAll().where('load_balancer_id', '=', lbId);
  let pools = k.selectFrom('pool').selectAll().where('load_balancer_id', '=', lbId);
  if (!everything) {
    listeners = listeners.where('provisioning_status', '=', 'PENDING_DELETE');
    pools = pools.where('provisioning_status', '=', 'PENDING_DELETE');
  }
  const [listenerRows, poolRows] = await Promise.all([listeners.execute(), pools.execute()]);
  return [
    ...listenerRows.map((row) => ({ kind: 'listener' as const, id: row.id, refs: listenerRefsInUse(row) })),
    ...poolRows.map((row) => ({ kind: 'pool' as const, id: row.id, refs: poolRefsInUse(row) })),
  ].filter((p) => p.refs.length > 0);
}

/** After the job: unregisters the objects of `pending` whose rows it has removed. */
export async function releaseRemoved(keyManager: KeyManager, db: Db, log: Log, pending: readonly PendingRelease[]): Promise<void> {
  if (!pending.length) return;
  const k = db.kysely;
  const ids = (kind: ConsumerKind) => pending.filter((p) => p.kind === kind).map((p) => p.id);
  const [listeners, pools] = await Promise.all([
    ids('listener').length ? k.selectFrom('listener').select('id').where('id', 'in', ids('listener')).execute() : [],
    ids('pool').length ? k.selectFrom('pool').select('id').where('id', 'in', ids('pool')).execute() : [],
  ]);
  const remaining = new Set([...listeners, ...pools].map((r) => r.id));
  await Promise.all(pending.filter((p) => !remaining.has(p.id)).map((p) => syncConsumers(keyManager, log, consumerOf(p.kind, p.id), p.refs, [])));
}

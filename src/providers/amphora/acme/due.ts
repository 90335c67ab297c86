/**
 * When a listener's managed certificate is to be ordered, and how long a failure waits: pure,
 * over the listener as stored and what its orders have got (db/records/acme-certificate.ts).
 */
import type { AcmeCertificateRecord } from '../../../db/records/acme-certificate.js';

export interface ManagedListener {
  acme_domains: readonly string[];
  default_tls_container_ref: string | null;
}

export type OrderReason = 'first certificate' | 'names changed' | 'renewal requested' | 'renewal due' | 'rolled back';

type Progress = Pick<AcmeCertificateRecord, 'domains' | 'container_ref' | 'not_before' | 'not_after' | 'renew_requested' | 'next_attempt_at'>;

const sameNames = (a: readonly string[], b: readonly string[]) => a.length === b.length && [...a].sort().every((n, i) => n === [...b].sort()[i]);

/**
 * Why the certificate is to be ordered now, or null. `rolled back`: the certificate last issued
 * is not what the listener serves (its change was rolled back), which counts as a failure first.
 */
export function orderDue(listener: ManagedListener, progress: Progress | undefined, now: number, renewAtFraction: number): OrderReason | null {
  if (progress && progress.next_attempt_at > now) return null;
  if (!progress || progress.container_ref === null) return 'first certificate';
  if (!sameNames(progress.domains, listener.acme_domains)) return 'names changed';
  if (progress.renew_requested) return 'renewal requested';
  if (progress.container_ref !== listener.default_tls_container_ref) return 'rolled back';
  const from = Date.parse(progress.not_before ?? '');
  const to = Date.parse(progress.not_after ?? '');
  if (!Number.isFinite(from) || !Number.isFinite(to)) return 'renewal due';
  return now >= from + renewAtFraction * (to - from) ? 'renewal due' : null;
}

/** The wait after the `failures`-th failure in a row: doubling from the minimum, capped. */
export function retryDelayMs(failures: number, minSeconds: number, maxSeconds: number): number {
  return Math.min(maxSeconds, minSeconds * 2 ** Math.max(0, Math.min(failures - 1, 30))) * 1000;
}

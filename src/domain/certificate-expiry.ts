/**
 * Expiry of the certificates listeners and pools use: which references are tracked, in what
 * role, how many days each has left, and what Ostia says about it once it reaches one of
 * CertificateExpiryWarningDays. The log, the status tree, the metrics and `ostia certs` all
 * count days the same way, from the stored not-after (a naive UTC timestamp, as every time
 * in the database).
 */
import { CertificateExpiryWarningDays } from './defaults.js';

export const DAY_MS = 86_400_000;

/** The role of each reference an object holds, as `certificate_in_use.role`. */
export const CertificateRoles = {
  listener: ['default', 'sni', 'client_ca', 'client_crl'],
  pool: ['certificate', 'ca', 'crl'],
} as const;
export type CertificateObjectKind = keyof typeof CertificateRoles;
export type CertificateRole = (typeof CertificateRoles)[CertificateObjectKind][number];

/** The certificates a listener serves to its clients: the listener's expiry is theirs. */
export const ServedCertificateRoles = ['default', 'sni'] as const satisfies readonly CertificateRole[];

/** Negative once expired; fractional, so a metric can be alerted on to the hour. */
export function daysToExpiry(notAfter: string, now: Date): number {
  return (Date.parse(`${notAfter}Z`) - now.getTime()) / DAY_MS;
}

/** The nearest threshold `days` has reached (the last one for an expired certificate), or null while beyond them all. */
export function expiryThreshold(days: number): number | null {
  const reached = CertificateExpiryWarningDays.filter((threshold) => days <= threshold);
  return reached.length ? Math.min(...reached) : null;
}

/** "expires in 12 days", "EXPIRED 3 days ago", or null while beyond every threshold. */
export function expiryWarning(days: number): string | null {
  if (expiryThreshold(days) === null) return null;
  if (days < 0) {
    const ago = Math.floor(-days);
    return ago === 0 ? 'EXPIRED today' : `EXPIRED ${dayCount(ago)} ago`;
  }
  const left = Math.floor(days);
  return left === 0 ? 'expires within a day' : `expires in ${dayCount(left)}`;
}

function dayCount(n: number): string {
  return `${n} day${n === 1 ? '' : 's'}`;
}

/** One reference in use, in one role, with its expiry: a line of `ostia certs` and of `GET /v2/ostia/certificates`. */
export interface CertificateLine {
  object_kind: string;
  object_id: string;
  load_balancer_id: string;
  project_id: string;
  role: string;
  ref: string;
  /** Naive UTC, as every Ostia timestamp. */
  not_after: string;
  days_to_expiry: number;
  /** "expires in 12 days", "EXPIRED 3 days ago", or null while beyond every warning threshold. */
  warning: string | null;
  fingerprint_sha256: string | null;
  subject_cn: string | null;
}

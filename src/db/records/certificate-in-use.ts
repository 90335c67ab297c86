/** One certificate, CA bundle or CRL a listener or pool uses, as last configured. */
export interface CertificateInUseRecord {
  object_id: string;
  object_kind: 'listener' | 'pool';
  /** default, sni, client_ca, client_crl (listener); certificate, ca, crl (pool). */
  role: string;
  ref: string;
  load_balancer_id: string;
  project_id: string;
  /** The certificate's (a CA bundle's earliest) not-after; a CRL's next update. */
  not_after: string;
  fingerprint_sha256: string | null;
  subject_cn: string | null;
  /** The last expiry threshold (30, 14, 7 days) warned about, or null. */
  warned_days: number | null;
  recorded_at: string;
}

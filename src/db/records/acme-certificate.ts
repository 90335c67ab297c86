/** What a listener's ACME orders have got (providers/amphora/acme/). */
import { codec, type Row } from './codec.js';

export interface AcmeCertificateRecord {
  listener_id: string;
  /** The names the certificate in `container_ref` was ordered for (or is being ordered for). */
  domains: string[];
  /** The key manager container Ostia stored the last issued certificate in, or null before the first. */
  container_ref: string | null;
  not_before: string | null;
  not_after: string | null;
  /** Asked through the API: order again at the next round, whatever the expiry. */
  renew_requested: boolean;
  /** Attempts failed in a row since the last success: the retry delay doubles with each. */
  failures: number;
  last_error: string | null;
  /** Milliseconds since the epoch: no attempt before. */
  next_attempt_at: number;
  /** Milliseconds since the epoch: a housekeeper holds the order until then. */
  claimed_until: number;
  updated_at: string;
}

export type AcmeCertificateRow = Row<AcmeCertificateRecord>;

export const acmeCertificateCodec = codec<AcmeCertificateRecord>({ domains: 'json', renew_requested: 'bool' });

/**
 * Managed certificates (an Ostia extension of listeners): `acme_domains` asks Ostia to order the
 * listener's default certificate from the configured ACME directory (RFC 8555) and renew it.
 * Validation is answered by the amphora at the VIP, HTTP-01 on port 80 or TLS-ALPN-01 on port 443
 * (acmeChallengeType), so the names must be plain DNS names (no wildcard: a wildcard needs DNS-01).
 */
import { apiError } from '../errors.js';
import { TcpFamilyProtocols } from '../enums.js';

/** Let's Encrypt's limit of names per certificate. */
export const MAX_ACME_DOMAINS = 100;
/** The port HTTP-01 validation connects to (RFC 8555 §8.3): not configurable by the ACME server's client. */
export const HTTP01_PORT = 80;
/** The port TLS-ALPN-01 validation connects to (RFC 8737 §3). */
export const TLS_ALPN01_PORT = 443;

export type AcmeChallengeType = 'http-01' | 'tls-alpn-01';

interface PortHolder {
  id?: string;
  protocol: string;
  protocol_port: number;
  acme_domains: readonly string[] | null;
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

const invalid = (detail: string) => apiError('INVALID_INPUT', 'acme_domains', detail, 'Value should be a list of DNS names the VIP answers for');

/** A name an ACME server can validate over HTTP-01: two labels at least, letters, digits and inner hyphens, 253 characters at most. */
export function isAcmeDomain(name: string): boolean {
  if (name.length > 253) return false;
  const labels = name.split('.');
  return labels.length >= 2 && labels.every((l) => LABEL.test(l)) && !/^[0-9]+$/.test(labels[labels.length - 1]!);
}

/** The names as stored: lower case, duplicates dropped, each checked; null when the list is null. */
export function normaliseAcmeDomains(domains: readonly string[] | null): string[] | null {
  if (domains === null) return null;
  if (!domains.length) throw invalid('[]');
  if (domains.length > MAX_ACME_DOMAINS) throw invalid(`${domains.length} names (at most ${MAX_ACME_DOMAINS})`);
  const names = [...new Set(domains.map((d) => d.toLowerCase()))];
  const bad = names.find((n) => !isAcmeDomain(n));
  if (bad !== undefined) throw invalid(bad.startsWith('*.') ? `${bad} (a wildcard needs DNS-01 validation, which Ostia does not answer)` : bad);
  return names;
}

/** What a listener with managed certificates cannot also have. */
export function checkAcmeListener(spec: { protocol: string; acme_domains: readonly string[] | null }, settingDefaultRef: boolean): void {
  if (spec.acme_domains === null) return;
  if (spec.protocol !== 'TERMINATED_HTTPS') throw apiError('VALIDATION', `acme_domains is allowed on TERMINATED_HTTPS listeners only, not ${spec.protocol}.`);
  if (settingDefaultRef)
    throw apiError('VALIDATION', 'default_tls_container_ref is managed by Ostia while acme_domains is set: set acme_domains to null to reference a certificate of your own.');
}

/**
 * How a load balancer's managed names are validated: HTTP-01 inside its HTTP listener on port 80
 * when it has one; else TLS-ALPN-01 on port 443 when a TERMINATED_HTTPS listener holds it (the
 * amphora tells the validation's `acme-tls/1` connections from the listener's by the ClientHello,
 * so port 80 of the VIP stays closed); else HTTP-01 on a port-80 answerer of the amphora's own.
 * Null when no listener is managed. Admin state does not count: a disabled listener's port is
 * still the user's, and validation then fails with the reason on the listener.
 */
export function acmeChallengeType(listeners: readonly PortHolder[]): AcmeChallengeType | null {
  if (!listeners.some((l) => l.acme_domains !== null)) return null;
  if (listeners.some((l) => l.protocol === 'HTTP' && l.protocol_port === HTTP01_PORT)) return 'http-01';
  if (listeners.some((l) => l.protocol === 'TERMINATED_HTTPS' && l.protocol_port === TLS_ALPN01_PORT)) return 'tls-alpn-01';
  return 'http-01';
}

/**
 * HTTP-01 on port 80 of the VIP needs that port free of any listener other than an HTTP one, when
 * validation cannot go to port 443 instead: a TCP listener on port 80 beside no TERMINATED_HTTPS
 * listener on 443 would leave it nowhere to go.
 */
export function checkHttp01Port(listeners: readonly PortHolder[]): void {
  if (acmeChallengeType(listeners) !== 'http-01') return;
  const blocker = listeners.find((l) => l.protocol_port === HTTP01_PORT && TcpFamilyProtocols.includes(l.protocol) && l.protocol !== 'HTTP');
  if (blocker)
    throw apiError(
      'VALIDATION',
      `acme_domains needs port ${HTTP01_PORT} of the VIP for HTTP-01 validation, and a ${blocker.protocol} listener${blocker.id ? ` (${blocker.id})` : ''} holds it: use an HTTP listener on port ${HTTP01_PORT} or none, or a TERMINATED_HTTPS listener on port ${TLS_ALPN01_PORT} (validated by TLS-ALPN-01).`,
    );
}

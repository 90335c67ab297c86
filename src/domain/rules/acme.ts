/**
 * Managed certificates (an Ostia extension of listeners): `acme_domains` asks Ostia to order the
 * listener's default certificate from the configured ACME directory (RFC 8555) and renew it.
 * Validation is HTTP-01, answered by the amphora on port 80 of the VIP, so the names must be
 * plain DNS names (no wildcard: a wildcard needs DNS-01) and port 80 must not be held by a
 * listener that cannot answer it.
 */
import { apiError } from '../errors.js';
import { TcpFamilyProtocols } from '../enums.js';

/** Let's Encrypt's limit of names per certificate. */
export const MAX_ACME_DOMAINS = 100;
/** The port HTTP-01 validation connects to (RFC 8555 §8.3): not configurable by the ACME server's client. */
export const HTTP01_PORT = 80;

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
 * HTTP-01 is answered on port 80 of the VIP: by an HTTP listener there, or by the amphora's own
 * answerer when no listener holds it. Any other listener on TCP port 80 would leave validation
 * nowhere to go.
 */
export function checkHttp01Port(listeners: ReadonlyArray<{ id?: string; protocol: string; protocol_port: number; acme_domains: readonly string[] | null }>): void {
  if (!listeners.some((l) => l.acme_domains !== null)) return;
  const blocker = listeners.find((l) => l.protocol_port === HTTP01_PORT && TcpFamilyProtocols.includes(l.protocol) && l.protocol !== 'HTTP');
  if (blocker)
    throw apiError(
      'VALIDATION',
      `acme_domains needs port ${HTTP01_PORT} of the VIP for HTTP-01 validation, and a ${blocker.protocol} listener${blocker.id ? ` (${blocker.id})` : ''} holds it: use an HTTP listener on port ${HTTP01_PORT} or none.`,
    );
}

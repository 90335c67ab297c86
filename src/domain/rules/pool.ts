/**
 * Pool rules of Octavia's API: session persistence per protocol, backend TLS references and
 * the TLS defaults of `tls_enabled` pools. Pure, like every file of this folder.
 */
import { apiError } from '../errors.js';
import { L4OnlyPoolProtocols } from '../enums.js';
import { checkAlpnProtocols, checkTlsVersions, tlsDefaults, withDefaults, type Patch, type TlsSettings } from './listener.js';

export interface SessionPersistence {
  type: string;
  cookie_name: string | null;
  persistence_timeout: number | null;
  persistence_granularity: string | null;
}

export interface PoolSettings extends TlsSettings {
  lb_algorithm: string;
  session_persistence: SessionPersistence | null;
  tls_enabled: boolean;
  tls_container_ref: string | null;
  ca_tls_container_ref: string | null;
  crl_container_ref: string | null;
}

/** A pool's protocol, fixed at create, plus its settings. */
export interface PoolSpec extends PoolSettings {
  readonly protocol: string;
}

type SessionPersistenceInput = Partial<Patch<SessionPersistence>>;

export interface PoolSpecInput extends Omit<Patch<PoolSettings>, 'session_persistence'> {
  protocol: string;
  lb_algorithm: string;
  session_persistence?: SessionPersistenceInput | null;
}

export interface PoolSpecPatch extends Omit<Patch<PoolSettings>, 'session_persistence' | 'lb_algorithm'> {
  lb_algorithm?: string;
  session_persistence?: SessionPersistenceInput | null;
}

const invalid = (detail: string) => apiError('VALIDATION', detail);

/** Octavia's characters that cannot appear in a cookie name (RFC 6265 separators, controls, DEL). */
// An HTTP token (RFC 9110): ASCII only, no separators.
const BAD_COOKIE_NAME = /[\x00-\x20\x22\x28\x29\x2c\x2f\x3a-\x40\x5b-\x5d\x7b\x7d\x7f]|[^\x00-\x7f]/;

function isL4Only(protocol: string): boolean {
  return L4OnlyPoolProtocols.includes(protocol);
}

export function validateSessionPersistence(sp: SessionPersistence, protocol: string): void {
  if (isL4Only(protocol)) {
    if (sp.cookie_name) {
      if (sp.type === 'SOURCE_IP')
        throw invalid('session_persistence SOURCE_IP type for UDP and SCTP protocols only accepts: type, persistence_timeout, persistence_granularity.');
      throw invalid('Cookie names are not supported for UDP/SCTP pools.');
    }
    if (sp.type !== 'SOURCE_IP') throw invalid(`Session persistence of type ${sp.type} is not supported for UDP/SCTP protocol pools.`);
  } else if (sp.persistence_timeout !== null || sp.persistence_granularity !== null) {
    throw invalid('persistence_timeout and persistence_granularity is only for UDP and SCTP protocol pools.');
  }
  if (sp.cookie_name) {
    if (sp.type !== 'APP_COOKIE') throw invalid('Field "cookie_name" can only be specified with session persistence of type "APP_COOKIE".');
    if (BAD_COOKIE_NAME.test(sp.cookie_name)) throw invalid('Supplied "cookie_name" is invalid.');
  }
  if (sp.type === 'APP_COOKIE' && !sp.cookie_name)
    throw invalid('Field "cookie_name" must be specified when using the "APP_COOKIE" session persistence type.');
}

/**
 * Session persistence after a create (`stored` null) or a PUT. `null` or `{}` removes it; a
 * body without `type` keeps the stored type; a cookie name does not survive a type change.
 */
export function mergeSessionPersistence(stored: SessionPersistence | null, input: SessionPersistenceInput | null | undefined): SessionPersistence | null {
  if (input === undefined) return stored;
  if (input === null || !Object.keys(input).length) return null;
  const type = input.type ?? stored?.type;
  if (!type) throw apiError('INVALID_INPUT', 'type', 'None', 'Mandatory field missing.');
  const keepCookie = stored?.type === type;
  return {
    type,
    cookie_name: input.cookie_name !== undefined ? input.cookie_name : keepCookie ? stored.cookie_name : null,
    persistence_timeout: input.persistence_timeout !== undefined ? input.persistence_timeout : (stored?.persistence_timeout ?? null),
    persistence_granularity: input.persistence_granularity !== undefined ? input.persistence_granularity : (stored?.persistence_granularity ?? null),
  };
}

function poolDefaults(lbAlgorithm: string, tlsEnabled: boolean): PoolSettings {
  return {
    lb_algorithm: lbAlgorithm,
    session_persistence: null,
    tls_enabled: false,
    tls_container_ref: null,
    ca_tls_container_ref: null,
    crl_container_ref: null,
    ...tlsDefaults(tlsEnabled),
  };
}

/** Enabling backend TLS fills the cipher, version and ALPN settings still unset with the defaults. */
function fillTlsDefaults(spec: PoolSpec): PoolSpec {
  if (!spec.tls_enabled) return spec;
  const defaults = tlsDefaults(true);
  return {
    ...spec,
    tls_ciphers: spec.tls_ciphers ?? defaults.tls_ciphers,
    tls_versions: spec.tls_versions ?? defaults.tls_versions,
    alpn_protocols: spec.alpn_protocols ?? defaults.alpn_protocols,
  };
}

function validatePool(spec: PoolSpec): void {
  if (spec.session_persistence) validateSessionPersistence(spec.session_persistence, spec.protocol);
  if (spec.crl_container_ref && !spec.ca_tls_container_ref) throw invalid('A CA certificate reference is required to specify a revocation list.');
  checkTlsVersions(spec.tls_versions);
  checkAlpnProtocols(spec.alpn_protocols);
}

export function poolSpecForCreate(input: PoolSpecInput): PoolSpec {
  const defaults = poolDefaults(input.lb_algorithm, !!input.tls_enabled);
  const { session_persistence, ...rest } = input;
  const spec = fillTlsDefaults({
    ...withDefaults(defaults, rest, defaults),
    session_persistence: mergeSessionPersistence(null, session_persistence),
    protocol: input.protocol,
  });
  validatePool(spec);
  return spec;
}

export function poolSpecForUpdate(stored: PoolSpec, patch: PoolSpecPatch): PoolSpec {
  const tlsEnabled = patch.tls_enabled === undefined ? stored.tls_enabled : !!patch.tls_enabled;
  const { session_persistence, ...rest } = patch;
  const spec = fillTlsDefaults({
    ...withDefaults(stored, rest, poolDefaults(stored.lb_algorithm, tlsEnabled)),
    session_persistence: mergeSessionPersistence(stored.session_persistence, session_persistence),
    protocol: stored.protocol,
  });
  validatePool(spec);
  return spec;
}

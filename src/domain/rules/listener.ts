/**
 * Listener rules of Octavia's API: the listener↔pool protocol matrix, port uniqueness per L4
 * family, header insertion, TLS references, allowed CIDRs, HSTS and the TLS defaults. They are
 * pure (plain values in, settings or an ApiError out) so providers and renderers reuse them.
 * The TLS defaulting and patch-merging helpers here serve the pool rules too.
 */
import { apiError } from '../errors.js';
import {
  AlpnProtocol, InsertHeader, ListenerPoolCompatibility, TcpFamilyProtocols, TerminatedHttpsInsertHeader, TlsVersion,
  type ListenerProtocol,
} from '../enums.js';
import { ListenerDefaults } from '../defaults.js';
import { ipVersion, normaliseCidr, parseCidr } from '../net.js';
import { unsupportedTlsVersions } from '../grammar/tls.js';
import { checkAcmeListener, normaliseAcmeDomains } from './acme.js';

/** Update semantics of a PUT body: omitted keys are absent, `null` asks for the default. */
export type Patch<T> = { [K in keyof T]?: T[K] | null };

/**
 * Applies `patch` over `base`: keys the patch omits keep their value, explicit nulls take
 * `defaults`. With `base = defaults` this is create-time defaulting. Only keys of `defaults`
 * are looked at, so a request body may carry other attributes.
 */
export function withDefaults<T extends object>(base: T, patch: Patch<T>, defaults: T): T {
  const out = { ...base };
  for (const key of Object.keys(defaults) as Array<keyof T>) {
    const value = patch[key];
    if (value === undefined) continue;
    out[key] = value === null ? defaults[key] : (value as T[keyof T]);
  }
  return out;
}

/** Octavia's WSME quirk: an explicit `admin_state_up: null` means false, not the default. */
export function adminStateOf(value: boolean | null | undefined, current: boolean): boolean {
  return value === undefined ? current : !!value;
}

export interface TlsSettings {
  tls_ciphers: string | null;
  tls_versions: string[] | null;
  alpn_protocols: string[] | null;
}

/** Ciphers, versions and ALPN apply only where TLS is spoken; elsewhere they default to null. */
export function tlsDefaults(tlsInUse: boolean): TlsSettings {
  if (!tlsInUse) return { tls_ciphers: null, tls_versions: null, alpn_protocols: null };
  return {
    tls_ciphers: ListenerDefaults.tls_ciphers,
    tls_versions: [...ListenerDefaults.tls_versions],
    alpn_protocols: [...ListenerDefaults.alpn_protocols],
  };
}

/** How Python prints a list of strings: Octavia interpolates lists into some messages. */
export function pyList(items: readonly string[]): string {
  return `[${items.map((i) => `'${i}'`).join(', ')}]`;
}

const invalid = (detail: string) => apiError('VALIDATION', detail);

export function checkTlsVersions(versions: readonly string[] | null): void {
  if (versions === null) return;
  if (!versions.length) throw invalid('Empty TLS version list. Either specify at least one TLS version or remove this parameter to use the default.');
  const unknown = versions.filter((v) => !(TlsVersion as readonly string[]).includes(v));
  if (unknown.length) throw invalid(`Invalid TLS versions: ${unknown.join(', ')}`);
  // Beyond Octavia: SSLv3 is in its list, but no version HAProxy's OpenSSL cannot speak is accepted.
  const unsupported = unsupportedTlsVersions(versions);
  if (unsupported) throw apiError('INVALID_INPUT', 'tls_versions', pyList(versions), `Value should list versions HAProxy speaks: ${unsupported}`);
}

export function checkAlpnProtocols(protocols: readonly string[] | null): void {
  if (protocols === null) return;
  if (!protocols.length) throw invalid('Empty ALPN protocol list. Either specify at least one ALPN protocol or remove this parameter to use the default.');
  const unknown = protocols.filter((p) => !(AlpnProtocol as readonly string[]).includes(p));
  if (unknown.length) throw invalid(`Invalid ALPN protocol: ${unknown.join(', ')}`);
}

// ---------------------------------------------------------------------------------------
// Protocols and ports

export type L4Protocol = 'TCP' | 'UDP' | 'SCTP';

/** The transport a listener protocol binds: ports are unique per load balancer per transport. */
export function l4Protocol(protocol: string): L4Protocol {
  return TcpFamilyProtocols.includes(protocol) ? 'TCP' : (protocol as L4Protocol);
}

export interface PortUse {
  readonly protocol: string;
  readonly protocol_port: number;
}

/** The listener among `others` already holding `candidate`'s port in the same L4 family, if any. */
export function portHolder(candidate: PortUse, others: readonly PortUse[]): PortUse | undefined {
  const family = l4Protocol(candidate.protocol);
  return others.find((o) => o.protocol_port === candidate.protocol_port && l4Protocol(o.protocol) === family);
}

export function assertPortFree(candidate: PortUse, others: readonly PortUse[]): void {
  const holder = portHolder(candidate, others);
  if (holder)
    throw apiError('DUPLICATE', `Another Listener on this Load Balancer is already using protocol ${holder.protocol} and protocol_port ${holder.protocol_port}`);
}

/** §3.14: may a listener of `listenerProtocol` forward to a pool of `poolProtocol`? */
export function assertPoolProtocolAllowed(listenerProtocol: string, poolProtocol: string): void {
  if (listenerProtocol === 'PROMETHEUS') throw apiError('LISTENER_NO_CHILDREN', listenerProtocol);
  const allowed: readonly string[] = ListenerPoolCompatibility[listenerProtocol as ListenerProtocol] ?? [];
  if (!allowed.includes(poolProtocol))
    throw invalid(`The pool protocol '${poolProtocol}' is invalid while the listener protocol is '${listenerProtocol}'.`);
}

// ---------------------------------------------------------------------------------------
// Listener settings

export interface ListenerSettings extends TlsSettings {
  connection_limit: number;
  insert_headers: Record<string, string>;
  timeout_client_data: number;
  timeout_member_connect: number;
  timeout_member_data: number;
  timeout_tcp_inspect: number;
  default_tls_container_ref: string | null;
  sni_container_refs: string[];
  client_authentication: string;
  client_ca_tls_container_ref: string | null;
  client_crl_container_ref: string | null;
  allowed_cidrs: string[] | null;
  hsts_max_age: number | null;
  hsts_include_subdomains: boolean;
  hsts_preload: boolean;
  /** Ostia extension: names whose certificate Ostia orders by ACME and renews (./acme.ts), or null. */
  acme_domains: string[] | null;
}

/** A listener's protocol and port, fixed at create, plus its settings. */
export interface ListenerSpec extends ListenerSettings, PortUse {
  readonly protocol: ListenerProtocol;
}

/** What the rules need to know about the load balancer and the deployment. */
export interface ListenerEnv {
  /** Every VIP address of the load balancer: allowed CIDRs must match one's IP family. */
  readonly vipAddresses: readonly string[];
  readonly hasVipSecurityGroups: boolean;
  readonly allowTerminatedHttps: boolean;
  readonly allowPrometheus: boolean;
}

/** The value each setting takes when omitted on create or reset with null on update. */
export function listenerDefaults(protocol: string): ListenerSettings {
  return {
    connection_limit: ListenerDefaults.connection_limit,
    insert_headers: {},
    timeout_client_data: ListenerDefaults.timeout_client_data,
    timeout_member_connect: ListenerDefaults.timeout_member_connect,
    timeout_member_data: ListenerDefaults.timeout_member_data,
    timeout_tcp_inspect: ListenerDefaults.timeout_tcp_inspect,
    default_tls_container_ref: null,
    sni_container_refs: [],
    client_authentication: ListenerDefaults.client_authentication,
    client_ca_tls_container_ref: null,
    client_crl_container_ref: null,
    allowed_cidrs: null,
    ...tlsDefaults(protocol === 'TERMINATED_HTTPS'),
    hsts_max_age: null,
    hsts_include_subdomains: false,
    hsts_preload: false,
    acme_domains: null,
  };
}

export function validateInsertHeaders(protocol: string, headers: Readonly<Record<string, string>>): void {
  const names = Object.keys(headers);
  if (!names.length) return;
  if (protocol !== 'HTTP' && protocol !== 'TERMINATED_HTTPS') throw apiError('INVALID_OPTION', 'insert-headers', `a ${protocol} protocol listener.`);
  const known: readonly string[] = [...InsertHeader, ...TerminatedHttpsInsertHeader];
  if (names.some((n) => !known.includes(n))) throw apiError('INVALID_OPTION', pyList(names), 'insert_headers');
  const sslOnly = names.filter((n) => (TerminatedHttpsInsertHeader as readonly string[]).includes(n));
  if (protocol !== 'TERMINATED_HTTPS' && sslOnly.length) throw apiError('INVALID_OPTION', pyList(sslOnly), `${protocol} protocol listener.`);
}

function certificateRefs(s: ListenerSettings): string[] {
  return [s.default_tls_container_ref, ...s.sni_container_refs, s.client_ca_tls_container_ref, s.client_crl_container_ref].filter((r): r is string => !!r);
}

/**
 * Only the presence of TLS references per protocol is checked here; src/api/tls-refs.ts
 * resolves and parses them through the key manager.
 */
function validateTls(spec: ListenerSpec, phase: 'create' | 'update', settingDefaultRef: boolean): void {
  const { protocol } = spec;
  const refs = certificateRefs(spec);
  if (protocol === 'UDP' || protocol === 'SCTP') {
    if (refs.length || Object.keys(spec.insert_headers).length || spec.client_authentication !== 'NONE')
      throw invalid(phase === 'create' ? `${protocol} protocol listener does not support TLS.` : `${protocol} protocol listener does not support TLS or header insertion.`);
  }
  validateInsertHeaders(protocol, spec.insert_headers);
  checkAcmeListener(spec, settingDefaultRef);
  const hasCertificate = !!spec.default_tls_container_ref || spec.sni_container_refs.length > 0 || spec.acme_domains !== null;
  const terminatesTls = protocol === 'TERMINATED_HTTPS' || (protocol === 'PROMETHEUS' && hasCertificate);
  if (!terminatesTls && refs.length) throw invalid(`Certificate container references are not allowed on ${protocol} protocol listeners.`);
  if (protocol === 'TERMINATED_HTTPS' && !hasCertificate)
    throw invalid(`An SNI or default certificate container reference must be provided for ${protocol} protocol listeners.`);
  if (spec.client_authentication !== 'NONE' && !spec.client_ca_tls_container_ref)
    throw invalid(`Client authentication setting ${spec.client_authentication} requires a client CA container reference.`);
  if (spec.client_crl_container_ref && !spec.client_ca_tls_container_ref)
    throw invalid('A client authentication CA reference is required to specify a client authentication revocation list.');
  checkTlsVersions(spec.tls_versions);
  checkAlpnProtocols(spec.alpn_protocols);
}

function validateHsts(spec: ListenerSpec): void {
  const used = spec.hsts_max_age !== null || spec.hsts_include_subdomains || spec.hsts_preload;
  if (used && spec.protocol !== 'TERMINATED_HTTPS')
    throw invalid('The HSTS feature can only be used for listeners using the TERMINATED_HTTPS protocol.');
  if ((spec.hsts_include_subdomains || spec.hsts_preload) && spec.hsts_max_age === null)
    throw invalid('HSTS configuration options hsts_include_subdomains and hsts_preload only make sense if hsts_max_age is set as well.');
}

/**
 * Allowed CIDRs as stored: host bits cleared, duplicates dropped, `null` when none (Octavia
 * renders an empty list as null). Each must share an IP family with some VIP.
 */
export function normaliseAllowedCidrs(cidrs: readonly string[] | null, env: Pick<ListenerEnv, 'vipAddresses' | 'hasVipSecurityGroups'>): string[] | null {
  if (!cidrs || !cidrs.length) return null;
  if (env.hasVipSecurityGroups) throw invalid('Allowed CIDRs are not allowed when using custom VIP Security Groups.');
  const normalised = [...new Set(cidrs.map(normaliseCidr))];
  for (const cidr of normalised) {
    const family = parseCidr(cidr)?.version;
    if (!env.vipAddresses.some((a) => ipVersion(a) === family))
      throw invalid(`CIDR ${cidr} IP version incompatible with all VIPs ${pyList(env.vipAddresses)} IP version.`);
  }
  return normalised;
}

function checkProtocolEnabled(protocol: string, env: ListenerEnv): void {
  if ((protocol === 'TERMINATED_HTTPS' && !env.allowTerminatedHttps) || (protocol === 'PROMETHEUS' && !env.allowPrometheus))
    throw apiError('DISABLED_OPTION', 'protocol', protocol);
}

/** A new listener's settings: defaults applied, every create-time rule checked. */
export function listenerSpecForCreate(input: PortUse & { protocol: ListenerProtocol } & Patch<ListenerSettings>, env: ListenerEnv): ListenerSpec {
  checkProtocolEnabled(input.protocol, env);
  const defaults = listenerDefaults(input.protocol);
  const spec: ListenerSpec = { ...withDefaults(defaults, input, defaults), protocol: input.protocol, protocol_port: input.protocol_port };
  spec.acme_domains = normaliseAcmeDomains(spec.acme_domains);
  validateTls(spec, 'create', !!input.default_tls_container_ref);
  validateHsts(spec);
  return { ...spec, allowed_cidrs: normaliseAllowedCidrs(spec.allowed_cidrs, env) };
}

/** A stored listener with a PUT body applied: the merged result must satisfy every rule. */
export function listenerSpecForUpdate(stored: ListenerSpec, patch: Patch<ListenerSettings>, env: ListenerEnv): ListenerSpec {
  const spec: ListenerSpec = { ...withDefaults(stored, patch, listenerDefaults(stored.protocol)), protocol: stored.protocol, protocol_port: stored.protocol_port };
  if (patch.acme_domains !== undefined) spec.acme_domains = normaliseAcmeDomains(spec.acme_domains);
  validateTls(spec, 'update', patch.default_tls_container_ref !== undefined);
  validateHsts(spec);
  // Stored CIDRs were checked when set; only new ones are judged against today's VIPs.
  if (patch.allowed_cidrs !== undefined) spec.allowed_cidrs = normaliseAllowedCidrs(patch.allowed_cidrs, env);
  return spec;
}

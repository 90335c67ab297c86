/**
 * Health monitor rules, free of I/O so the API, providers and config renderers apply the
 * same ones: which monitor types a pool protocol admits, the HTTP-only fields and their
 * defaults, the url_path grammar and the HTTP/1.1 domain-name check. Wording is Octavia's.
 */
import { apiError } from '../errors.js';
import { HealthMonitorDefaults } from '../defaults.js';
import { L4OnlyPoolProtocols, type HealthMonitorType } from '../enums.js';
import { isPrintable } from '../grammar/printable.js';

/** Deployment settings the rules depend on (from the config, passed in by the caller). */
export interface HealthMonitorSettings {
  readonly allowPing: boolean;
  readonly udpConnectMinDelay: number;
}

/** A monitor as stored and rendered: defaults applied, HTTP fields null for other types. */
export type HealthMonitorAttrs = {
  name: string;
  admin_state_up: boolean;
  type: HealthMonitorType;
  delay: number;
  timeout: number;
  max_retries: number;
  max_retries_down: number;
  http_method: string | null;
  url_path: string | null;
  expected_codes: string | null;
  http_version: number | null;
  domain_name: string | null;
};

type Optional<T> = T | null | undefined;

/** What a create request carries once its schema accepted it. */
export interface HealthMonitorRequest {
  name?: Optional<string>;
  admin_state_up?: Optional<boolean>;
  type: HealthMonitorType;
  delay: number;
  timeout: number;
  max_retries: number;
  max_retries_down?: Optional<number>;
  http_method?: Optional<string>;
  url_path?: Optional<string>;
  expected_codes?: Optional<string>;
  http_version?: Optional<number>;
  domain_name?: Optional<string>;
}

/** An update: absent = unchanged, null = reset (or refused for delay/timeout/max_retries). */
export type HealthMonitorPatch = { [K in Exclude<keyof HealthMonitorRequest, 'type'>]?: Optional<HealthMonitorRequest[K]> };

const HTTP_ONLY_FIELDS = ['http_method', 'url_path', 'expected_codes'] as const;
const UDP_POOL_MONITOR_TYPES: readonly string[] = ['UDP-CONNECT', 'SCTP', 'TCP', 'HTTP'];
const L4_ONLY_MONITOR_TYPES: readonly string[] = ['UDP-CONNECT', 'SCTP'];

export function isHttpMonitor(type: string): boolean {
  return type === 'HTTP' || type === 'HTTPS';
}

// RFC 3986 path characters (pchar and '/'), or a percent-encoded octet.
const PATH_CHARS = /^(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*$/;

/**
 * Octavia's URLPathType: an absolute path (query and fragment allowed), no whitespace or other
 * character HAProxy cannot read, no scheme, user info, host or port — a leading `//` would parse as an authority.
 */
export function isUrlPath(value: string): boolean {
  if (/\s/.test(value) || !isPrintable(value) || !value.startsWith('/') || value.startsWith('//')) return false;
  const path = value.split(/[?#]/, 1)[0]!;
  return PATH_CHARS.test(path);
}

export function checkUrlPath(value: string | null | undefined): void {
  if (value !== null && value !== undefined && !isUrlPath(value))
    throw apiError('INVALID_INPUT', 'url_path', value, 'Value must be a valid URL Path string');
}

function checkUdpConnectDelay(type: string, delay: number | undefined, settings: HealthMonitorSettings): void {
  if (type === 'UDP-CONNECT' && delay !== undefined && delay < settings.udpConnectMinDelay)
    throw apiError('VALIDATION', `The request delay value ${delay} should be larger than ${settings.udpConnectMinDelay} for UDP-CONNECT health monitor type.`);
}

/** The pool↔monitor matrix, in Octavia's order: UDP/SCTP pools first, then L4-only types elsewhere. */
export function checkMonitorTypeForPool(type: string, delay: number | undefined, poolProtocol: string, settings: HealthMonitorSettings): void {
  if (L4OnlyPoolProtocols.includes(poolProtocol)) {
    if (!UDP_POOL_MONITOR_TYPES.includes(type))
      throw apiError('VALIDATION', `The associated pool protocol is ${poolProtocol}, so only a ${UDP_POOL_MONITOR_TYPES.join('/')} health monitor is supported.`);
    checkUdpConnectDelay(type, delay, settings);
  } else if (L4_ONLY_MONITOR_TYPES.includes(type)) {
    throw apiError('VALIDATION', `The ${type} type is only supported for pools of type ${L4OnlyPoolProtocols.join('/')}.`);
  }
}

function refuseHttpFields(type: string, present: (field: (typeof HTTP_ONLY_FIELDS)[number]) => boolean): void {
  if (isHttpMonitor(type)) return;
  for (const field of HTTP_ONLY_FIELDS) {
    if (present(field)) throw apiError('INVALID_OPTION', field, `health monitors of type ${type}`);
  }
}

function checkDomainName(domainName: string | null, httpVersion: number | null): void {
  if (!domainName) return;
  if (!httpVersion) throw apiError('VALIDATION', "'http_version' must be specified when 'domain_name' is provided.");
  if (httpVersion < 1.1) throw apiError('INVALID_OPTION', `http_version ${httpVersion.toFixed(1)}`, 'health monitors HTTP 1.1 domain name health check');
}

/**
 * Beyond Octavia's pattern: only spaces may pad the commas (a newline would reach the proxy
 * config), and a range must go upwards (`204-200` matches nothing and the proxy refuses it).
 */
function checkExpectedCodes(codes: string | null): void {
  if (!codes) return;
  const range = /^(\d{3})-(\d{3})$/.exec(codes);
  if (/[^\d ,-]/.test(codes) || (range && Number(range[1]) > Number(range[2]))) throw apiError('INVALID_OPTION', codes, 'expected_codes');
}

/** Validates a new monitor for a pool of `poolProtocol` and fills in Octavia's defaults. */
export function resolveHealthMonitorCreate(req: HealthMonitorRequest, poolProtocol: string, settings: HealthMonitorSettings): HealthMonitorAttrs {
  checkUrlPath(req.url_path);
  if (req.type === 'PING' && !settings.allowPing) throw apiError('DISABLED_OPTION', 'type', 'PING');
  checkMonitorTypeForPool(req.type, req.delay, poolProtocol, settings);
  // Octavia tests truthiness here: an explicit null or "" counts as absent.
  refuseHttpFields(req.type, (field) => Boolean(req[field]));
  const http = isHttpMonitor(req.type);
  const attrs: HealthMonitorAttrs = {
    name: req.name ?? '',
    // Octavia's quirk: an explicit null admin_state_up means false.
    admin_state_up: req.admin_state_up === undefined ? true : Boolean(req.admin_state_up),
    type: req.type,
    delay: req.delay,
    timeout: req.timeout,
    max_retries: req.max_retries,
    max_retries_down: req.max_retries_down ?? HealthMonitorDefaults.max_retries_down,
    http_method: http ? req.http_method || HealthMonitorDefaults.http_method : null,
    url_path: http ? req.url_path || HealthMonitorDefaults.url_path : null,
    expected_codes: http ? req.expected_codes || HealthMonitorDefaults.expected_codes : null,
    http_version: req.http_version ?? null,
    domain_name: req.domain_name ?? null,
  };
  checkDomainName(attrs.domain_name, attrs.http_version);
  checkExpectedCodes(attrs.expected_codes);
  return attrs;
}

/** Validates an update against the stored monitor; returns the monitor as it will be. */
export function resolveHealthMonitorUpdate(stored: HealthMonitorAttrs, patch: HealthMonitorPatch, poolProtocol: string, settings: HealthMonitorSettings): HealthMonitorAttrs {
  checkUrlPath(patch.url_path);
  refuseHttpFields(stored.type, (field) => patch[field] !== undefined);
  for (const field of ['delay', 'max_retries', 'timeout'] as const) {
    if (patch[field] === null) throw apiError('INVALID_OPTION', 'None', field);
  }
  if (L4OnlyPoolProtocols.includes(poolProtocol)) checkUdpConnectDelay(stored.type, patch.delay ?? undefined, settings);
  const pick = <K extends keyof HealthMonitorAttrs>(key: K & keyof HealthMonitorPatch, reset: HealthMonitorAttrs[K]): HealthMonitorAttrs[K] => {
    const v = patch[key] as HealthMonitorAttrs[K] | null | undefined;
    return v === undefined ? stored[key] : v === null ? reset : v;
  };
  const merged: HealthMonitorAttrs = {
    ...stored,
    name: pick('name', ''),
    admin_state_up: pick('admin_state_up', false),
    delay: patch.delay ?? stored.delay,
    timeout: patch.timeout ?? stored.timeout,
    max_retries: patch.max_retries ?? stored.max_retries,
    max_retries_down: pick('max_retries_down', HealthMonitorDefaults.max_retries_down),
    http_method: pick('http_method', HealthMonitorDefaults.http_method),
    url_path: pick('url_path', HealthMonitorDefaults.url_path),
    expected_codes: pick('expected_codes', HealthMonitorDefaults.expected_codes),
    http_version: pick('http_version', null),
    domain_name: pick('domain_name', null),
  };
  checkDomainName(merged.domain_name, merged.http_version);
  checkExpectedCodes(merged.expected_codes);
  return merged;
}

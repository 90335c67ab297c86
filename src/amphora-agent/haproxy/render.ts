/**
 * AmphoraConfig → haproxy.cfg for HAProxy 2.6. Every line is built from fixed keywords plus
 * values that went through an encoder of ./encoders.ts; the domain rules the API applies are
 * applied again here, so a value that slipped past the API is refused (RenderError), never
 * rendered. Output is deterministic: the same config always gives the same text.
 *
 * TLS material is never in the file: certificates, CA bundles and CRLs are files of the
 * amphora's TLS directory (named by ./tls-files.ts), which the file only names.
 *
 * What is left out rather than refused: a disabled load balancer (no proxies at all), disabled
 * listeners and pools, listeners HAProxy does not serve here (UDP is the agent's nftables table,
 * ../udp/; SCTP and PROMETHEUS would need LVS or the exporter, which the provider refuses), disabled L7 policies and rules, and policies with no enabled rule
 * (they never match). Cookie persistence on a TCP-mode backend is left out: HAProxy cannot
 * read cookies there and would ignore it with a warning.
 */
import { join } from 'node:path';
import type {
  AmphoraConfig, L7PolicyConfig, L7RuleConfig, ListenerConfig, ListenerTlsConfig, MemberConfig, MonitorConfig, PoolConfig, PoolTlsConfig,
} from '../../domain/amphora-config.js';
import { HealthMonitorDefaults, L7PolicyDefaults } from '../../domain/defaults.js';
import {
  AlpnProtocol, ClientAuthentication, HealthMonitorType, HttpMethod, HttpVersion, InsertHeader, L7PolicyAction, L7RuleCompareType, L7RuleType,
  ListenerPoolCompatibility, RedirectHttpCode, SessionPersistenceType, TerminatedHttpsInsertHeader, type ListenerProtocol,
} from '../../domain/enums.js';
import { isApiError } from '../../domain/errors.js';
import { checkMonitorTypeForPool, isHttpMonitor, isUrlPath } from '../../domain/rules/healthmonitor.js';
import { isRedirectUrl, validateL7Rule } from '../../domain/rules/l7.js';
import { validateInsertHeaders } from '../../domain/rules/listener.js';
import { MaxInt32, MaxMonitorSeconds, MaxTimerMs } from '../../domain/grammar/limits.js';
import { tlsVersionRange, unsupportedTlsVersions } from '../../domain/grammar/tls.js';
import { HTTP01_PORT, TLS_ALPN01_PORT } from '../../domain/rules/acme.js';
import { validateSessionPersistence } from '../../domain/rules/pool.js';
import * as enc from './encoders.js';
import { RenderError } from './encoders.js';
import { backendName, frontendName, serverName } from './names.js';
import { listenerCertificateFile, listenerClientCaFile, listenerClientCrlFile, poolCaFile, poolCertificateFile, poolCrlFile } from './tls-files.js';

export { RenderError };

/** Absolute paths inside the amphora's own directory. */
export interface HaproxyPaths {
  stateFile: string;
  statsSocket: string;
  pidFile: string;
  /** Where the agent writes the TLS files of ./tls-files.ts. */
  tlsDir: string;
  /** The map of ACME HTTP-01 tokens to key authorizations (AmphoraConfig.acmeHttp01). */
  acmeMap: string;
  /** The crt-list of TLS-ALPN-01 challenge certificates (AmphoraConfig.acmeTlsAlpn01). */
  acmeAlpnCrtList: string;
}

export interface RenderOptions {
  /** Global connection cap: HAProxy needs ~2 file descriptors per connection. */
  maxconn: number;
  /**
   * Whether a TLS-ALPN-01 validation is under way (the agent holds a challenge certificate): the
   * relay that answers it is rendered only then, as it costs every connection to the listener on
   * port 443 a hop (measured: ~0.6× the requests/s of small keep-alive requests).
   */
  tlsAlpn01Answering?: boolean;
}

/** The listener protocols rendered; the provider refuses the others before they get here. */
export const RenderedListenerProtocols: readonly ListenerProtocol[] = ['HTTP', 'HTTPS', 'TCP', 'TERMINATED_HTTPS'];

type Mode = 'http' | 'tcp';

// HAProxy refuses `inter 0`; the API allows a delay of 0, checked once a second here.
const MIN_CHECK_INTERVAL_MS = 1000;
// How long an old worker keeps long-lived TCP connections after a reload before cutting them.
const HARD_STOP_AFTER = '60s';
// Octavia's [haproxy_amphora] haproxy_stick_size default.
const STICK_TABLE_SIZE = '10k';
// HAProxy reads at most 64 words per line: long CIDR lists are split over several `acl` lines.
const CIDRS_PER_LINE = 32;
const ALLOWED_CIDRS_ACL = 'allowed-cidrs';
const PERSISTENCE_COOKIE = 'SRV';
// The peers section of an ACTIVE_STANDBY pair, which every stick table names.
const PEERS_SECTION = 'pair';
// RFC 8555 §8.3: the validation server asks http://<domain>/.well-known/acme-challenge/<token> on port 80.
const ACME_PREFIX = '/.well-known/acme-challenge/';
const ACME_VARIABLE = 'txn.acme_key_authorization';
// The answerer of its own, when no listener holds port 80: nothing but challenges, briefly.
const ACME_FRONTEND = 'acme-http-01';
const ACME_CLIENT_TIMEOUT = '10s';
// RFC 8737 §3: TLS-ALPN-01 validation offers this protocol alone in its ClientHello.
const ACME_TLS_PROTOCOL = 'acme-tls/1';
const ACME_TLS_ACL = 'acme-tls-alpn-01';
// The relay on port 443 in front of the listener there; the answerer behind it; the way to the listener.
const ACME_TLS_RELAY = 'acme-tls-alpn-01-relay';
const ACME_TLS_ANSWERER = 'acme-tls-alpn-01';
const ACME_TLS_TO_LISTENER = 'acme-tls-alpn-01-listener';
// How long the relay waits for a ClientHello before passing the connection on as it is.
const CLIENT_HELLO_WAIT = '5s';
// Both ends of the relay's hops are this HAProxy's own sockets.
const RELAY_CONNECT_TIMEOUT = '5s';

// ---------------------------------------------------------------------------------------
// The plan: which proxies exist, named, before any line is written

interface BackendPlan {
  readonly name: string;
  readonly pool: PoolConfig;
  readonly listener: ListenerConfig;
  readonly mode: Mode;
}

interface PolicyPlan {
  readonly policy: L7PolicyConfig;
  readonly rules: readonly L7RuleConfig[];
  /** For REDIRECT_TO_POOL: the backend it sends to. */
  readonly backend: string | null;
}

interface FrontendPlan {
  readonly listener: ListenerConfig;
  readonly mode: Mode;
  readonly policies: readonly PolicyPlan[];
  readonly defaultBackend: string | null;
  readonly backends: readonly BackendPlan[];
}

/** One backend as the runtime client and the heartbeat see it. */
export interface RenderedBackend {
  readonly name: string;
  readonly poolId: string;
  readonly listenerId: string;
}

function at(kind: string, id: unknown, attribute: string): string {
  return `${kind} ${JSON.stringify(String(id)).slice(1, -1)} ${attribute}`;
}

/** Runs a domain rule of the API and reports its refusal as a RenderError on `field`. */
function underDomainRule(field: string, value: unknown, check: () => void): void {
  try {
    check();
  } catch (e) {
    if (isApiError(e)) throw new RenderError(field, value, e.message);
    throw e;
  }
}

function assertUnique(field: string, ids: readonly string[]): void {
  const seen = new Set<string>();
  for (const id of ids) {
    if (seen.has(id)) throw new RenderError(field, id, 'is not unique');
    seen.add(id);
  }
}

function modeOf(protocol: ListenerProtocol): Mode {
  return protocol === 'HTTP' || protocol === 'TERMINATED_HTTPS' ? 'http' : 'tcp';
}

/** Enabled policies with their enabled rules, in position order; a policy without rules never matches. */
function activePolicies(listener: ListenerConfig): Array<{ policy: L7PolicyConfig; rules: L7RuleConfig[] }> {
  return [...listener.l7policies]
    .filter((policy) => policy.enabled && enc.oneOf(at('l7policy', policy.id, 'action'), policy.action, L7PolicyAction))
    .sort((a, b) => a.position - b.position)
    .map((policy) => ({ policy, rules: policy.rules.filter((rule) => rule.enabled) }))
    .filter(({ rules }) => rules.length > 0);
}

function planFrontend(listener: ListenerConfig, pools: ReadonlyMap<string, PoolConfig>): FrontendPlan {
  const mode = modeOf(listener.protocol);
  const backends = new Map<string, BackendPlan>();
  const backendOf = (poolId: string | null): string | null => {
    const pool = poolId === null ? undefined : pools.get(poolId);
    if (!pool?.enabled) return null;
    if (!ListenerPoolCompatibility[listener.protocol].includes(pool.protocol))
      throw new RenderError(at('pool', pool.id, 'protocol'), pool.protocol, `cannot serve a ${listener.protocol} listener`);
    const name = backendName(pool.id, listener.id);
    if (!backends.has(name)) backends.set(name, { name, pool, listener, mode });
    return name;
  };
  const defaultBackend = backendOf(listener.defaultPoolId);
  if (mode !== 'http' && listener.l7policies.length > 0)
    throw new RenderError(at('listener', listener.id, 'l7policies'), listener.l7policies.length, `L7 policies need an HTTP listener, not ${listener.protocol}`);
  const policies = activePolicies(listener).flatMap(({ policy, rules }): PolicyPlan[] => {
    if (policy.action !== 'REDIRECT_TO_POOL') return [{ policy, rules, backend: null }];
    // A policy whose pool is disabled does not match, as in Octavia: the request goes on.
    const backend = backendOf(policy.redirectPoolId);
    return backend ? [{ policy, rules, backend }] : [];
  });
  return { listener, mode, policies, defaultBackend, backends: [...backends.values()] };
}

function planFrontends(config: AmphoraConfig): FrontendPlan[] {
  if (!config.enabled) return [];
  assertUnique('pool id', config.pools.map((p) => p.id));
  assertUnique('listener id', config.listeners.map((l) => l.id));
  const pools = new Map(config.pools.map((p) => [p.id, p]));
  return config.listeners
    .filter((l) => l.enabled && RenderedListenerProtocols.includes(l.protocol))
    .map((l) => planFrontend(l, pools));
}

/** Every backend the rendered file holds, in file order. */
export function renderedBackends(config: AmphoraConfig): RenderedBackend[] {
  return planFrontends(config).flatMap((f) => f.backends.map((b) => ({ name: b.name, poolId: b.pool.id, listenerId: b.listener.id })));
}

// ---------------------------------------------------------------------------------------
// Numbers

function timeoutMs(field: string, ms: number): string {
  return enc.integer(field, ms, 0, MaxTimerMs);
}

function secondsAsMs(field: string, seconds: number, floor = 0): string {
  enc.integer(field, seconds, 0, MaxMonitorSeconds);
  return String(Math.max(seconds * 1000, floor));
}

// ---------------------------------------------------------------------------------------
// global and defaults

function globalSection(config: AmphoraConfig, paths: HaproxyPaths, opts: RenderOptions): string[] {
  return [
    'global',
    // This amphora's entry of the peers section: the one HAProxy binds and pushes its tables from.
    ...(config.vrrp ? [`localpeer ${enc.uuid('amphora id', config.amphoraId)}`] : []),
    `maxconn ${enc.integer('maxconn', opts.maxconn, 1, MaxInt32)}`,
    `stats socket ${enc.absolutePath('stats socket', paths.statsSocket)} mode 600 level admin expose-fd listeners`,
    `server-state-file ${enc.absolutePath('server state file', paths.stateFile)}`,
    `pidfile ${enc.absolutePath('pid file', paths.pidFile)}`,
    `hard-stop-after ${HARD_STOP_AFTER}`,
    // Nothing uses HAProxy's own HTTP client; without this every start, reload and `-c` reads the system CA store (~40 ms).
    'httpclient.ssl.verify none',
  ];
}

/**
 * ACTIVE_STANDBY: the two HAProxies of the pair share their stick tables, so a client that sticks to a
 * member through the MASTER sticks to it through the BACKUP after a failover.
 */
function peersSection(config: AmphoraConfig): string[] {
  const peers = config.vrrp?.haproxyPeers;
  if (!peers) return [];
  assertUnique('haproxy peer name', peers.map((p) => p.name));
  if (!peers.some((p) => p.name === config.amphoraId)) throw new RenderError('haproxy peers', config.amphoraId, 'do not name this amphora');
  return [
    `peers ${PEERS_SECTION}`,
    ...peers.map((p) => `peer ${enc.uuid('haproxy peer name', p.name)} ${enc.socketAddress('haproxy peer address', p.address, 'haproxy peer port', p.port)}`),
  ];
}

function defaultsSection(): string[] {
  // Admin state and weights set through the runtime API survive reloads via the state file.
  return ['defaults', 'load-server-state-from-file global', 'retries 3', 'option redispatch'];
}

// ---------------------------------------------------------------------------------------
// Frontends

function bindAddresses(config: AmphoraConfig): string[] {
  const all = [config.vip.address, ...config.vip.additional].map((a) => enc.ipAddress('vip address', a));
  return [...new Set(all)];
}

/** The listener's source filter; `reject` is the rule that drops what it does not allow (by default, at connection). */
function allowedCidrLines(listener: ListenerConfig, reject = `tcp-request connection reject if !${ALLOWED_CIDRS_ACL}`): string[] {
  if (!listener.allowedCidrs?.length) return [];
  const field = at('listener', listener.id, 'allowed_cidrs');
  const cidrs = [...new Set(listener.allowedCidrs.map((c) => enc.cidr(field, c)))];
  const acls: string[] = [];
  for (let i = 0; i < cidrs.length; i += CIDRS_PER_LINE) acls.push(`acl ${ALLOWED_CIDRS_ACL} src ${cidrs.slice(i, i + CIDRS_PER_LINE).join(' ')}`);
  return [...acls, reject];
}

const MATCH_METHOD: Readonly<Record<L7RuleConfig['compareType'], string>> = {
  REGEX: 'reg',
  STARTS_WITH: 'beg',
  ENDS_WITH: 'end',
  CONTAINS: 'sub',
  EQUAL_TO: 'str',
};

// Rule types whose values Octavia lets be a double-quoted string (the only way to hold a space).
const QUOTABLE_VALUES: readonly string[] = ['HOST_NAME', 'PATH', 'FILE_TYPE', 'HEADER'];

/**
 * The string a rule's value compares with. A quoted value reached Octavia's HAProxy as a quoted
 * word, so what it matches is the text inside the quotes; other values match as they are.
 */
function patternOf(rule: L7RuleConfig): string {
  const quoted = QUOTABLE_VALUES.includes(rule.type) ? /^"([^"]*)"$/.exec(rule.value) : null;
  return quoted ? quoted[1]! : rule.value;
}

/** `-m <method> -- <value>`: `--` ends the flags, so a value such as `-i` stays a pattern. */
function comparison(rule: L7RuleConfig): string {
  const field = at('l7rule', rule.id, 'value');
  const value = rule.compareType === 'REGEX' ? enc.regex(field, rule.value) : enc.pattern(field, patternOf(rule));
  return `-m ${MATCH_METHOD[rule.compareType]} -- ${value}`;
}

function keyed(rule: L7RuleConfig, fetch: string, grammar: (field: string, value: string) => string): string {
  const field = at('l7rule', rule.id, 'key');
  return enc.fetchWithArgument(field, fetch, grammar(field, rule.key ?? ''));
}

/** The sample fetch and match of one rule (Octavia's l7rule_macro). */
function ruleCriterion(rule: L7RuleConfig): string {
  switch (rule.type) {
    case 'HOST_NAME':
      return `req.hdr(host) -i ${comparison(rule)}`;
    case 'PATH':
      return `path ${comparison(rule)}`;
    case 'FILE_TYPE':
      // path_end already matches a suffix; Octavia leaves `-m str` out because HAProxy would
      // then compare the whole path.
      return rule.compareType === 'EQUAL_TO' ? `path_end -- ${enc.pattern(at('l7rule', rule.id, 'value'), patternOf(rule))}` : `path_end ${comparison(rule)}`;
    case 'HEADER':
      return `${keyed(rule, 'req.hdr', enc.httpToken)} ${comparison(rule)}`;
    case 'COOKIE':
      return `${keyed(rule, 'req.cook', enc.httpToken)} ${comparison(rule)}`;
    case 'SSL_CONN_HAS_CERT':
      return 'ssl_c_used';
    case 'SSL_VERIFY_RESULT':
      return `ssl_c_verify eq ${enc.integer(at('l7rule', rule.id, 'value'), Number(rule.value), 0, MaxInt32)}`;
    case 'SSL_DN_FIELD':
      return `${keyed(rule, 'ssl_c_s_dn', enc.dnField)} ${comparison(rule)}`;
  }
}

function ruleAcl(rule: L7RuleConfig): string {
  const id = enc.uuid(at('l7rule', rule.id, 'id'), rule.id);
  const type = enc.oneOf(at('l7rule', id, 'type'), rule.type, L7RuleType);
  const compare_type = enc.oneOf(at('l7rule', id, 'compare_type'), rule.compareType, L7RuleCompareType);
  const { key, value } = rule;
  underDomainRule(at('l7rule', id, 'value'), value, () => validateL7Rule({ type, compare_type, key, value }));
  return `acl ${id} ${ruleCriterion(rule)}`;
}

/** All rules of a policy must match (ANDed ACLs); `invert` negates one. */
function condition(rules: readonly L7RuleConfig[]): string {
  return `if ${rules.map((r) => `${r.invert ? '!' : ''}${enc.uuid(at('l7rule', r.id, 'id'), r.id)}`).join(' ')}`;
}

function redirectCode(policy: L7PolicyConfig): number {
  return enc.oneOf(at('l7policy', policy.id, 'redirect_http_code'), policy.redirectHttpCode ?? L7PolicyDefaults.redirect_http_code, RedirectHttpCode);
}

function redirectTarget(policy: L7PolicyConfig, attribute: string, target: string | null): string {
  return redirectLocation(at('l7policy', policy.id, attribute), target);
}

/** A redirect's URL or prefix as HAProxy reads it: an http(s) URL, written as a log-format literal. */
export function redirectLocation(field: string, target: string | null): string {
  if (target === null || !isRedirectUrl(target)) throw new RenderError(field, target, 'is not an http(s) URL');
  return enc.logFormatLiteral(field, target);
}

function policyAction({ policy, rules, backend }: PolicyPlan): string {
  const when = condition(rules);
  switch (policy.action) {
    case 'REJECT':
      return `http-request deny ${when}`;
    case 'REDIRECT_TO_URL':
      return `http-request redirect location ${redirectTarget(policy, 'redirect_url', policy.redirectUrl)} code ${redirectCode(policy)} ${when}`;
    case 'REDIRECT_PREFIX':
      return `http-request redirect prefix ${redirectTarget(policy, 'redirect_prefix', policy.redirectPrefix)} code ${redirectCode(policy)} ${when}`;
    case 'REDIRECT_TO_POOL':
      return `use_backend ${backend} ${when}`;
  }
}

// Octavia's documented precedence: REJECT policies first, then redirects to URLs, then pools,
// each group in position order.
const ACTION_PRECEDENCE: Readonly<Record<L7PolicyConfig['action'], number>> = { REJECT: 0, REDIRECT_TO_URL: 1, REDIRECT_PREFIX: 1, REDIRECT_TO_POOL: 2 };

function l7Lines(listener: ListenerConfig, policies: readonly PolicyPlan[]): string[] {
  for (const { policy, rules } of policies) {
    if (rules.length > L7PolicyDefaults.maxRulesPerPolicy)
      throw new RenderError(at('l7policy', policy.id, 'rules'), rules.length, `exceeds ${L7PolicyDefaults.maxRulesPerPolicy} rules`);
  }
  const rules = policies.flatMap((p) => p.rules);
  assertUnique(at('listener', listener.id, 'l7rule id'), rules.map((r) => r.id));
  const ordered = [...policies].sort((a, b) => ACTION_PRECEDENCE[a.policy.action] - ACTION_PRECEDENCE[b.policy.action]);
  return [...rules.map(ruleAcl), ...ordered.map(policyAction)];
}

// ---------------------------------------------------------------------------------------
// TLS

type Field = (attribute: string) => string;

/** A file of the TLS directory, by its name in ./tls-files.ts. */
function tlsFile(paths: HaproxyPaths, field: string, name: string): string {
  return enc.absolutePath(field, join(paths.tlsDir, name));
}

/** Versions, ciphers and ALPN, the same on a bind line and a server line. */
function tlsProtocolOptions(field: Field, tls: Pick<ListenerTlsConfig, 'versions' | 'ciphers' | 'alpn'>): string[] {
  const unsupported = unsupportedTlsVersions(tls.versions);
  if (unsupported) throw new RenderError(field('tls_versions'), tls.versions.join(','), unsupported);
  const range = tlsVersionRange(tls.versions);
  if (!range) throw new RenderError(field('tls_versions'), tls.versions.join(','), 'is not one range of versions: HAProxy enables a minimum and a maximum');
  const options = [`ssl-min-ver ${range.min}`, `ssl-max-ver ${range.max}`];
  // One list in the API; OpenSSL takes TLS 1.3 suites separately from older ciphers.
  const { legacy, tls13 } = tls.ciphers === null ? { legacy: [], tls13: [] } : enc.cipherList(field('tls_ciphers'), tls.ciphers);
  if (legacy.length) options.push(`ciphers ${legacy.join(':')}`);
  if (tls13.length) options.push(`ciphersuites ${tls13.join(':')}`);
  if (tls.alpn.length) options.push(`alpn ${tls.alpn.map((p) => enc.oneOf(field('alpn_protocols'), p, AlpnProtocol)).join(',')}`);
  return options;
}

/** What a TERMINATED_HTTPS bind adds: its certificates (the first is the default), client verification, protocol options. */
function bindTlsOptions(listener: ListenerConfig, tls: ListenerTlsConfig, paths: HaproxyPaths): string[] {
  const field = (attribute: string) => at('listener', listener.id, attribute);
  const id = enc.uuid(field('id'), listener.id);
  const options = ['ssl', ...tls.certificates.map((_, slot) => `crt ${tlsFile(paths, field('certificate'), listenerCertificateFile(id, slot))}`)];
  const auth = enc.oneOf(field('client_authentication'), tls.clientAuthentication, ClientAuthentication);
  if (auth !== 'NONE') {
    if (tls.clientCa === null) throw new RenderError(field('client_ca_tls_container_ref'), null, `is required by client_authentication ${auth}`);
    options.push(`verify ${auth === 'MANDATORY' ? 'required' : 'optional'}`, `ca-file ${tlsFile(paths, field('client_ca'), listenerClientCaFile(id))}`);
    if (tls.clientCrl !== null) options.push(`crl-file ${tlsFile(paths, field('client_crl'), listenerClientCrlFile(id))}`);
  }
  return [...options, ...tlsProtocolOptions(field, tls)];
}

/** The listener's TLS, which a TERMINATED_HTTPS listener has and no other does. */
function listenerTls(listener: ListenerConfig): ListenerTlsConfig | null {
  const terminates = listener.protocol === 'TERMINATED_HTTPS';
  if (terminates !== (listener.tls !== null))
    throw new RenderError(at('listener', listener.id, 'tls'), listener.protocol, terminates ? 'needs certificates' : 'cannot terminate TLS');
  return listener.tls;
}

function hstsLines(listener: ListenerConfig, tls: ListenerTlsConfig): string[] {
  if (!tls.hsts) return [];
  const maxAge = enc.integer(at('listener', listener.id, 'hsts_max_age'), tls.hsts.maxAge, 0, MaxInt32);
  const value = `max-age=${maxAge};${tls.hsts.includeSubdomains ? ' includeSubDomains;' : ''}${tls.hsts.preload ? ' preload;' : ''}`;
  return [`http-response set-header Strict-Transport-Security ${enc.word(at('listener', listener.id, 'hsts'), value)}`];
}

/** TLS to members: the client certificate presented, and members verified against the CA when there is one (else not at all, as Octavia). */
function memberTlsOptions(b: BackendPlan, tls: PoolTlsConfig, paths: HaproxyPaths): string[] {
  const field = (attribute: string) => at('pool', b.pool.id, attribute);
  const id = enc.uuid(field('id'), b.pool.id);
  const options = ['ssl'];
  if (tls.certificate !== null) options.push(`crt ${tlsFile(paths, field('tls_container_ref'), poolCertificateFile(id))}`);
  if (tls.ca !== null) {
    options.push('verify required', `ca-file ${tlsFile(paths, field('ca_tls_container_ref'), poolCaFile(id))}`);
    if (tls.crl !== null) options.push(`crl-file ${tlsFile(paths, field('crl_container_ref'), poolCrlFile(id))}`);
  } else {
    if (tls.crl !== null) throw new RenderError(field('crl_container_ref'), null, 'needs a CA to verify members with');
    options.push('verify none');
  }
  return [...options, ...tlsProtocolOptions(field, tls)];
}

/**
 * ACME HTTP-01: the key authorization of a known token, answered before anything else of the
 * frontend (a challenge is no request for the members). The tokens live in a map file that the
 * agent changes at run time.
 */
function acmeAnswerLines(paths: HaproxyPaths): string[] {
  const map = enc.absolutePath('acme map', paths.acmeMap);
  return [
    `http-request set-var(${ACME_VARIABLE}) path,field(4,/),map(${map}) if { path_beg ${ACME_PREFIX} }`,
    `http-request return status 200 content-type text/plain lf-string %[var(${ACME_VARIABLE})] if { var(${ACME_VARIABLE}) -m found }`,
  ];
}

/** Whether this frontend answers the challenges: the enabled HTTP listener on port 80, when one is there. */
function answersAcme(config: AmphoraConfig, listener: ListenerConfig): boolean {
  return !!config.acmeHttp01 && listener.protocol === 'HTTP' && listener.port === HTTP01_PORT;
}

/** The answerer of its own on port 80 when no rendered frontend holds it; what is not a known challenge gets a 404. */
function acmeFrontend(config: AmphoraConfig, frontends: readonly FrontendPlan[], vips: readonly string[], paths: HaproxyPaths): string[] {
  if (!config.acmeHttp01 || !vips.length) return [];
  const holder = frontends.find((f) => f.listener.port === HTTP01_PORT);
  if (holder) {
    if (holder.listener.protocol !== 'HTTP') throw new RenderError(at('listener', holder.listener.id, 'protocol_port'), HTTP01_PORT, 'is needed for ACME HTTP-01 validation by an HTTP listener or none');
    return [];
  }
  return [
    `frontend ${ACME_FRONTEND}`,
    'mode http',
    ...vips.map((vip) => `bind ${enc.socketAddress('vip address', vip, 'acme port', HTTP01_PORT)}`),
    `timeout client ${ACME_CLIENT_TIMEOUT}`,
    ...acmeAnswerLines(paths),
    'http-request deny deny_status 404',
  ];
}

/** The listener's port on every VIP address, with `options` after each. */
function vipBindLines(listener: ListenerConfig, vips: readonly string[], options = ''): string[] {
  return vips.map((vip) => `bind ${enc.socketAddress('vip address', vip, at('listener', listener.id, 'protocol_port'), listener.port)}${options}`);
}

/** The listener's connection limit; -1 (unlimited) leaves the frontend at the global cap, which no frontend can exceed anyway. */
function maxconnLines(listener: ListenerConfig, opts: RenderOptions): string[] {
  const limit = enc.integer(at('listener', listener.id, 'connection_limit'), listener.connectionLimit, -1, MaxInt32);
  return limit === '-1' ? [] : [`maxconn ${Math.min(Number(limit), opts.maxconn)}`];
}

/**
 * The TERMINATED_HTTPS frontend on port 443 that TLS-ALPN-01 validation reaches through the relay,
 * while this amphora answers it: HAProxy picks a certificate by SNI alone, and the challenge's
 * certificate names the same host as the listener's, so the choice by ALPN is made in front.
 */
function tlsAlpnRelayed(config: AmphoraConfig, frontends: readonly FrontendPlan[], opts: RenderOptions): FrontendPlan | null {
  if (!config.acmeTlsAlpn01 || !opts.tlsAlpn01Answering) return null;
  return frontends.find((f) => f.listener.protocol === 'TERMINATED_HTTPS' && f.listener.port === TLS_ALPN01_PORT) ?? null;
}

/** Whether the file rendered with `opts` loads the TLS-ALPN-01 crt-list (challenge certificates can then be added at run time). */
export function rendersTlsAlpn01(config: AmphoraConfig, opts: RenderOptions): boolean {
  return tlsAlpnRelayed(config, planFrontends(config), opts) !== null;
}

/** An abstract socket of this amphora's (named by its id: amphorae of the `local` compute driver share a network namespace). */
function relaySocket(config: AmphoraConfig, what: string): string {
  return `abns@${enc.uuid('amphora id', config.amphoraId)}-${what}`;
}

/**
 * TLS-ALPN-01 (RFC 8737) on port 443: a TCP relay reads the ClientHello; `acme-tls/1` goes to the
 * answerer, whose crt-list holds the challenge certificates the agent adds at run time, anything
 * else to the listener's frontend, which takes the client's address from the PROXY header. The
 * listener's source filter moves to the relay, where the client's address is the connection's.
 */
function tlsAlpnSections(config: AmphoraConfig, relayed: FrontendPlan, vips: readonly string[], opts: RenderOptions, paths: HaproxyPaths): string[][] {
  const { listener } = relayed;
  const field = (attribute: string) => at('listener', listener.id, attribute);
  const clientTimeout = timeoutMs(field('timeout_client_data'), listener.timeouts.clientData);
  const crtList = enc.absolutePath('acme crt-list', paths.acmeAlpnCrtList);
  const answerer = relaySocket(config, ACME_TLS_ANSWERER);
  return [
    [
      `frontend ${ACME_TLS_RELAY}`,
      'mode tcp',
      ...vipBindLines(listener, vips),
      ...maxconnLines(listener, opts),
      `timeout client ${clientTimeout}`,
      `tcp-request inspect-delay ${CLIENT_HELLO_WAIT}`,
      `acl ${ACME_TLS_ACL} req.ssl_alpn ${ACME_TLS_PROTOCOL}`,
      ...allowedCidrLines(listener, `tcp-request content reject if !${ALLOWED_CIDRS_ACL} !${ACME_TLS_ACL}`),
      'tcp-request content accept if { req.ssl_hello_type 1 }',
      `use_backend ${ACME_TLS_ANSWERER} if ${ACME_TLS_ACL}`,
      `default_backend ${ACME_TLS_TO_LISTENER}`,
    ],
    [`backend ${ACME_TLS_TO_LISTENER}`, 'mode tcp', `timeout connect ${RELAY_CONNECT_TIMEOUT}`, `timeout server ${clientTimeout}`, `server listener ${relaySocket(config, listener.id)} send-proxy-v2`],
    [`backend ${ACME_TLS_ANSWERER}`, 'mode tcp', `timeout connect ${RELAY_CONNECT_TIMEOUT}`, `timeout server ${ACME_CLIENT_TIMEOUT}`, `server answerer ${answerer} send-proxy-v2`],
    [
      `frontend ${ACME_TLS_ANSWERER}`,
      'mode tcp',
      // Until the agent adds a challenge the list is empty and handshakes fail, as they should.
      `bind ${answerer} accept-proxy ssl crt-list ${crtList} alpn ${ACME_TLS_PROTOCOL} strict-sni`,
      `timeout client ${ACME_CLIENT_TIMEOUT}`,
      // The validation ends with the handshake.
      'tcp-request content reject',
    ],
  ];
}

// ---------------------------------------------------------------------------------------

/** `relay`: the abstract socket the TLS-ALPN-01 relay hands this listener's connections to, in place of the VIP. */
function frontendSection(f: FrontendPlan, vips: readonly string[], opts: RenderOptions, paths: HaproxyPaths, acme: boolean, relay: string | null): string[] {
  const { listener } = f;
  const field = (attribute: string) => at('listener', listener.id, attribute);
  const inspectDelay = timeoutMs(field('timeout_tcp_inspect'), listener.timeouts.tcpInspect);
  const tls = listenerTls(listener);
  const bindOptions = tls ? ` ${bindTlsOptions(listener, tls, paths).join(' ')}` : '';
  return [
    `frontend ${frontendName(listener.id)}`,
    `mode ${f.mode}`,
    ...(relay ? [`bind ${relay} accept-proxy${bindOptions}`] : vipBindLines(listener, vips, bindOptions)),
    ...maxconnLines(listener, opts),
    `timeout client ${timeoutMs(field('timeout_client_data'), listener.timeouts.clientData)}`,
    ...(inspectDelay === '0' ? [] : [`tcp-request inspect-delay ${inspectDelay}`]),
    ...(relay ? [] : allowedCidrLines(listener)),
    ...(acme ? acmeAnswerLines(paths) : []),
    ...(tls ? hstsLines(listener, tls) : []),
    ...l7Lines(listener, f.policies),
    ...(f.defaultBackend ? [`default_backend ${f.defaultBackend}`] : []),
  ];
}

// ---------------------------------------------------------------------------------------
// Backends

function balanceLines(pool: PoolConfig): string[] {
  switch (pool.algorithm) {
    case 'ROUND_ROBIN':
      return ['balance roundrobin'];
    case 'LEAST_CONNECTIONS':
      return ['balance leastconn'];
    case 'SOURCE_IP':
      // Servers added through the runtime API need a dynamic algorithm: map-based hashing is not.
      return ['balance source', 'hash-type consistent'];
    default:
      throw new RenderError(at('pool', pool.id, 'lb_algorithm'), pool.algorithm, 'is not supported by HAProxy amphorae');
  }
}

function persistenceLines(pool: PoolConfig, mode: Mode, shared: boolean): string[] {
  const sp = pool.sessionPersistence;
  if (!sp) return [];
  const field = at('pool', pool.id, 'session_persistence');
  enc.oneOf(`${field} type`, sp.type, SessionPersistenceType);
  underDomainRule(field, sp, () =>
    validateSessionPersistence({ type: sp.type, cookie_name: sp.cookieName, persistence_timeout: null, persistence_granularity: null }, pool.protocol),
  );
  const peers = shared ? ` peers ${PEERS_SECTION}` : '';
  if (sp.type === 'SOURCE_IP') return [`stick-table type ipv6 size ${STICK_TABLE_SIZE}${peers}`, 'stick on src'];
  if (mode !== 'http') return [];
  if (sp.type === 'HTTP_COOKIE') return [`cookie ${PERSISTENCE_COOKIE} insert indirect nocache`];
  const cookie = enc.httpToken(`${field} cookie_name`, sp.cookieName ?? '');
  return [
    `stick-table type string len 64 size ${STICK_TABLE_SIZE}${peers}`,
    `stick store-response ${enc.fetchWithArgument(field, 'res.cook', cookie)}`,
    `stick match ${enc.fetchWithArgument(field, 'req.cook', cookie)}`,
  ];
}

/** Each inserted header and how HAProxy produces it (Octavia's lines); values other than "true" turn one off, as in Octavia. */
const HEADER_INSERTION: Readonly<Record<(typeof InsertHeader)[number] | (typeof TerminatedHttpsInsertHeader)[number], string>> = {
  'X-Forwarded-For': 'option forwardfor',
  'X-Forwarded-Port': 'http-request set-header X-Forwarded-Port %[dst_port]',
  'X-Forwarded-Proto': 'http-request set-header X-Forwarded-Proto %[ssl_fc,iif(https,http)]',
  'X-Forwarded-IP': 'http-request set-header X-Forwarded-IP %[src]',
  'X-Client-IP': 'http-request set-header X-Client-IP %[src]',
  'X-Real-IP': 'http-request set-header X-Real-IP %[src]',
  'X-SSL-Client-Verify': 'http-request set-header X-SSL-Client-Verify %[ssl_c_verify]',
  'X-SSL-Client-Has-Cert': 'http-request set-header X-SSL-Client-Has-Cert %[ssl_c_used]',
  'X-SSL-Client-DN': 'http-request set-header X-SSL-Client-DN %{+Q}[ssl_c_s_dn]',
  'X-SSL-Client-CN': 'http-request set-header X-SSL-Client-CN %{+Q}[ssl_c_s_dn(cn)]',
  'X-SSL-Issuer': 'http-request set-header X-SSL-Issuer %{+Q}[ssl_c_i_dn]',
  'X-SSL-Client-SHA1': 'http-request set-header X-SSL-Client-SHA1 %{+Q}[ssl_c_sha1,hex]',
  'X-SSL-Client-Not-Before': 'http-request set-header X-SSL-Client-Not-Before %{+Q}[ssl_c_notbefore]',
  'X-SSL-Client-Not-After': 'http-request set-header X-SSL-Client-Not-After %{+Q}[ssl_c_notafter]',
};

function insertHeaderLines(listener: ListenerConfig): string[] {
  const headers = listener.insertHeaders;
  underDomainRule(at('listener', listener.id, 'insert_headers'), Object.keys(headers), () => validateInsertHeaders(listener.protocol, headers));
  return [...InsertHeader, ...TerminatedHttpsInsertHeader].filter((name) => String(headers[name]).toLowerCase() === 'true').map((name) => HEADER_INSERTION[name]);
}

function httpCheckLines(monitor: MonitorConfig): string[] {
  const field = (attribute: string) => at('healthmonitor', monitor.id, attribute);
  const method = enc.oneOf(field('http_method'), monitor.httpMethod ?? HealthMonitorDefaults.http_method, HttpMethod as readonly string[]);
  const path = monitor.urlPath ?? HealthMonitorDefaults.url_path;
  if (!isUrlPath(path)) throw new RenderError(field('url_path'), path, 'is not a URL path');
  const version = monitor.httpVersion === null ? null : enc.oneOf(field('http_version'), monitor.httpVersion, HttpVersion);
  const request = `option httpchk ${method} ${enc.word(field('url_path'), path)}${version === null ? '' : ` HTTP/${version.toFixed(1)}`}`;
  const lines = [request];
  if (monitor.domainName !== null) {
    if (version !== 1.1) throw new RenderError(field('domain_name'), monitor.domainName, 'needs http_version 1.1');
    lines.push(`http-check send hdr Host ${enc.domainName(field('domain_name'), monitor.domainName)}`);
  }
  lines.push(`http-check expect status ${enc.expectedCodes(field('expected_codes'), monitor.expectedCodes ?? HealthMonitorDefaults.expected_codes)}`);
  return lines;
}

function monitorLines(monitor: MonitorConfig, pool: PoolConfig): string[] {
  const field = (attribute: string) => at('healthmonitor', monitor.id, attribute);
  enc.oneOf(field('type'), monitor.type, HealthMonitorType);
  underDomainRule(field('type'), monitor.type, () =>
    checkMonitorTypeForPool(monitor.type, undefined, pool.protocol, { allowPing: true, udpConnectMinDelay: HealthMonitorDefaults.udp_connect_min_interval }),
  );
  return [...(isHttpMonitor(monitor.type) ? httpCheckLines(monitor) : []), `timeout check ${secondsAsMs(field('timeout'), monitor.timeout)}`];
}

/**
 * Server check options. PING is a TCP connect to the member: an ICMP ping needs HAProxy's
 * external-check (a forked script per check), and a listening port proves the host is up.
 * TLS-HELLO completes a TLS handshake (`check-ssl`), as Octavia does since the SSLv3-only
 * `ssl-hello-chk` probe was dropped.
 */
function checkOptions(monitor: MonitorConfig, member: MemberConfig, pool: PoolConfig): string[] {
  const field = (attribute: string) => at('healthmonitor', monitor.id, attribute);
  const options = [
    'check',
    `inter ${secondsAsMs(field('delay'), monitor.delay, MIN_CHECK_INTERVAL_MS)}`,
    `fall ${enc.integer(field('max_retries_down'), monitor.maxRetriesDown, 1, 10)}`,
    `rise ${enc.integer(field('max_retries'), monitor.maxRetries, 1, 10)}`,
  ];
  // A pool that re-encrypts checks with its own TLS settings (CA, client certificate); pass-through pools check without verifying.
  if (monitor.type === 'HTTPS' || monitor.type === 'TLS-HELLO') options.push('check-ssl', ...(pool.tls ? [] : ['verify none']));
  if (member.monitorAddress !== null) options.push(`addr ${enc.hostAddress(at('member', member.id, 'monitor_address'), member.monitorAddress)}`);
  if (member.monitorPort !== null) options.push(`port ${enc.integer(at('member', member.id, 'monitor_port'), member.monitorPort, 1, 65535)}`);
  return options;
}

function serverLine(member: MemberConfig, b: BackendPlan, monitor: MonitorConfig | null, paths: HaproxyPaths): string {
  const field = (attribute: string) => at('member', member.id, attribute);
  const name = serverName(member.id);
  const options = [`weight ${enc.integer(field('weight'), member.weight, 0, 256)}`];
  if (member.backup) options.push('backup');
  if (b.mode === 'http' && b.pool.sessionPersistence?.type === 'HTTP_COOKIE') options.push(`cookie ${name}`);
  if (b.pool.protocol === 'PROXY') options.push('send-proxy');
  if (b.pool.protocol === 'PROXYV2') options.push('send-proxy-v2');
  if (b.pool.tls) options.push(...memberTlsOptions(b, b.pool.tls, paths));
  if (monitor) options.push(...checkOptions(monitor, member, b.pool));
  if (!member.enabled) options.push('disabled');
  return `server ${name} ${enc.socketAddress(field('address'), member.address, field('protocol_port'), member.port)} ${options.join(' ')}`;
}

function backendSection(b: BackendPlan, paths: HaproxyPaths, shared: boolean): string[] {
  const { pool, listener, mode } = b;
  const timeout = (attribute: string, ms: number) => timeoutMs(at('listener', listener.id, attribute), ms);
  const monitor = pool.monitor?.enabled ? pool.monitor : null;
  assertUnique(at('pool', pool.id, 'member id'), pool.members.map((m) => m.id));
  return [
    `backend ${b.name}`,
    `mode ${mode}`,
    ...balanceLines(pool),
    // With every primary down, spread over all backups rather than the first one only.
    'option allbackups',
    `timeout connect ${timeout('timeout_member_connect', listener.timeouts.memberConnect)}`,
    `timeout server ${timeout('timeout_member_data', listener.timeouts.memberData)}`,
    ...persistenceLines(pool, mode, shared),
    ...(mode === 'http' ? insertHeaderLines(listener) : []),
    ...(monitor ? monitorLines(monitor, pool) : []),
    ...pool.members.map((m) => serverLine(m, b, monitor, paths)),
  ];
}

// ---------------------------------------------------------------------------------------

/** A section: its header at column 0, its directives indented, a blank line after. */
function format([header, ...directives]: readonly string[]): string {
  return [header, ...directives.map((d) => `    ${d}`)].join('\n') + '\n';
}

export function renderHaproxyConfig(config: AmphoraConfig, paths: HaproxyPaths, opts: RenderOptions): string {
  const header = `# Load balancer ${enc.uuid('load balancer id', config.loadBalancerId)} on amphora ${enc.uuid('amphora id', config.amphoraId)}, rendered by Ostia\n`;
  const frontends = planFrontends(config);
  const vips = frontends.length ? bindAddresses(config) : [];
  const peers = peersSection(config);
  const relayed = tlsAlpnRelayed(config, frontends, opts);
  const sections = [
    globalSection(config, paths, opts),
    ...(peers.length ? [peers] : []),
    defaultsSection(),
    ...frontends.map((f) => frontendSection(f, vips, opts, paths, answersAcme(config, f.listener), f === relayed ? relaySocket(config, f.listener.id) : null)),
    ...[acmeFrontend(config, frontends, vips, paths)].filter((section) => section.length > 0),
    ...(relayed ? tlsAlpnSections(config, relayed, vips, opts, paths) : []),
    ...frontends.flatMap((f) => f.backends.map((b) => backendSection(b, paths, peers.length > 0))),
  ];
  return [header, ...sections.map(format)].join('\n');
}

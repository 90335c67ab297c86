/** Server-side defaults of the API, in one place; the deployment config may override some. */

export const ListenerDefaults = {
  connection_limit: -1,
  timeout_client_data: 50000,
  timeout_member_connect: 5000,
  timeout_member_data: 50000,
  timeout_tcp_inspect: 0,
  client_authentication: 'NONE',
  /** Octavia's default TERMINATED_HTTPS cipher list (OWASP "suite B" style). */
  tls_ciphers:
    'TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-SHA384:ECDHE-RSA-AES256-SHA384:ECDHE-ECDSA-AES128-SHA256:ECDHE-RSA-AES128-SHA256',
  tls_versions: ['TLSv1.2', 'TLSv1.3'],
  alpn_protocols: ['h2', 'http/1.1', 'http/1.0'],
} as const;

export const PoolDefaults = {
  tls_ciphers: ListenerDefaults.tls_ciphers,
  tls_versions: ListenerDefaults.tls_versions,
  alpn_protocols: ListenerDefaults.alpn_protocols,
  persistence_timeout: 360,
  persistence_granularity: '255.255.255.255',
} as const;

export const MemberDefaults = { weight: 1, backup: false } as const;

export const HealthMonitorDefaults = {
  max_retries_down: 3,
  http_method: 'GET',
  url_path: '/',
  expected_codes: '200',
  /** Octavia's udp_connect_min_interval_health_monitor. */
  udp_connect_min_interval: 3,
} as const;

export const L7PolicyDefaults = { redirect_http_code: 302, maxRulesPerPolicy: 50 } as const;

export const QuotaResources = ['load_balancer', 'listener', 'pool', 'health_monitor', 'member', 'l7policy', 'l7rule'] as const;
export type QuotaResource = (typeof QuotaResources)[number];
export const QUOTA_UNLIMITED = -1;
export const QUOTA_MAX = 2000000000;

export const ReservedMemberAddresses = ['169.254.169.254'] as const;

export const Pagination = { maxLimit: 1000 } as const;

/** `GET /v2/ostia/failovers`: the newest jobs it lists unless `limit` says otherwise, and the most it lists. */
export const FailoverHistoryLimit = { default: 100, max: 1000 } as const;

/**
 * Waiting without polling (Ostia extensions): the most seconds a `GET …?wait=N` holds its answer
 * (below the 60 s idle timeout of common proxies), how often an event stream sends a keep-alive
 * comment, and how often it checks its caller's token again unless configured otherwise
 * (`api.eventStreamRecheckSeconds`), so a revoked or expired token ends the stream as it would
 * fail a GET.
 */
export const StatusWaiting = { maxWaitSeconds: 55, keepAliveSeconds: 15, recheckSeconds: 60 } as const;

/** Octavia's oslo max_request_body_size. */
export const MaxRequestBodyBytes = 114688;

/**
 * How deep a request body may nest. Octavia's deepest body (a graph create down to a rule's
 * tags) nests 9 levels; a bound keeps every walk over a body (validation, error messages,
 * logs) clear of the stack.
 */
export const MaxRequestBodyDepth = 32;

/** Days before a certificate in use expires at which Ostia warns (logs, status, `ostia certs`), farthest first. */
export const CertificateExpiryWarningDays = [30, 14, 7] as const;

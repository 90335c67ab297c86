/** Every enumeration of the Octavia v2 API, defined once. */

export const ProvisioningStatus = ['ACTIVE', 'PENDING_CREATE', 'PENDING_UPDATE', 'PENDING_DELETE', 'DELETED', 'ERROR'] as const;
export type ProvisioningStatus = (typeof ProvisioningStatus)[number];

/** An operation is under way on the object: the API refuses other changes to it meanwhile. */
export const PendingStatuses = ['PENDING_CREATE', 'PENDING_UPDATE', 'PENDING_DELETE'] as const satisfies readonly ProvisioningStatus[];

export const OperatingStatus = ['ONLINE', 'OFFLINE', 'DEGRADED', 'ERROR', 'DRAINING', 'NO_MONITOR'] as const;
export type OperatingStatus = (typeof OperatingStatus)[number];

export const ListenerProtocol = ['TCP', 'HTTP', 'HTTPS', 'TERMINATED_HTTPS', 'UDP', 'SCTP', 'PROMETHEUS'] as const;
export type ListenerProtocol = (typeof ListenerProtocol)[number];

export const PoolProtocol = ['TCP', 'HTTP', 'HTTPS', 'PROXY', 'PROXYV2', 'UDP', 'SCTP'] as const;
export type PoolProtocol = (typeof PoolProtocol)[number];

export const LbAlgorithm = ['ROUND_ROBIN', 'LEAST_CONNECTIONS', 'SOURCE_IP', 'SOURCE_IP_PORT'] as const;
export type LbAlgorithm = (typeof LbAlgorithm)[number];

export const SessionPersistenceType = ['SOURCE_IP', 'HTTP_COOKIE', 'APP_COOKIE'] as const;
export type SessionPersistenceType = (typeof SessionPersistenceType)[number];

export const HealthMonitorType = ['HTTP', 'HTTPS', 'PING', 'TCP', 'TLS-HELLO', 'UDP-CONNECT', 'SCTP'] as const;
export type HealthMonitorType = (typeof HealthMonitorType)[number];

export const HttpMethod = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'TRACE', 'OPTIONS', 'CONNECT', 'PATCH'] as const;
export type HttpMethod = (typeof HttpMethod)[number];

export const HttpVersion = [1.0, 1.1] as const;

export const L7PolicyAction = ['REJECT', 'REDIRECT_TO_URL', 'REDIRECT_TO_POOL', 'REDIRECT_PREFIX'] as const;
export type L7PolicyAction = (typeof L7PolicyAction)[number];

export const RedirectHttpCode = [301, 302, 303, 307, 308] as const;

export const L7RuleType = ['HOST_NAME', 'PATH', 'FILE_TYPE', 'HEADER', 'COOKIE', 'SSL_CONN_HAS_CERT', 'SSL_VERIFY_RESULT', 'SSL_DN_FIELD'] as const;
export type L7RuleType = (typeof L7RuleType)[number];

export const L7RuleCompareType = ['REGEX', 'STARTS_WITH', 'ENDS_WITH', 'CONTAINS', 'EQUAL_TO'] as const;
export type L7RuleCompareType = (typeof L7RuleCompareType)[number];

export const ClientAuthentication = ['NONE', 'OPTIONAL', 'MANDATORY'] as const;
export type ClientAuthentication = (typeof ClientAuthentication)[number];

export const TlsVersion = ['SSLv3', 'TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'] as const;
export type TlsVersion = (typeof TlsVersion)[number];

export const AlpnProtocol = ['h2', 'http/1.1', 'http/1.0'] as const;
export type AlpnProtocol = (typeof AlpnProtocol)[number];

export const InsertHeader = ['X-Forwarded-For', 'X-Forwarded-Port', 'X-Forwarded-Proto', 'X-Forwarded-IP', 'X-Client-IP', 'X-Real-IP'] as const;
export const TerminatedHttpsInsertHeader = [
  'X-SSL-Client-Verify', 'X-SSL-Client-Has-Cert', 'X-SSL-Client-DN', 'X-SSL-Client-CN',
  'X-SSL-Issuer', 'X-SSL-Client-SHA1', 'X-SSL-Client-Not-Before', 'X-SSL-Client-Not-After',
] as const;

export const AmphoraRole = ['MASTER', 'BACKUP', 'STANDALONE'] as const;
export type AmphoraRole = (typeof AmphoraRole)[number];

export const AmphoraStatus = ['BOOTING', 'ALLOCATED', 'READY', 'PENDING_CREATE', 'PENDING_DELETE', 'DELETED', 'ERROR', 'FAILOVER_STOPPED'] as const;
export type AmphoraStatus = (typeof AmphoraStatus)[number];

/** A persisted job's life: queued, claimed with a lease (running), then done or failed. */
export const JobState = ['queued', 'running', 'done', 'failed'] as const;
export type JobState = (typeof JobState)[number];

export const Topology = ['SINGLE', 'ACTIVE_STANDBY'] as const;
export type Topology = (typeof Topology)[number];

export const VnicType = ['normal', 'direct'] as const;
export type VnicType = (typeof VnicType)[number];

/** Listener protocols that share the TCP port space of a load balancer. */
export const TcpFamilyProtocols: readonly string[] = ['TCP', 'HTTP', 'HTTPS', 'TERMINATED_HTTPS', 'PROXY', 'PROXYV2', 'PROMETHEUS'];

/** Listener protocol → the pool protocols it may forward to (Octavia's matrix). */
export const ListenerPoolCompatibility: Readonly<Record<ListenerProtocol, readonly PoolProtocol[]>> = {
  TCP: ['HTTP', 'HTTPS', 'PROXY', 'PROXYV2', 'TCP'],
  HTTP: ['HTTP', 'PROXY', 'PROXYV2'],
  HTTPS: ['HTTPS', 'PROXY', 'PROXYV2', 'TCP'],
  TERMINATED_HTTPS: ['HTTP', 'PROXY', 'PROXYV2'],
  UDP: ['UDP'],
  SCTP: ['SCTP'],
  PROMETHEUS: [],
};

export const L4OnlyPoolProtocols: readonly string[] = ['UDP', 'SCTP'];

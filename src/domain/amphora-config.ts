/**
 * The whole typed configuration of one load balancer as the controller pushes it to an
 * amphora's agent. Versioned: the agent applies a config only if its version is newer, so
 * pushes are idempotent and a late retry never rolls an amphora back. The renderer turns it
 * into haproxy.cfg; nothing else reaches HAProxy.
 */
import { Type, type Static } from '@sinclair/typebox';
import {
  AlpnProtocol, AmphoraRole, ClientAuthentication, HealthMonitorType, L7PolicyAction, L7RuleCompareType, L7RuleType, LbAlgorithm, ListenerProtocol, PoolProtocol, SessionPersistenceType, TlsVersion,
} from './enums.js';
import { Enum, IpAddress, Port } from './schema-kit.js';

const Id = Type.String({ format: 'uuid' });
const Nullable = <T extends ReturnType<typeof Type.String> | ReturnType<typeof Type.Integer> | ReturnType<typeof Type.Number>>(t: T) => Type.Union([t, Type.Null()]);
const Closed = <T extends Parameters<typeof Type.Object>[0]>(props: T) => Type.Object(props, { additionalProperties: false });

export const MemberConfig = Closed({
  id: Id,
  address: Type.String(),
  port: Type.Integer({ minimum: 1, maximum: 65535 }),
  weight: Type.Integer({ minimum: 0, maximum: 256 }),
  backup: Type.Boolean(),
  enabled: Type.Boolean(),
  monitorAddress: Nullable(Type.String()),
  monitorPort: Nullable(Type.Integer({ minimum: 1, maximum: 65535 })),
});

export const MonitorConfig = Closed({
  id: Id,
  type: Enum(HealthMonitorType),
  enabled: Type.Boolean(),
  /** Seconds, as the API has them. */
  delay: Type.Integer({ minimum: 0 }),
  timeout: Type.Integer({ minimum: 0 }),
  maxRetries: Type.Integer({ minimum: 1, maximum: 10 }),
  maxRetriesDown: Type.Integer({ minimum: 1, maximum: 10 }),
  httpMethod: Nullable(Type.String()),
  urlPath: Nullable(Type.String()),
  expectedCodes: Nullable(Type.String()),
  httpVersion: Nullable(Type.Number()),
  domainName: Nullable(Type.String()),
});

/** PEM blocks without headers or blank lines (a blank line would end a HAProxy CLI payload). */
export const PEM_BLOCKS_PATTERN = '^(?:-----BEGIN [A-Z0-9 ]+-----\\n(?:[A-Za-z0-9+/=]+\\n)+-----END [A-Z0-9 ]+-----\\n)+$';

/**
 * PEM material the agent writes into its own directory (owner-only) for HAProxy to read: a
 * certificate with its chain and private key, a CA bundle or a CRL. It travels only inside the
 * config, over the agent's mutual-TLS channel. `pem` holds PEM blocks and nothing else.
 */
export const PemMaterial = Type.String({ minLength: 1, pattern: PEM_BLOCKS_PATTERN });

/** What HAProxy negotiates on one side: protocol versions, cipher list, ALPN. */
const TlsProtocolConfig = {
  versions: Type.Array(Enum(TlsVersion), { minItems: 1 }),
  /** OpenSSL cipher string (TLS 1.2 and below) and TLS 1.3 suites, colon-separated, or null for HAProxy's defaults. */
  ciphers: Nullable(Type.String()),
  alpn: Type.Array(Enum(AlpnProtocol)),
};

/** TLS to members (pool `tls_enabled`): the client certificate presented, and the CA and CRL members are verified with. */
export const PoolTlsConfig = Closed({
  certificate: Type.Union([PemMaterial, Type.Null()]),
  ca: Type.Union([PemMaterial, Type.Null()]),
  crl: Type.Union([PemMaterial, Type.Null()]),
  ...TlsProtocolConfig,
});

export const PoolConfig = Closed({
  id: Id,
  protocol: Enum(PoolProtocol),
  algorithm: Enum(LbAlgorithm),
  enabled: Type.Boolean(),
  sessionPersistence: Type.Union([Closed({ type: Enum(SessionPersistenceType), cookieName: Nullable(Type.String()) }), Type.Null()]),
  /** TLS to members (`tls_enabled`), or null for plain connections. */
  tls: Type.Union([PoolTlsConfig, Type.Null()]),
  monitor: Type.Union([MonitorConfig, Type.Null()]),
  members: Type.Array(MemberConfig),
});

export const L7RuleConfig = Closed({
  id: Id,
  type: Enum(L7RuleType),
  compareType: Enum(L7RuleCompareType),
  key: Nullable(Type.String()),
  value: Type.String(),
  invert: Type.Boolean(),
  enabled: Type.Boolean(),
});

export const L7PolicyConfig = Closed({
  id: Id,
  action: Enum(L7PolicyAction),
  position: Type.Integer({ minimum: 1 }),
  enabled: Type.Boolean(),
  redirectPoolId: Nullable(Type.String()),
  redirectUrl: Nullable(Type.String()),
  redirectPrefix: Nullable(Type.String()),
  redirectHttpCode: Nullable(Type.Integer()),
  rules: Type.Array(L7RuleConfig),
});

/** TERMINATED_HTTPS: what the frontend serves and asks of clients. */
export const ListenerTlsConfig = Closed({
  /** Served by SNI name; the first is served to clients that send no name or an unknown one. */
  certificates: Type.Array(PemMaterial, { minItems: 1 }),
  clientAuthentication: Enum(ClientAuthentication),
  clientCa: Type.Union([PemMaterial, Type.Null()]),
  clientCrl: Type.Union([PemMaterial, Type.Null()]),
  ...TlsProtocolConfig,
  /** Strict-Transport-Security on every response, or null. */
  hsts: Type.Union([Closed({ maxAge: Type.Integer({ minimum: 0 }), includeSubdomains: Type.Boolean(), preload: Type.Boolean() }), Type.Null()]),
});

export const ListenerConfig = Closed({
  id: Id,
  protocol: Enum(ListenerProtocol),
  port: Type.Integer({ minimum: 1, maximum: 65535 }),
  enabled: Type.Boolean(),
  /** -1 = unlimited. */
  connectionLimit: Type.Integer({ minimum: -1 }),
  /** Milliseconds. */
  timeouts: Closed({ clientData: Type.Integer(), memberConnect: Type.Integer(), memberData: Type.Integer(), tcpInspect: Type.Integer() }),
  insertHeaders: Type.Record(Type.String(), Type.String()),
  /** null = no restriction. */
  allowedCidrs: Type.Union([Type.Array(Type.String()), Type.Null()]),
  defaultPoolId: Nullable(Type.String()),
  /** Sorted by position. */
  l7policies: Type.Array(L7PolicyConfig),
  /** Present for TERMINATED_HTTPS. */
  tls: Type.Union([ListenerTlsConfig, Type.Null()]),
});

/** Linux interface names: at most 15 characters (IFNAMSIZ), none that a configuration file could read as syntax. */
export const INTERFACE_NAME_PATTERN = '^[A-Za-z0-9_.-]{1,15}$';

/** VRRPv3 sends adverts in centiseconds, at most 4095 of them. */
export const VRRP_ADVERT_INTERVAL_MS = { min: 10, max: 40_950 } as const;

/**
 * ACTIVE_STANDBY: this amphora's half of the pair. Its keepalived holds the VIP on `interface` while it
 * is MASTER, speaking VRRPv3 by unicast from `address` (its base port) to `peers`; both start as BACKUP
 * and never preempt, so `priority` decides only which one takes the VIP first. The HAProxies of the pair
 * share their stick tables over `haproxyPeers` (this amphora's own entry included, named by its id).
 */
export const VrrpConfig = Closed({
  role: Enum(AmphoraRole.filter((r) => r !== 'STANDALONE')),
  priority: Type.Integer({ minimum: 1, maximum: 254 }),
  virtualRouterId: Type.Integer({ minimum: 1, maximum: 255 }),
  interface: Type.String({ pattern: INTERFACE_NAME_PATTERN }),
  address: IpAddress(),
  peers: Type.Array(IpAddress(), { minItems: 1 }),
  vipPrefixLength: Type.Integer({ minimum: 1, maximum: 128 }),
  /** Milliseconds, a multiple of 10 (VRRPv3 counts centiseconds). */
  advertIntervalMs: Type.Integer({ ...VRRP_ADVERT_INTERVAL_MS, multipleOf: 10 }),
  haproxyPeers: Type.Array(Closed({ name: Id, address: IpAddress(), port: Port() }), { minItems: 2 }),
  /**
   * The pair is being replaced by an amphora that takes the VIP from it (a migration): its MASTER stops
   * re-announcing the VIP every few seconds, which would draw the traffic back until it leaves.
   */
  leaving: Type.Optional(Type.Boolean()),
});

export const AmphoraConfig = Closed({
  /** Config generation of the load balancer: strictly increasing. */
  version: Type.Integer({ minimum: 1 }),
  loadBalancerId: Id,
  amphoraId: Id,
  enabled: Type.Boolean(),
  vip: Closed({ address: Type.String(), additional: Type.Array(Type.String()) }),
  listeners: Type.Array(ListenerConfig),
  pools: Type.Array(PoolConfig),
  /** Present for an amphora of an ACTIVE_STANDBY pair; absent for SINGLE. */
  vrrp: Type.Optional(VrrpConfig),
  /**
   * Whether port 80 of the VIP answers ACME HTTP-01 challenges (a listener has managed
   * certificates): in the HTTP listener on port 80, or in a frontend of its own when no listener
   * holds that port. The challenges themselves are set at run time (PUT /1.0/acme-challenges).
   */
  acmeHttp01: Type.Optional(Type.Boolean()),
  /**
   * Whether port 443 of the VIP answers ACME TLS-ALPN-01 challenges (RFC 8737) in front of the
   * TERMINATED_HTTPS listener there (domain/rules/acme.ts chooses): connections offering only
   * `acme-tls/1` get a challenge certificate, set at run time (PUT /1.0/acme-tls-alpn-01).
   */
  acmeTlsAlpn01: Type.Optional(Type.Boolean()),
});

/** An ACME HTTP-01 challenge's token (RFC 8555 §8.3: base64url) and the key authorization served for it. */
export const AcmeChallenge = Closed({
  token: Type.String({ pattern: '^[A-Za-z0-9_-]{16,128}$' }),
  keyAuthorization: Type.String({ pattern: '^[A-Za-z0-9_-]{16,128}\\.[A-Za-z0-9_-]{16,128}$' }),
});
export type AcmeChallenge = Static<typeof AcmeChallenge>;

/** A TLS-ALPN-01 challenge certificate (RFC 8737 §3) with its key, PEM, for the name in the path. */
export const AcmeAlpnCertificate = Closed({
  certificate: Type.String({ minLength: 1, maxLength: 16384, pattern: '^-----BEGIN CERTIFICATE-----[\\s\\S]*-----END [A-Z ]*PRIVATE KEY-----\\s*$' }),
});
export type AcmeAlpnCertificate = Static<typeof AcmeAlpnCertificate>;

export type VrrpConfig = Static<typeof VrrpConfig>;
export type MemberConfig = Static<typeof MemberConfig>;
export type MonitorConfig = Static<typeof MonitorConfig>;
export type PoolTlsConfig = Static<typeof PoolTlsConfig>;
export type PoolConfig = Static<typeof PoolConfig>;
export type ListenerTlsConfig = Static<typeof ListenerTlsConfig>;
export type L7RuleConfig = Static<typeof L7RuleConfig>;
export type L7PolicyConfig = Static<typeof L7PolicyConfig>;
export type ListenerConfig = Static<typeof ListenerConfig>;
export type AmphoraConfig = Static<typeof AmphoraConfig>;

/** The fastest an amphora sends heartbeats: the receiver bounds how far a boot's sequence can have got with it. */
export const HEARTBEAT_MIN_INTERVAL_MS = 100;

/** What an amphora reports in a heartbeat: the deflated body of the datagram (see amphora-agent/heartbeat.ts and providers/amphora/health/). */
export const HeartbeatReport = Closed({
  configVersion: Type.Integer({ minimum: 0 }),
  listeners: Type.Record(
    Type.String(),
    Closed({
      status: Type.String(),
      /** Deltas since the previous heartbeat, except `activeConnections` which is current. */
      stats: Closed({ bytesIn: Type.Integer(), bytesOut: Type.Integer(), activeConnections: Type.Integer(), totalConnections: Type.Integer(), requestErrors: Type.Integer() }),
    }),
  ),
  pools: Type.Record(Type.String(), Closed({ status: Type.String(), members: Type.Record(Type.String(), Type.String()) })),
});
export type HeartbeatReport = Static<typeof HeartbeatReport>;

/** A heartbeat: who sent it, which boot of its agent, which one of that boot, when (the datagram's signed header), and the report. */
export const Heartbeat = Closed({
  amphoraId: Id,
  /** When the agent started (sender's clock, ms since the epoch): each boot numbers its heartbeats afresh. */
  epoch: Type.Integer({ minimum: 0 }),
  /** 1, 2, 3 … within a boot: a number seen before is a replay. */
  seq: Type.Integer({ minimum: 1 }),
  /** Sender's clock, ms since the epoch: stale messages are dropped. */
  sentAt: Type.Integer({ minimum: 0 }),
  ...HeartbeatReport.properties,
});
export type Heartbeat = Static<typeof Heartbeat>;

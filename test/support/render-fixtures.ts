/**
 * Representative load balancers for the renderer's golden, `haproxy -c` and property tests.
 * Ids are fixed and readable: the first block says what kind of object it is.
 */
import { join } from 'node:path';
import type {
  AmphoraConfig, VrrpConfig, L7PolicyConfig, L7RuleConfig, ListenerConfig, ListenerTlsConfig, MemberConfig, MonitorConfig, PoolConfig, PoolTlsConfig,
} from '../../src/domain/amphora-config.js';
import { ListenerDefaults, PoolDefaults } from '../../src/domain/defaults.js';
import type { HaproxyPaths, RenderOptions } from '../../src/amphora-agent/haproxy/render.js';

const idOf = (prefix: string) => (n: number) => `${prefix}-0000-4000-8000-${String(n).padStart(12, '0')}`;
export const ids = {
  lb: idOf('0b0b0b0b'),
  amphora: idOf('0a0a0a0a'),
  listener: idOf('11111111'),
  pool: idOf('22222222'),
  member: idOf('33333333'),
  monitor: idOf('44444444'),
  policy: idOf('55555555'),
  rule: idOf('66666666'),
};

export const goldenPaths = (amphoraId: string): HaproxyPaths => ({
  statsSocket: `/var/lib/ostia/amphorae/${amphoraId}/haproxy.sock`,
  stateFile: `/var/lib/ostia/amphorae/${amphoraId}/haproxy.state`,
  pidFile: `/var/lib/ostia/amphorae/${amphoraId}/haproxy.pid`,
  tlsDir: `/var/lib/ostia/amphorae/${amphoraId}/tls`,
  acmeMap: `/var/lib/ostia/amphorae/${amphoraId}/acme-challenges.map`,
  acmeAlpnCrtList: `/var/lib/ostia/amphorae/${amphoraId}/acme-tls-alpn-01.crtlist`,
});

/** The files of a rendered config in a scratch directory, for `haproxy -c` and test runs. */
export const scratchPaths = (dir: string): HaproxyPaths => ({
  statsSocket: join(dir, 'haproxy.sock'),
  stateFile: join(dir, 'haproxy.state'),
  pidFile: join(dir, 'haproxy.pid'),
  tlsDir: join(dir, 'tls'),
  acmeMap: join(dir, 'acme.map'),
  acmeAlpnCrtList: join(dir, 'acme-tls-alpn-01.crtlist'),
});

/** Stand-ins for PEM material: golden files name TLS files and never hold their content. */
export const placeholderPem = (label: string) => `-----BEGIN ${label}-----\nT1NUSUE=\n-----END ${label}-----\n`;
const CERT_AND_KEY = placeholderPem('CERTIFICATE') + placeholderPem('PRIVATE KEY');

export function listenerTls(overrides: Partial<ListenerTlsConfig> = {}): ListenerTlsConfig {
  return {
    certificates: [CERT_AND_KEY],
    clientAuthentication: 'NONE',
    clientCa: null,
    clientCrl: null,
    versions: [...ListenerDefaults.tls_versions],
    ciphers: ListenerDefaults.tls_ciphers,
    alpn: [...ListenerDefaults.alpn_protocols],
    hsts: null,
    ...overrides,
  };
}

export function poolTls(overrides: Partial<PoolTlsConfig> = {}): PoolTlsConfig {
  return { certificate: null, ca: null, crl: null, versions: [...PoolDefaults.tls_versions], ciphers: PoolDefaults.tls_ciphers, alpn: [...PoolDefaults.alpn_protocols], ...overrides };
}

// Answering TLS-ALPN-01 changes only configs that ask for it (acme-tls-alpn-01), whose relay the golden file shows.
export const goldenOptions: RenderOptions = { maxconn: 8000, tlsAlpn01Answering: true };

export function member(n: number, overrides: Partial<MemberConfig> = {}): MemberConfig {
  return { id: ids.member(n), address: `10.0.1.${n}`, port: 8080, weight: 1, backup: false, enabled: true, monitorAddress: null, monitorPort: null, ...overrides };
}

export function monitor(n: number, overrides: Partial<MonitorConfig> = {}): MonitorConfig {
  return {
    id: ids.monitor(n),
    type: 'TCP',
    enabled: true,
    delay: 5,
    timeout: 3,
    maxRetries: 2,
    maxRetriesDown: 3,
    httpMethod: null,
    urlPath: null,
    expectedCodes: null,
    httpVersion: null,
    domainName: null,
    ...overrides,
  };
}

export function pool(n: number, overrides: Partial<PoolConfig> = {}): PoolConfig {
  return { id: ids.pool(n), protocol: 'HTTP', algorithm: 'ROUND_ROBIN', enabled: true, sessionPersistence: null, tls: null, monitor: null, members: [], ...overrides };
}

export function rule(n: number, overrides: Partial<L7RuleConfig> = {}): L7RuleConfig {
  return { id: ids.rule(n), type: 'PATH', compareType: 'STARTS_WITH', key: null, value: '/', invert: false, enabled: true, ...overrides };
}

export function policy(n: number, overrides: Partial<L7PolicyConfig> = {}): L7PolicyConfig {
  return {
    id: ids.policy(n),
    action: 'REJECT',
    position: n,
    enabled: true,
    redirectPoolId: null,
    redirectUrl: null,
    redirectPrefix: null,
    redirectHttpCode: null,
    rules: [],
    ...overrides,
  };
}

export function listener(n: number, overrides: Partial<ListenerConfig> = {}): ListenerConfig {
  return {
    id: ids.listener(n),
    protocol: 'HTTP',
    port: 80,
    enabled: true,
    connectionLimit: ListenerDefaults.connection_limit,
    timeouts: {
      clientData: ListenerDefaults.timeout_client_data,
      memberConnect: ListenerDefaults.timeout_member_connect,
      memberData: ListenerDefaults.timeout_member_data,
      tcpInspect: ListenerDefaults.timeout_tcp_inspect,
    },
    insertHeaders: {},
    allowedCidrs: null,
    defaultPoolId: null,
    l7policies: [],
    tls: null,
    ...overrides,
  };
}

export function loadBalancer(n: number, overrides: Partial<AmphoraConfig> = {}): AmphoraConfig {
  return { version: 1, loadBalancerId: ids.lb(n), amphoraId: ids.amphora(n), enabled: true, vip: { address: '203.0.113.10', additional: [] }, listeners: [], pools: [], ...overrides };
}

/** HTTP with every L7 rule type, cookie persistence and HTTP(S) monitors. */
export function httpWithL7(): AmphoraConfig {
  return loadBalancer(1, {
    vip: { address: '203.0.113.10', additional: ['2001:db8:0:0::10'] },
    listeners: [
      listener(1, {
        connectionLimit: 20000,
        insertHeaders: { 'X-Forwarded-For': 'true', 'X-Forwarded-Port': 'True', 'X-Forwarded-Proto': 'true', 'X-Real-IP': 'false' },
        defaultPoolId: ids.pool(1),
        l7policies: [
          policy(1, { action: 'REDIRECT_TO_POOL', redirectPoolId: ids.pool(2), rules: [rule(1, { compareType: 'REGEX', value: '^/api/v[0-9]+/' }), rule(2, { type: 'COOKIE', key: 'beta', compareType: 'CONTAINS', value: 'yes', invert: true })] }),
          policy(2, { action: 'REDIRECT_TO_URL', redirectUrl: 'https://new.example.com/moved?from=old%20site', redirectHttpCode: 301, rules: [rule(3, { type: 'HOST_NAME', compareType: 'EQUAL_TO', value: 'old.example.com' })] }),
          policy(3, { action: 'REJECT', rules: [rule(4, { value: '/admin' }), rule(5, { type: 'HEADER', key: 'X-Admin-Token', compareType: 'EQUAL_TO', value: '"let me in"', invert: true })] }),
          policy(4, { action: 'REDIRECT_PREFIX', redirectPrefix: 'https://static.example.com', rules: [rule(6, { type: 'FILE_TYPE', compareType: 'EQUAL_TO', value: 'jpg' })] }),
          policy(5, { action: 'REDIRECT_TO_POOL', redirectPoolId: ids.pool(2), rules: [rule(7, { type: 'SSL_DN_FIELD', key: 'CN', compareType: 'ENDS_WITH', value: '.internal' }), rule(8, { type: 'SSL_VERIFY_RESULT', compareType: 'EQUAL_TO', value: '0' }), rule(9, { type: 'SSL_CONN_HAS_CERT', compareType: 'EQUAL_TO', value: 'TRUE' })] }),
          policy(6, { action: 'REJECT', enabled: false, rules: [rule(10, { value: '/disabled-policy' })] }),
          policy(7, { action: 'REJECT', rules: [rule(11, { value: '/disabled-rule', enabled: false })] }),
        ],
      }),
    ],
    pools: [
      pool(1, {
        sessionPersistence: { type: 'HTTP_COOKIE', cookieName: null },
        monitor: monitor(1, { type: 'HTTP', httpMethod: 'GET', urlPath: '/healthz?probe=lb', expectedCodes: '200-204', httpVersion: 1.1, domainName: 'app.example.com' }),
        members: [member(1), member(2)],
      }),
      pool(2, {
        algorithm: 'LEAST_CONNECTIONS',
        tls: poolTls(),
        sessionPersistence: { type: 'APP_COOKIE', cookieName: 'JSESSIONID' },
        monitor: monitor(2, { type: 'HTTPS', httpMethod: 'HEAD', urlPath: '/', expectedCodes: '200, 202', httpVersion: 1.0 }),
        members: [member(3, { port: 8443 })],
      }),
    ],
  });
}

/** TCP and TLS pass-through with source-IP persistence, allowed CIDRs and PROXY protocol. */
export function tcpWithSourceIp(): AmphoraConfig {
  return loadBalancer(2, {
    listeners: [
      listener(1, {
        protocol: 'TCP',
        port: 5432,
        connectionLimit: 500,
        timeouts: { clientData: 3_600_000, memberConnect: 2000, memberData: 3_600_000, tcpInspect: 2000 },
        allowedCidrs: ['10.0.0.0/8', '192.168.1.77/24', '2001:DB8::/32'],
        defaultPoolId: ids.pool(1),
      }),
      listener(2, { protocol: 'HTTPS', port: 443, defaultPoolId: ids.pool(2) }),
    ],
    pools: [
      pool(1, {
        protocol: 'PROXY',
        algorithm: 'SOURCE_IP',
        sessionPersistence: { type: 'SOURCE_IP', cookieName: null },
        monitor: monitor(1, { type: 'TCP', delay: 10, timeout: 5, maxRetries: 3, maxRetriesDown: 2 }),
        members: [member(1, { port: 5432 }), member(2, { port: 5432 })],
      }),
      pool(2, {
        protocol: 'PROXYV2',
        monitor: monitor(2, { type: 'TLS-HELLO' }),
        members: [member(3, { port: 443 })],
      }),
    ],
  });
}

/** Backup, weight-0, disabled and IPv6 members; monitor address and port; a pool shared by two listeners. */
export function memberVariety(): AmphoraConfig {
  return loadBalancer(3, {
    listeners: [listener(1, { defaultPoolId: ids.pool(1) }), listener(2, { protocol: 'TCP', port: 8443, defaultPoolId: ids.pool(1) })],
    pools: [
      pool(1, {
        monitor: monitor(1, { type: 'PING', delay: 0, timeout: 0 }),
        members: [
          member(1),
          member(2, { backup: true }),
          member(3, { weight: 0 }),
          member(4, { monitorAddress: '10.0.2.4', monitorPort: 9000 }),
          member(5, { address: '2001:db8:0:0:0:0:0:5', monitorAddress: '2001:db8::f', monitorPort: 9001 }),
          member(6, { enabled: false, weight: 256 }),
        ],
      }),
    ],
  });
}

/** Disabled listener, pool and monitor; protocols HAProxy does not serve here. */
export function disabledObjects(): AmphoraConfig {
  return loadBalancer(4, {
    listeners: [
      listener(1, { enabled: false, defaultPoolId: ids.pool(1) }),
      listener(2, { port: 81, defaultPoolId: ids.pool(2) }),
      listener(3, { port: 82, defaultPoolId: ids.pool(1) }),
      listener(4, { protocol: 'UDP', port: 53 }),
      listener(5, { protocol: 'PROMETHEUS', port: 9100 }),
    ],
    pools: [
      pool(1, { members: [member(1)], monitor: monitor(1, { enabled: false }) }),
      pool(2, { enabled: false, members: [member(2)] }),
    ],
  });
}

/**
 * TLS both ways: TERMINATED_HTTPS with a default and two SNI certificates, mandatory client
 * certificates checked against a CA and a CRL, HSTS and the X-SSL headers; a second listener
 * with optional client certificates and the default protocol settings; pools that re-encrypt
 * with a client certificate and a verified CA, or without verifying.
 */
export function terminatedHttps(): AmphoraConfig {
  return loadBalancer(6, {
    listeners: [
      listener(1, {
        protocol: 'TERMINATED_HTTPS',
        port: 443,
        insertHeaders: { 'X-Forwarded-Proto': 'true', 'X-SSL-Client-Verify': 'true', 'X-SSL-Client-Has-Cert': 'true', 'X-SSL-Client-DN': 'true', 'X-SSL-Client-CN': 'true', 'X-SSL-Issuer': 'true', 'X-SSL-Client-SHA1': 'true', 'X-SSL-Client-Not-Before': 'true', 'X-SSL-Client-Not-After': 'true' },
        defaultPoolId: ids.pool(1),
        tls: listenerTls({
          certificates: [CERT_AND_KEY, CERT_AND_KEY, CERT_AND_KEY],
          clientAuthentication: 'MANDATORY',
          clientCa: placeholderPem('CERTIFICATE'),
          clientCrl: placeholderPem('X509 CRL'),
          versions: ['TLSv1.2'],
          ciphers: 'ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:TLS_AES_256_GCM_SHA384',
          alpn: ['h2', 'http/1.1'],
          hsts: { maxAge: 31_536_000, includeSubdomains: true, preload: true },
        }),
      }),
      listener(2, {
        protocol: 'TERMINATED_HTTPS',
        port: 8443,
        defaultPoolId: ids.pool(2),
        tls: listenerTls({ clientAuthentication: 'OPTIONAL', clientCa: placeholderPem('CERTIFICATE'), hsts: { maxAge: 0, includeSubdomains: false, preload: false } }),
      }),
    ],
    pools: [
      pool(1, {
        tls: poolTls({ certificate: CERT_AND_KEY, ca: placeholderPem('CERTIFICATE'), crl: placeholderPem('X509 CRL'), versions: ['TLSv1.2', 'TLSv1.3'], alpn: ['http/1.1'] }),
        monitor: monitor(1, { type: 'HTTPS', urlPath: '/healthz' }),
        members: [member(1, { port: 8443 }), member(2, { port: 8443 })],
      }),
      pool(2, { tls: poolTls({ ciphers: 'TLS_AES_128_GCM_SHA256', alpn: [] }), members: [member(3, { port: 8443 })] }),
    ],
  });
}

/** A disabled load balancer: HAProxy runs with no proxy at all. */
export function disabledLoadBalancer(): AmphoraConfig {
  return { ...memberVariety(), loadBalancerId: ids.lb(5), amphoraId: ids.amphora(5), enabled: false };
}

/** This amphora's half of an ACTIVE_STANDBY pair whose other half is amphora 99. */
export function vrrp(amphoraId: string, overrides: Partial<VrrpConfig> = {}): VrrpConfig {
  return {
    role: 'MASTER',
    priority: 100,
    virtualRouterId: 7,
    interface: 'eth1',
    address: '203.0.113.4',
    peers: ['203.0.113.5'],
    vipPrefixLength: 24,
    advertIntervalMs: 100,
    haproxyPeers: [
      { name: amphoraId, address: '203.0.113.4', port: 1025 },
      { name: ids.amphora(99), address: '203.0.113.5', port: 1025 },
    ],
    ...overrides,
  };
}

/** The MASTER of an ACTIVE_STANDBY pair: source-IP and application-cookie stick tables shared with its peer. */
export function activeStandby(): AmphoraConfig {
  const config = loadBalancer(7, {
    listeners: [listener(1, { protocol: 'TCP', port: 5432, defaultPoolId: ids.pool(1) }), listener(2, { defaultPoolId: ids.pool(2) })],
    pools: [
      pool(1, { protocol: 'TCP', algorithm: 'SOURCE_IP', sessionPersistence: { type: 'SOURCE_IP', cookieName: null }, members: [member(1, { port: 5432 }), member(2, { port: 5432 })] }),
      pool(2, { sessionPersistence: { type: 'APP_COOKIE', cookieName: 'JSESSIONID' }, members: [member(3)] }),
    ],
  });
  return { ...config, vrrp: vrrp(config.amphoraId) };
}

export const goldenConfigs: Readonly<Record<string, () => AmphoraConfig>> = {
  'http-l7': httpWithL7,
  'tcp-source-ip': tcpWithSourceIp,
  'member-variety': memberVariety,
  'disabled-objects': disabledObjects,
  'disabled-lb': disabledLoadBalancer,
  'terminated-https': terminatedHttps,
  'active-standby': activeStandby,
  // Managed certificates: challenges answered by the HTTP listener on port 80, or by a frontend of their own.
  'acme-in-http-listener': () => ({ ...httpWithL7(), acmeHttp01: true }),
  'acme-own-answerer': () => ({ ...terminatedHttps(), acmeHttp01: true }),
  'acme-tls-alpn-01': () => {
    const config = terminatedHttps();
    const [on443, ...others] = config.listeners;
    return { ...config, acmeTlsAlpn01: true, listeners: [{ ...on443!, allowedCidrs: ['192.0.2.0/24', '2001:db8::/32'], connectionLimit: 5000 }, ...others] };
  },
};

/**
 * Database rows → the typed configuration an amphora's agent applies. Objects being removed
 * (PENDING_DELETE) are left out, with everything under them; objects being created or updated
 * are in, since pushing them is what creates or updates them. Seven queries whatever the size,
 * and each TLS reference read once from the key manager, all in parallel.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { HealthMonitorRecord } from '../../db/records/health-monitor.js';
import { l7PolicyCodec, type L7PolicyRecord } from '../../db/records/l7policy.js';
import { l7RuleCodec, type L7RuleRecord } from '../../db/records/l7rule.js';
import type { ListenerRecord } from '../../db/records/listener.js';
import type { MemberRecord } from '../../db/records/member.js';
import type { PoolRecord } from '../../db/records/pool.js';
import type {
  AmphoraConfig, L7PolicyConfig, L7RuleConfig, ListenerConfig, ListenerTlsConfig, MemberConfig, MonitorConfig, PoolConfig, PoolTlsConfig,
} from '../../domain/amphora-config.js';
import { ListenerDefaults, PoolDefaults } from '../../domain/defaults.js';
import { acmeChallengeType, type AcmeChallengeType } from '../../domain/rules/acme.js';
// The API admitted only these values; the listener and pool rules still type them as text.
import type { AlpnProtocol, ClientAuthentication, LbAlgorithm, PoolProtocol, SessionPersistenceType, TlsVersion } from '../../domain/enums.js';
import { settingsOf } from '../../db/records/tree-object.js';
import type { KeyManager } from '../../keymanager/index.js';
import { BEING_REMOVED, servedTree } from '../../db/lb-tree.js';
import { haproxyCertificatePem, pemBlocks, readCaAndCrl, readCertificate } from '../../keymanager/tls-material.js';

type Q = Kysely<Database> | Transaction<Database>;


function groupBy<T>(rows: readonly T[], key: (row: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const row of rows) {
    const list = out.get(key(row));
    if (list) list.push(row);
    else out.set(key(row), [row]);
  }
  return out;
}

function memberConfig(m: MemberRecord): MemberConfig {
  return {
    id: m.id,
    address: m.address,
    port: m.protocol_port,
    weight: m.weight,
    backup: m.backup,
    enabled: m.admin_state_up,
    monitorAddress: m.monitor_address,
    monitorPort: m.monitor_port,
  };
}

type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<CamelCase<Tail>>}` : S;
type CamelCased<T> = { [K in keyof T as CamelCase<K & string>]: T[K] };

function camelCased<T extends object>(fields: T): CamelCased<T> {
  return Object.fromEntries(Object.entries(fields).map(([k, v]) => [k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()), v])) as CamelCased<T>;
}

/** A monitor's settings travel under their API names, camel-cased; its name is the API's alone. */
function monitorConfig(hm: HealthMonitorRecord): MonitorConfig {
  const { admin_state_up, name: _name, ...settings } = settingsOf(hm, 'pool_id');
  return { id: hm.id, enabled: admin_state_up, ...camelCased(settings) };
}

function sessionPersistenceConfig(sp: PoolRecord['session_persistence']): PoolConfig['sessionPersistence'] {
  return sp && { type: sp.type as SessionPersistenceType, cookieName: sp.cookie_name };
}

/** PEM text by reference: certificates as HAProxy `crt` files, CA bundles, CRLs. */
interface Material {
  certificates: ReadonlyMap<string, string>;
  /** Keyed by `caRef crlRef`: a CRL is read against its CA. */
  caBundles: ReadonlyMap<string, { ca: string; crl: string | null }>;
}

const caKey = (ca: string, crl: string | null) => `${ca} ${crl}`;

function materialFor(material: Material, ca: string | null, crl: string | null): { ca: string | null; crl: string | null } {
  return ca ? material.caBundles.get(caKey(ca, crl))! : { ca: null, crl: null };
}

/** Served certificates in HAProxy's order: the default first (it answers clients without SNI), then SNI, each once. */
export function servedCertificateRefs(l: Pick<ListenerRecord, 'default_tls_container_ref' | 'sni_container_refs'>): string[] {
  return [...new Set([l.default_tls_container_ref, ...l.sni_container_refs].filter((r): r is string => !!r))];
}

function listenerTlsConfig(l: ListenerRecord, material: Material): ListenerTlsConfig | null {
  if (l.protocol !== 'TERMINATED_HTTPS') return null;
  const client = materialFor(material, l.client_ca_tls_container_ref, l.client_crl_container_ref);
  return {
    certificates: servedCertificateRefs(l).map((ref) => material.certificates.get(ref)!),
    clientAuthentication: l.client_authentication as ClientAuthentication,
    clientCa: client.ca,
    clientCrl: client.crl,
    versions: (l.tls_versions as TlsVersion[] | null) ?? [...ListenerDefaults.tls_versions],
    ciphers: l.tls_ciphers,
    alpn: (l.alpn_protocols as AlpnProtocol[] | null) ?? [...ListenerDefaults.alpn_protocols],
    hsts: l.hsts_max_age === null ? null : { maxAge: l.hsts_max_age, includeSubdomains: l.hsts_include_subdomains, preload: l.hsts_preload },
  };
}

function poolTlsConfig(p: PoolRecord, material: Material): PoolTlsConfig | null {
  if (!p.tls_enabled) return null;
  const members = materialFor(material, p.ca_tls_container_ref, p.crl_container_ref);
  return {
    certificate: p.tls_container_ref ? material.certificates.get(p.tls_container_ref)! : null,
    ca: members.ca,
    crl: members.crl,
    versions: (p.tls_versions as TlsVersion[] | null) ?? [...PoolDefaults.tls_versions],
    ciphers: p.tls_ciphers,
    alpn: (p.alpn_protocols as AlpnProtocol[] | null) ?? [...PoolDefaults.alpn_protocols],
  };
}

/**
 * Reads every reference the configuration uses. Expired material is shipped: it is what ran
 * before, and a failover must rebuild what ran (the API refuses expired references when they
 * are set, and expiry is reported).
 */
async function readMaterial(keyManager: KeyManager, listeners: readonly ListenerRecord[], pools: readonly PoolRecord[]): Promise<Material> {
  const certificateRefs = new Set<string>();
  const caPairs = new Map<string, { ca: string; crl: string | null }>();
  const needCa = (ca: string | null, crl: string | null) => {
    if (ca) caPairs.set(caKey(ca, crl), { ca, crl });
  };
  for (const l of listeners) {
    if (l.protocol !== 'TERMINATED_HTTPS') continue;
    for (const ref of servedCertificateRefs(l)) certificateRefs.add(ref);
    needCa(l.client_ca_tls_container_ref, l.client_crl_container_ref);
  }
  for (const p of pools) {
    if (!p.tls_enabled) continue;
    if (p.tls_container_ref) certificateRefs.add(p.tls_container_ref);
    needCa(p.ca_tls_container_ref, p.crl_container_ref);
  }
  const options = { acceptExpired: true };
  const [certificates, caBundles] = await Promise.all([
    Promise.all([...certificateRefs].map(async (ref) => [ref, haproxyCertificatePem(await readCertificate(keyManager, ref, options))] as const)),
    Promise.all(
      [...caPairs].map(async ([key, { ca, crl }]) => {
        const read = await readCaAndCrl(keyManager, ca, crl, options);
        return [key, { ca: pemBlocks(read.ca.pem), crl: read.crl ? pemBlocks(read.crl.crlPem) : null }] as const;
      }),
    ),
  ]);
  return { certificates: new Map(certificates), caBundles: new Map(caBundles) };
}

function poolConfig(p: PoolRecord, monitor: HealthMonitorRecord | undefined, members: readonly MemberRecord[], material: Material): PoolConfig {
  return {
    id: p.id,
    protocol: p.protocol as PoolProtocol,
    algorithm: p.lb_algorithm as LbAlgorithm,
    enabled: p.admin_state_up,
    sessionPersistence: sessionPersistenceConfig(p.session_persistence),
    tls: poolTlsConfig(p, material),
    monitor: monitor ? monitorConfig(monitor) : null,
    members: members.map(memberConfig),
  };
}

function ruleConfig(r: L7RuleRecord): L7RuleConfig {
  return {
    id: r.id,
    type: r.type,
    compareType: r.compare_type,
    key: r.key,
    value: r.value,
    invert: r.invert,
    enabled: r.admin_state_up,
  };
}

function policyConfig(p: L7PolicyRecord, rules: readonly L7RuleRecord[]): L7PolicyConfig {
  return {
    id: p.id,
    action: p.action,
    position: p.position,
    enabled: p.admin_state_up,
    redirectPoolId: p.redirect_pool_id,
    redirectUrl: p.redirect_url,
    redirectPrefix: p.redirect_prefix,
    redirectHttpCode: p.redirect_http_code,
    rules: rules.map(ruleConfig),
  };
}

function listenerConfig(l: ListenerRecord, pools: ReadonlySet<string>, policies: readonly L7PolicyConfig[], material: Material): ListenerConfig {
  return {
    id: l.id,
    protocol: l.protocol,
    port: l.protocol_port,
    enabled: l.admin_state_up,
    connectionLimit: l.connection_limit,
    timeouts: {
      clientData: l.timeout_client_data,
      memberConnect: l.timeout_member_connect,
      memberData: l.timeout_member_data,
      tcpInspect: l.timeout_tcp_inspect,
    },
    insertHeaders: l.insert_headers,
    allowedCidrs: l.allowed_cidrs,
    // A default pool being deleted is detached by that same job: do not point at it meanwhile.
    defaultPoolId: l.default_pool_id !== null && pools.has(l.default_pool_id) ? l.default_pool_id : null,
    l7policies: [...policies],
    tls: listenerTlsConfig(l, material),
  };
}

/** The configuration of load balancer `lbId` for amphora `amphoraId`, stamped `version`. */
/** Which ACME answerer the amphora renders (none when no listener is managed). */
function acmeAnswering(type: AcmeChallengeType | null): Pick<AmphoraConfig, 'acmeHttp01' | 'acmeTlsAlpn01'> {
  return { acmeHttp01: type === 'http-01', ...(type === 'tls-alpn-01' ? { acmeTlsAlpn01: true } : {}) };
}

export async function buildAmphoraConfig(db: Q, keyManager: KeyManager, lbId: string, amphoraId: string, version: number): Promise<AmphoraConfig> {
  const [{ lb, listeners, pools, members, monitors }, policies, rules] = await Promise.all([
    servedTree(db, lbId),
    db
      .selectFrom('l7policy')
      .innerJoin('listener', 'listener.id', 'l7policy.listener_id')
      .selectAll('l7policy')
      .where('listener.load_balancer_id', '=', lbId)
      .where('l7policy.provisioning_status', '!=', BEING_REMOVED)
      .orderBy('l7policy.position')
      .orderBy('l7policy.id')
      .execute(),
    db
      .selectFrom('l7rule')
      .innerJoin('l7policy', 'l7policy.id', 'l7rule.l7policy_id')
      .innerJoin('listener', 'listener.id', 'l7policy.listener_id')
      .selectAll('l7rule')
      .where('listener.load_balancer_id', '=', lbId)
      .where('l7rule.provisioning_status', '!=', BEING_REMOVED)
      .orderBy('l7rule.created_at')
      .orderBy('l7rule.id')
      .execute(),
  ]);

  const material = await readMaterial(keyManager, listeners, pools);
  const membersByPool = groupBy(members, (m) => m.pool_id);
  const monitorByPool = new Map(monitors.map((hm) => [hm.pool_id, hm]));
  const rulesByPolicy = groupBy(rules.map(l7RuleCodec.decode), (r) => r.l7policy_id);
  const policiesByListener = groupBy(
    policies.map((p) => ({ listenerId: p.listener_id, config: policyConfig(l7PolicyCodec.decode(p), rulesByPolicy.get(p.id) ?? []) })),
    (p) => p.listenerId,
  );
  const poolIds = new Set(pools.map((p) => p.id));
  return {
    version,
    loadBalancerId: lbId,
    amphoraId,
    enabled: lb.admin_state_up,
    vip: { address: lb.vip_address, additional: lb.additional_vips.map((v) => v.ip_address) },
    listeners: listeners.map((l) => listenerConfig(l, poolIds, (policiesByListener.get(l.id) ?? []).map((p) => p.config), material)),
    pools: pools.map((p) => poolConfig(p, monitorByPool.get(p.id), membersByPool.get(p.id) ?? [], material)),
    ...acmeAnswering(acmeChallengeType(listeners)),
  };
}

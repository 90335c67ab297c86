/**
 * What the forms know per resource type beyond its schemas: which fields come first (the rest
 * wait under "More settings"), which apply only to some protocols, monitor types or policy
 * actions, and the API's defaults shown as placeholders. The applicability rules are the
 * domain's own (src/domain/rules), asked rather than restated.
 */
import type { TSchema } from '@sinclair/typebox';
import type { Kind } from './resources.js';
import { fieldsOf, type FieldSpec, type Mode } from './schema-fields.js';
import { LoadBalancerCreate, LoadBalancerUpdateBody } from '../../src/domain/schemas/loadbalancer.js';
import { ListenerCreate, ListenerUpdateBody } from '../../src/domain/schemas/listener.js';
import { PoolCreate, PoolUpdateBody } from '../../src/domain/schemas/pool.js';
import { MemberCreate, MemberUpdateBody } from '../../src/domain/schemas/member.js';
import { HealthMonitorCreateBody, HealthMonitorUpdateBody } from '../../src/domain/schemas/healthmonitor.js';
import { L7PolicyCreateBody, L7PolicyUpdateBody } from '../../src/domain/schemas/l7policy.js';
import { L7RuleCreateBody, L7RuleUpdateBody } from '../../src/domain/schemas/l7rule.js';
import { HealthMonitorType, ListenerPoolCompatibility, PoolProtocol, type L7PolicyAction, type ListenerProtocol } from '../../src/domain/enums.js';
import { HealthMonitorDefaults, L7PolicyDefaults, ListenerDefaults, MemberDefaults, PoolDefaults } from '../../src/domain/defaults.js';
import { checkMonitorTypeForPool, isHttpMonitor } from '../../src/domain/rules/healthmonitor.js';
import { clearUnusedTargets } from '../../src/domain/rules/l7.js';

/** The object a create or update body wraps (`{"listener": {...}}`'s inner schema). */
export const SCHEMAS: Record<Kind, Record<Mode, TSchema>> = {
  loadbalancer: { create: LoadBalancerCreate, update: LoadBalancerUpdateBody.properties.loadbalancer },
  listener: { create: ListenerCreate, update: ListenerUpdateBody.properties.listener },
  pool: { create: PoolCreate, update: PoolUpdateBody.properties.pool },
  member: { create: MemberCreate, update: MemberUpdateBody.properties.member },
  healthmonitor: { create: HealthMonitorCreateBody.properties.healthmonitor, update: HealthMonitorUpdateBody.properties.healthmonitor },
  l7policy: { create: L7PolicyCreateBody.properties.l7policy, update: L7PolicyUpdateBody.properties.l7policy },
  l7rule: { create: L7RuleCreateBody.properties.rule, update: L7RuleUpdateBody.properties.rule },
};

/** Parent references a create body carries: taken from the page's query, never shown. */
export const PARENT_FIELDS = ['loadbalancer_id', 'listener_id', 'pool_id'] as const;

/** Fields a form never shows: the parents, and `tenant_id` (an old alias of project_id). */
const UNSHOWN = new Set<string>([...PARENT_FIELDS, 'tenant_id']);

/** The fields a form for `kind` shows; `project_id` (creating for another project) only to an admin. */
export function formFields(kind: Kind, mode: Mode, admin: boolean): FieldSpec[] {
  return fieldsOf(SCHEMAS[kind][mode], mode).filter((f) => !UNSHOWN.has(f.name) && (admin || f.name !== 'project_id'));
}

/** Shown first, in this order; the others under "More settings". */
export const COMMON: Record<Kind, readonly string[]> = {
  loadbalancer: ['name', 'vip_subnet_id', 'vip_address', 'provider', 'flavor_id', 'description'],
  listener: ['name', 'protocol', 'protocol_port', 'default_pool_id', 'default_tls_container_ref', 'description'],
  pool: ['name', 'protocol', 'lb_algorithm', 'description'],
  member: ['name', 'address', 'protocol_port', 'weight'],
  healthmonitor: ['name', 'type', 'delay', 'timeout', 'max_retries', 'url_path', 'expected_codes'],
  l7policy: ['name', 'action', 'redirect_pool_id', 'redirect_url', 'redirect_prefix', 'position'],
  l7rule: ['type', 'compare_type', 'key', 'value', 'invert'],
};

/** The API's defaults, shown in the empty inputs they apply to. */
export const DEFAULTS: Partial<Record<Kind, Readonly<Record<string, unknown>>>> = {
  listener: ListenerDefaults,
  pool: PoolDefaults,
  member: MemberDefaults,
  healthmonitor: HealthMonitorDefaults,
  l7policy: L7PolicyDefaults,
};

/** Settings of a monitor that only HTTP(S) monitors have. */
const HTTP_MONITOR_FIELDS = new Set(['http_method', 'url_path', 'expected_codes', 'http_version', 'domain_name']);
/** A listener's TLS settings: they apply where it terminates TLS. */
const TLS_LISTENER_FIELD = /container_ref|^tls_|^alpn_|^hsts_|^client_authentication$/;
const REDIRECT_FIELDS = new Set(['redirect_pool_id', 'redirect_url', 'redirect_prefix', 'redirect_http_code']);

/**
 * Whether `name` applies given the object's other values (`value` reads the form's input, or
 * the stored object's for what the update cannot change, like a listener's protocol).
 */
export function applies(kind: Kind, name: string, value: (name: string) => unknown): boolean {
  switch (kind) {
    case 'healthmonitor':
      return !HTTP_MONITOR_FIELDS.has(name) || isHttpMonitor(String(value('type') ?? ''));
    case 'listener': {
      if (!TLS_LISTENER_FIELD.test(name)) return true;
      const protocol = value('protocol');
      // A PROMETHEUS listener may serve its metrics over TLS; HSTS is for TERMINATED_HTTPS alone.
      return protocol === 'TERMINATED_HTTPS' || (protocol === 'PROMETHEUS' && !name.startsWith('hsts_'));
    }
    case 'l7policy': {
      if (!REDIRECT_FIELDS.has(name)) return true;
      const used = clearUnusedTargets({ action: value('action') as L7PolicyAction, redirect_pool_id: '-', redirect_url: '-', redirect_prefix: '-', redirect_http_code: L7PolicyDefaults.redirect_http_code });
      return used[name as keyof typeof used] !== null;
    }
    default:
      return true;
  }
}

/** The pool protocols a listener of `protocol` may forward to (all of them without a listener). */
export function poolProtocolsFor(listenerProtocol: string | null | undefined): readonly string[] {
  return listenerProtocol ? ListenerPoolCompatibility[listenerProtocol as ListenerProtocol] ?? [] : PoolProtocol;
}

/** The monitor types a pool of `protocol` admits, by the API's own check. */
export function monitorTypesFor(poolProtocol: string | null | undefined): readonly string[] {
  if (!poolProtocol) return HealthMonitorType;
  return HealthMonitorType.filter((t) => {
    try {
      // Deployment settings (PING allowed, UDP-CONNECT's least delay) are the API's to judge on submit.
      checkMonitorTypeForPool(t, undefined, poolProtocol, { allowPing: true, udpConnectMinDelay: 0 });
      return true;
    } catch {
      return false;
    }
  });
}

/** `current` if still allowed, else the allowed value named like `wanted` (a pool's protocol as its monitor type), else TCP, else the first. */
export function fitting(allowed: readonly string[], current: string, wanted: string): string {
  return allowed.includes(current) ? current : allowed.includes(wanted) ? wanted : allowed.includes('TCP') ? 'TCP' : allowed[0] ?? '';
}

/** A spec whose choices are narrowed to `allowed` (keeping the order of the schema's). */
export function narrowed(spec: FieldSpec, allowed: readonly string[]): FieldSpec {
  return { ...spec, values: spec.values!.filter((v) => allowed.includes(String(v))) };
}

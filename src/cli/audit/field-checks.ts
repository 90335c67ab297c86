/**
 * This service's own verdict on a field an advisory names, found by putting the advisory's hostile value
 * to the very checks a request and a rendering go through: the API's update body (schema, then the field's
 * rule where it has one) and the renderer's encoder. Nothing here is a description: change a check and
 * the verdict changes with it. A field with no renderer check says so.
 */
import type { TObject } from '@sinclair/typebox';
import { decodeBody } from '../../domain/schema-kit.js';
import { HealthMonitorUpdateBody } from '../../domain/schemas/healthmonitor.js';
import { L7PolicyUpdateBody } from '../../domain/schemas/l7policy.js';
import { L7RuleUpdateBody } from '../../domain/schemas/l7rule.js';
import { ListenerUpdateBody } from '../../domain/schemas/listener.js';
import { LoadBalancerUpdateBody } from '../../domain/schemas/loadbalancer.js';
import { MemberUpdateBody } from '../../domain/schemas/member.js';
import { PoolUpdateBody } from '../../domain/schemas/pool.js';
import { sanitizeL7PolicyTarget } from '../../domain/rules/l7.js';
import * as enc from '../../amphora-agent/haproxy/encoders.js';
import { redirectLocation } from '../../amphora-agent/haproxy/render.js';
import type { AuditedField } from './advisory.js';

export interface FieldVerdict {
  resource: string;
  field: string;
  /** The API's answer to a request setting the value: its faultstring, or null when it was accepted. */
  apiRefusal: string | null;
  /** The renderer's: its refusal, or what it would write into haproxy.cfg; null when no renderer check is known. */
  render: { refused: string } | { written: string } | null;
}

/** Each resource's update body and envelope, as its PUT decodes it. */
const UPDATE_BODIES: Record<AuditedField['resource'], { envelope: string; schema: TObject }> = {
  loadbalancer: { envelope: 'loadbalancer', schema: LoadBalancerUpdateBody },
  listener: { envelope: 'listener', schema: ListenerUpdateBody },
  pool: { envelope: 'pool', schema: PoolUpdateBody },
  member: { envelope: 'member', schema: MemberUpdateBody },
  healthmonitor: { envelope: 'healthmonitor', schema: HealthMonitorUpdateBody },
  l7policy: { envelope: 'l7policy', schema: L7PolicyUpdateBody },
  l7rule: { envelope: 'rule', schema: L7RuleUpdateBody },
};

/** The rules the API applies after the schema, per `resource.field`. */
const API_RULES: Record<string, (value: string) => void> = {
  'l7policy.redirect_url': (value) => void sanitizeL7PolicyTarget({ redirect_url: value }),
  'l7policy.redirect_prefix': (value) => void sanitizeL7PolicyTarget({ redirect_prefix: value }),
};

/** The renderer's encoder of each field HAProxy reads, per `resource.field`. */
const cipherList = (field: string, value: string) => Object.values(enc.cipherList(field, value)).flat().join(':');
const RENDERERS: Record<string, (field: string, value: string) => string> = {
  'listener.tls_ciphers': cipherList,
  'pool.tls_ciphers': cipherList,
  'l7policy.redirect_url': redirectLocation,
  'l7policy.redirect_prefix': redirectLocation,
};

export function fieldVerdict({ resource, field }: AuditedField, value: string): FieldVerdict {
  const key = `${resource}.${field}`;
  const body = UPDATE_BODIES[resource];
  let apiRefusal: string | null = null;
  try {
    decodeBody(body.schema, { [body.envelope]: { [field]: value } }, body.envelope);
    API_RULES[key]?.(value);
  } catch (e) {
    apiRefusal = (e as Error).message;
  }
  const renderer = RENDERERS[key];
  let render: FieldVerdict['render'] = null;
  if (renderer) {
    try {
      render = { written: renderer(key, value) };
    } catch (e) {
      render = { refused: (e as Error).message };
    }
  }
  return { resource, field, apiRefusal, render };
}

/** The verdict in a sentence. */
export function describeVerdict(v: FieldVerdict): string {
  const api = v.apiRefusal === null ? 'accepted by the API' : `refused by the API (400: ${v.apiRefusal})`;
  const render = v.render === null ? 'no renderer check is known for it' : 'refused' in v.render ? `refused by the renderer (${v.render.refused})` : `rendered as ${JSON.stringify(v.render.written)}`;
  return `${api}; ${render}`;
}

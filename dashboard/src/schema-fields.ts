/**
 * Form fields derived from the API's own request schemas (src/domain/schemas, TypeBox): a
 * field's control, bounds and choices come from the schema the API validates with, so a form
 * cannot offer what the API refuses or miss what it accepts. Inputs are kept as the text the
 * user typed (checkboxes as booleans) and turned into a request body only on submit.
 */
import type { TSchema } from '@sinclair/typebox';

export type FieldKind = 'enum' | 'boolean' | 'number' | 'text' | 'lines' | 'map' | 'group';

export interface FieldSpec {
  /** The attribute's name; a group's member is `group.member`. */
  name: string;
  kind: FieldKind;
  /** The form must hold a value: create refuses a body without it, update cannot clear it. */
  required: boolean;
  /** Update: null resets it (to the API's default). */
  nullable: boolean;
  values?: ReadonlyArray<string | number>;
  numeric?: boolean;
  integer?: boolean;
  min?: number;
  max?: number;
  maxLength?: number;
  /** A group's members (session_persistence): each a scalar. */
  fields?: FieldSpec[];
}

/** An input as typed: text for every kind but checkboxes. */
export type Input = string | boolean;
export type Inputs = Record<string, Input>;

/** A form body: the attributes to send. */
export type Body = Record<string, unknown>;

const lastSegment = (name: string) => name.split('.').pop()!;

function unwrapNull(s: TSchema): { schema: TSchema; nullable: boolean } {
  const variants = s.anyOf as TSchema[] | undefined;
  if (!variants) return { schema: s, nullable: false };
  const nonNull = variants.filter((v) => v.type !== 'null');
  return { schema: nonNull.length === 1 ? nonNull[0]! : s, nullable: nonNull.length < variants.length };
}

export type Mode = 'create' | 'update';

function specOf(name: string, raw: TSchema, mode: Mode, requiredOnCreate: boolean): FieldSpec | null {
  const { schema: s, nullable } = unwrapNull(raw);
  const base = { name, required: mode === 'create' ? requiredOnCreate : !nullable, nullable };
  if (s.enum) return { ...base, kind: 'enum', values: s.enum as Array<string | number>, numeric: s.type === 'number' };
  switch (s.type) {
    case 'boolean':
      return { ...base, kind: 'boolean' };
    case 'integer':
    case 'number':
      return { ...base, kind: 'number', integer: s.type === 'integer', min: s.minimum, max: s.maximum };
    case 'string':
      return { ...base, kind: 'text', maxLength: s.maxLength };
    case 'array':
      return (s.items as TSchema).type === 'string' ? { ...base, kind: 'lines' } : null;
    case 'object': {
      if (s.patternProperties) return { ...base, kind: 'map' };
      // A small object of scalars (session persistence) is edited in place; an object holding
      // lists or objects is a child resource (a pool's monitor), created by its own form.
      const fields = fieldsOf(s, mode, `${name}.`);
      const scalar = fields.every((f) => f.kind !== 'lines' && f.kind !== 'map' && f.kind !== 'group');
      if (!scalar || fields.length !== Object.keys(s.properties ?? {}).length) return null;
      // The group is optional as a whole: none of its fields is preset, and all of them empty sends none.
      return { ...base, kind: 'group', fields: fields.map((f) => ({ ...f, required: false })) };
    }
    default:
      return null;
  }
}

/**
 * The fields of an object schema (a create body's inner object, or an update's `Patch`) in the
 * schema's order. Lists of objects (a load balancer's listeners, a pool's members) are left out:
 * they are other resources.
 */
export function fieldsOf(schema: TSchema, mode: Mode, prefix = ''): FieldSpec[] {
  const required = new Set((schema.required ?? []) as string[]);
  const out: FieldSpec[] = [];
  for (const [name, sub] of Object.entries((schema.properties ?? {}) as Record<string, TSchema>)) {
    const spec = specOf(`${prefix}${name}`, sub, mode, required.has(name));
    if (spec) out.push(spec);
  }
  return out;
}

/** Words a label writes otherwise than the attribute. */
const WORDS: Record<string, string> = {
  id: 'ID', ids: 'IDs', ip: 'IP', vip: 'VIP', tls: 'TLS', url: 'URL', http: 'HTTP', https: 'HTTPS', hsts: 'HSTS', alpn: 'ALPN',
  crl: 'CRL', ca: 'CA', sni: 'SNI', qos: 'QoS', sg: 'SG', cidrs: 'CIDRs', dn: 'DN', sriov: 'SR-IOV',
};
/** Labels that say more than the attribute's name. */
const LABELS: Record<string, string> = {
  protocol_port: 'Port',
  vip_subnet_id: 'Subnet',
  vip_network_id: 'Network',
  vip_port_id: 'VIP port ID',
  vip_qos_policy_id: 'VIP QoS policy',
  vip_sg_ids: 'VIP security groups',
  subnet_id: 'Subnet',
  flavor_id: 'Flavor',
  lb_algorithm: 'Algorithm',
  admin_state_up: 'Admin state up (enabled)',
  default_pool_id: 'Default pool',
  redirect_pool_id: 'Redirect pool',
  default_tls_container_ref: 'Certificate',
  sni_container_refs: 'SNI certificates',
  client_ca_tls_container_ref: 'Client CA certificate',
  client_crl_container_ref: 'Client revocation list',
  tls_container_ref: 'Client certificate to members',
  ca_tls_container_ref: 'CA certificate of members',
  crl_container_ref: 'Revocation list of members',
  tls_enabled: 'TLS to members',
  timeout_client_data: 'Client data timeout (ms)',
  timeout_member_connect: 'Member connect timeout (ms)',
  timeout_member_data: 'Member data timeout (ms)',
  timeout_tcp_inspect: 'TCP inspect timeout (ms)',
  hsts_max_age: 'HSTS max age (s)',
  delay: 'Delay (s)',
  timeout: 'Timeout (s)',
  persistence_timeout: 'Persistence timeout (s)',
  connection_limit: 'Connection limit (-1: none)',
  project_id: 'Project ID',
};

/** "max_retries_down" → "Max retries down", "tls_versions" → "TLS versions". */
export function labelOf(name: string): string {
  const key = lastSegment(name);
  const known = LABELS[key];
  if (known) return known;
  const words = key.split('_').map((w) => WORDS[w] ?? w);
  const text = words.join(' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** A numeric enum's values as the API writes them (`1.0`, not `1`, for HTTP versions). */
export function enumText(spec: FieldSpec, v: string | number): string {
  if (typeof v !== 'number') return v;
  return spec.values!.some((x) => typeof x === 'number' && !Number.isInteger(x)) ? v.toFixed(1) : String(v);
}

/** Octavia enables every object unless told otherwise; every other flag is off by default. */
const CHECKED_BY_DEFAULT = new Set(['admin_state_up']);

/** A value the API returned, as the form shows it. */
function inputOf(spec: FieldSpec, v: unknown): Input {
  switch (spec.kind) {
    case 'boolean':
      return v === null || v === undefined ? CHECKED_BY_DEFAULT.has(lastSegment(spec.name)) : !!v;
    case 'enum':
      // A choice the form must hold starts at the first one, as its select shows it.
      if (v === null || v === undefined) return spec.required ? enumText(spec, spec.values![0]!) : '';
      return enumText(spec, v as string | number);
    case 'lines':
      return Array.isArray(v) ? v.join('\n') : '';
    case 'map':
      return v && typeof v === 'object' ? Object.entries(v).map(([k, x]) => `${k}=${x}`).join('\n') : '';
    default:
      return v === null || v === undefined ? '' : String(v);
  }
}

/** The inputs of a form: an object's values (edit), or empty with the flags at their defaults (create), plus `preset` (create's suggestions). */
export function inputsOf(specs: FieldSpec[], object: Body | null, preset: Inputs = {}): Inputs {
  const out: Inputs = {};
  for (const spec of specs) {
    if (spec.kind === 'group') {
      const inner = (object?.[spec.name] ?? null) as Body | null;
      for (const f of spec.fields!) out[f.name] = inputOf(f, inner?.[lastSegment(f.name)]);
    } else out[spec.name] = inputOf(spec, object?.[spec.name]);
  }
  return { ...out, ...preset };
}

/** The form's own syntax was not followed (a header line without `=`): said beside the field before anything is sent. */
export class InputError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The value to send for a typed input; undefined when the input is empty. A number that does
 * not parse goes as typed, so the API says what is wrong with it in its own words.
 */
function valueOf(spec: FieldSpec, input: Input): unknown {
  if (typeof input === 'boolean') return input;
  const text = spec.kind === 'lines' || spec.kind === 'map' ? input : input.trim();
  if (text === '') return undefined;
  switch (spec.kind) {
    case 'enum':
      return spec.numeric ? Number(text) : text;
    case 'number':
      return /^[-+]?\d+(\.\d+)?$/.test(text) ? Number(text) : text;
    case 'lines':
      return text.split('\n').map((l) => l.trim()).filter((l) => l !== '');
    case 'map': {
      const out: Record<string, string> = {};
      for (const line of text.split('\n').map((l) => l.trim()).filter((l) => l !== '')) {
        const eq = line.indexOf('=');
        if (eq <= 0) throw new InputError(spec.name, `Write one name=value a line ("${line}" has no name=)`);
        out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
      }
      return out;
    }
    default:
      return text;
  }
}

function groupValue(spec: FieldSpec, inputs: Inputs): Body | undefined {
  const out: Body = {};
  for (const f of spec.fields!) {
    const v = valueOf(f, inputs[f.name] ?? '');
    if (v !== undefined) out[lastSegment(f.name)] = v;
  }
  return Object.keys(out).length ? out : undefined;
}

/** A create body: the fields the user filled, and the flags set otherwise than the API's default. */
export function createBody(specs: FieldSpec[], inputs: Inputs): Body {
  const body: Body = {};
  for (const spec of specs) {
    const input = inputs[spec.name];
    const v =
      spec.kind === 'group' ? groupValue(spec, inputs) : spec.kind === 'boolean' ? (input !== CHECKED_BY_DEFAULT.has(lastSegment(spec.name)) ? input : undefined) : valueOf(spec, input ?? '');
    if (v !== undefined) body[spec.name] = v;
  }
  return body;
}

/** An update body: only the fields the user changed; a cleared field is null (the API's default) where it may be, else empty. */
export function updateBody(specs: FieldSpec[], initial: Inputs, inputs: Inputs): Body {
  const body: Body = {};
  const cleared = (spec: FieldSpec) => (spec.nullable ? null : spec.kind === 'lines' ? [] : spec.kind === 'map' ? {} : spec.kind === 'text' ? '' : null);
  for (const spec of specs) {
    const names = spec.kind === 'group' ? spec.fields!.map((f) => f.name) : [spec.name];
    if (names.every((n) => inputs[n] === initial[n])) continue;
    const v = spec.kind === 'group' ? groupValue(spec, inputs) : valueOf(spec, inputs[spec.name]!);
    body[spec.name] = v === undefined ? cleared(spec) : v;
  }
  return body;
}

/** The spec an API message names (`Invalid input for field/attribute cookie_name…`), among those shown. */
export function specNamed(specs: FieldSpec[], field: string | null): FieldSpec | null {
  if (!field) return null;
  for (const spec of specs) {
    if (lastSegment(spec.name) === field) return spec;
    const inner = spec.fields?.find((f) => lastSegment(f.name) === field);
    if (inner) return inner;
  }
  return null;
}

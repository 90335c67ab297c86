/**
 * Building blocks for request schemas (TypeBox) and the decoder that applies them the way
 * Octavia's WSME layer does: lenient coercion of numbers and booleans, strict refusal of
 * unknown attributes, and WSME's exact error wording.
 */
import { Type, type TSchema, type TObject, type TProperties, type Static } from '@sinclair/typebox';
import { apiError } from './errors.js';
import { MaxRequestBodyDepth } from './defaults.js';
import { isIpAddress, parseCidr, isUuid, normaliseUuid } from './net.js';
import { parseCipherList } from './grammar/tls.js';

export { Type };
export type { Static, TSchema };

/** A string restricted to `values`, rendered as a JSON-schema enum. */
export function Enum<const T extends readonly (string | number)[]>(values: T, options: Record<string, unknown> = {}) {
  return Type.Unsafe<T[number]>({ ...options, type: typeof values[0] === 'number' ? 'number' : 'string', enum: [...values] });
}
export const Nullable = <T extends TSchema>(s: T) => Type.Union([s, Type.Null()]);
export const Uuid = () => Type.String({ format: 'uuid' });
export const Str = (maxLength = 255) => Type.String({ maxLength });
export const IpAddress = () => Type.String({ format: 'ip' });
export const Cidr = () => Type.String({ format: 'cidr' });
export const Port = () => Type.Integer({ minimum: 1, maximum: 65535 });
export const Tags = () => Type.Array(Type.String({ maxLength: 255 }));
/** An object whose every key is optional: an update (PUT) body. */
export const Patch = <T extends TProperties>(props: T) => Type.Partial(Type.Object(props, { additionalProperties: false }));
export const Strict = <T extends TProperties>(props: T) => Type.Object(props, { additionalProperties: false });

const TRUE = new Set(['true', 't', 'yes', 'y', 'on', '1']);
const FALSE = new Set(['false', 'f', 'no', 'n', 'off', '0']);

/** How WSME prints a value inside `Value: '…'`. */
function show(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  return JSON.stringify(v);
}

function pyType(v: unknown): string {
  if (v === null) return "<class 'NoneType'>";
  if (Array.isArray(v)) return "<class 'list'>";
  switch (typeof v) {
    case 'string': return "<class 'str'>";
    case 'boolean': return "<class 'bool'>";
    case 'number': return Number.isInteger(v) ? "<class 'int'>" : "<class 'float'>";
    default: return "<class 'dict'>";
  }
}

const invalid = (field: string, value: unknown, reason: string) => apiError('INVALID_INPUT', field, show(value), reason);
const wrongType = (field: string, value: unknown, expected: string) =>
  invalid(field, value, `Wrong type. Expected '${expected}', got '${pyType(value)}'`);

function checkFormat(format: string, field: string, value: string): string {
  switch (format) {
    case 'uuid':
      if (!isUuid(value)) throw invalid(field, value, 'Value should be UUID format');
      return normaliseUuid(value);
    case 'ip':
      if (!isIpAddress(value)) throw invalid(field, value, value.includes('%') ? 'Value should be IPv4 or IPv6 format, without a scope id' : 'Value should be IPv4 or IPv6 format');
      return value;
    case 'cidr':
      if (!parseCidr(value)) throw invalid(field, value, 'Value should be IPv4 or IPv6 CIDR format');
      return value;
    case 'cipher-list': {
      const parsed = parseCipherList(value);
      if ('problem' in parsed) throw invalid(field, value, `Value should be an OpenSSL cipher list: ${parsed.problem}`);
      return value;
    }
    default:
      return value;
  }
}

/**
 * Text no field may hold, whatever its grammar: PostgreSQL's text cannot store NUL, and a lone
 * UTF-16 surrogate has no UTF-8 form (it would be stored as U+FFFD, not as sent).
 */
const UNSTORABLE: ReadonlyArray<[RegExp, string]> = [
  [/\0/, 'Value should not contain the NUL character'],
  [/\p{Cs}/u, 'Value should be well-formed Unicode (it holds a lone surrogate)'],
];

function decodeString(schema: TSchema, value: unknown, field: string): string {
  if (typeof value !== 'string') throw wrongType(field, value, "<class 'str'>");
  for (const [pattern, reason] of UNSTORABLE) if (pattern.test(value)) throw invalid(field, value, reason);
  if (schema.maxLength !== undefined && value.length > schema.maxLength)
    throw invalid(field, value, `Value should have a maximum character requirement of ${schema.maxLength}`);
  if (schema.minLength !== undefined && value.length < schema.minLength)
    throw invalid(field, value, `Value should have a minimum character requirement of ${schema.minLength}`);
  if (schema.enum && !schema.enum.includes(value))
    throw invalid(field, value, `Value should be one of: ${schema.enum.join(', ')}`);
  if (schema.pattern && !new RegExp(schema.pattern).test(value))
    throw invalid(field, value, `Value should match the pattern ${schema.pattern}`);
  return schema.format ? checkFormat(schema.format, field, value) : value;
}

function decodeNumber(schema: TSchema, value: unknown, field: string, integer: boolean): number {
  let n: number;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'string' && /^\s*[-+]?\d+(\.\d+)?\s*$/.test(value)) n = Number(value);
  else throw wrongType(field, value, integer ? "<class 'int'>" : "<class 'float'>");
  if (!Number.isFinite(n) || (integer && !Number.isInteger(n))) throw wrongType(field, value, integer ? "<class 'int'>" : "<class 'float'>");
  if (schema.enum && !schema.enum.includes(n)) throw invalid(field, value, `Value should be one of: ${schema.enum.join(', ')}`);
  if (schema.minimum !== undefined && n < schema.minimum) throw invalid(field, value, `Value should be greater or equal to ${schema.minimum}`);
  if (schema.maximum !== undefined && n > schema.maximum) throw invalid(field, value, `Value should be lower or equal to ${schema.maximum}`);
  return n;
}

function decodeBoolean(value: unknown, field: string): boolean {
  if (typeof value === 'boolean') return value;
  if (value === 0 || value === 1) return value === 1;
  if (typeof value === 'string') {
    const s = value.trim().toLowerCase();
    if (TRUE.has(s)) return true;
    if (FALSE.has(s)) return false;
  }
  throw invalid(field, value, 'Value should be a boolean');
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function decodeObject(schema: TSchema, value: unknown, field: string, arg: string): Record<string, unknown> {
  if (!isPlainObject(value)) throw wrongType(field, value, "<class 'dict'>");
  if (schema.patternProperties) {
    const [inner] = Object.values(schema.patternProperties as Record<string, TSchema>);
    // Defined, not assigned: a `__proto__` key stays a key instead of replacing the prototype.
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) Object.defineProperty(out, k, { value: decodeValue(inner!, v, field, arg || field), enumerable: true, writable: true, configurable: true });
    return out;
  }
  const props = (schema.properties ?? {}) as Record<string, TSchema>;
  // Own keys only: `constructor`, `toString` or `__proto__` are as unknown as any other name.
  const unknown = Object.keys(value).filter((k) => !Object.hasOwn(props, k));
  if (unknown.length && schema.additionalProperties === false) {
    throw apiError(unknown.length > 1 ? 'UNKNOWN_ATTRIBUTES' : 'UNKNOWN_ATTRIBUTE', arg || field, unknown.join(', '));
  }
  const out: Record<string, unknown> = {};
  for (const key of (schema.required ?? []) as string[]) {
    if (value[key] === undefined) throw invalid(key, null, 'Mandatory field missing.');
  }
  for (const [key, sub] of Object.entries(props)) {
    if (value[key] === undefined) continue;
    out[key] = decodeValue(sub, value[key], key, arg ? `${arg}.${key}` : key);
  }
  return out;
}

function decodeValue(schema: TSchema, value: unknown, field: string, arg: string): unknown {
  if (schema.anyOf) {
    const variants = schema.anyOf as TSchema[];
    if (value === null && variants.some((v) => v.type === 'null')) return null;
    const nonNull = variants.filter((v) => v.type !== 'null');
    let first: unknown;
    for (const v of nonNull) {
      try {
        return decodeValue(v, value, field, arg);
      } catch (e) {
        first ??= e;
      }
    }
    throw first;
  }
  if (value === null) throw invalid(field, value, 'Mandatory field missing.');
  switch (schema.type) {
    case 'string': return decodeString(schema, value, field);
    case 'integer': return decodeNumber(schema, value, field, true);
    case 'number': return decodeNumber(schema, value, field, false);
    case 'boolean': return decodeBoolean(value, field);
    case 'object': return decodeObject(schema, value, field, arg);
    case 'array': {
      if (!Array.isArray(value)) throw wrongType(field, value, "<class 'list'>");
      if (schema.maxItems !== undefined && value.length > schema.maxItems)
        throw invalid(field, value, `Value should have at most ${schema.maxItems} items`);
      return value.map((item) => decodeValue(schema.items as TSchema, item, field, arg));
    }
    default:
      return value;
  }
}

/** Refuses a parsed body nesting deeper than MaxRequestBodyDepth; walks it without recursion. */
export function checkBodyDepth(body: unknown): void {
  const pending: Array<[unknown, number]> = [[body, 1]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [value, depth] = next;
    if (typeof value !== 'object' || value === null) continue;
    if (depth > MaxRequestBodyDepth) throw apiError('BODY_TOO_DEEP', MaxRequestBodyDepth);
    for (const child of Object.values(value)) pending.push([child, depth + 1]);
  }
}

/**
 * Decodes a request body against `schema` (an object whose single key is the envelope,
 * e.g. `{loadbalancer: …}`). Returns the coerced value or throws an ApiError.
 */
export function decodeBody<T extends TObject>(schema: T, body: unknown, arg: string): Static<T> {
  if (body === undefined || body === null || body === '') body = {};
  // Unknown attributes are reported on the path below the argument (`listener_.listener`), as WSME does;
  // invalid values by their own field names.
  return decodeObject(schema, body, arg, arg) as Static<T>;
}

/** Applies `schema` to one already-extracted value (used for query parameters). */
export function decodeField(schema: TSchema, value: unknown, field: string): unknown {
  return decodeValue(schema, value, field, field);
}

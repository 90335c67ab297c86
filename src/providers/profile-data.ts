/**
 * Flavor and availability-zone profile data as a provider declares it: each key with a JSON
 * type (and maybe an enum) and a description. Octavia checks profile data with jsonschema and
 * prints jsonschema's messages (Python reprs included) in the 501, so we reproduce them; the
 * descriptions are the capability lists the API shows.
 */
import { apiError } from '../domain/errors.js';
import type { Capability } from '../provider-contract/provider.js';

export interface DataKey {
  readonly type: 'string' | 'boolean' | 'array';
  readonly enum?: readonly string[];
  readonly description: string;
}

export type DataSchema = Readonly<Record<string, DataKey>>;

export function capabilitiesOf(schema: DataSchema): Capability[] {
  return Object.entries(schema).map(([name, key]) => ({ name, description: key.description }));
}

/** How Python's repr() prints a JSON value: jsonschema puts it into its messages. */
export function pyRepr(value: unknown): string {
  if (value === null) return 'None';
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'string') return value.includes("'") && !value.includes('"') ? `"${value}"` : `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  if (Array.isArray(value)) return `[${value.map(pyRepr).join(', ')}]`;
  if (typeof value === 'object') return `{${Object.entries(value).map(([k, v]) => `${pyRepr(k)}: ${pyRepr(v)}`).join(', ')}}`;
  return String(value);
}

function typeOk(key: DataKey, value: unknown): boolean {
  if (key.type === 'array') return Array.isArray(value);
  return typeof value === key.type;
}

/** Throws a 501 naming the first violation of `schema`, worded as Octavia words it (`<key> <jsonschema message>`). */
export function validateProfileData(provider: string, schema: DataSchema, data: Readonly<Record<string, unknown>>): void {
  // Sorted, as jsonschema lists them in Octavia's message.
  const extra = Object.keys(data).filter((k) => !Object.hasOwn(schema, k)).sort();
  if (extra.length)
    throw apiError('PROVIDER_UNSUPPORTED_OPTION', provider, `Additional properties are not allowed (${extra.map(pyRepr).join(', ')} ${extra.length > 1 ? 'were' : 'was'} unexpected)`);
  for (const [name, value] of Object.entries(data)) {
    const key = schema[name]!;
    if (!typeOk(key, value)) throw apiError('PROVIDER_UNSUPPORTED_OPTION', provider, `${name} ${pyRepr(value)} is not of type '${key.type}'`);
    if (key.enum && !key.enum.includes(value as string))
      throw apiError('PROVIDER_UNSUPPORTED_OPTION', provider, `${name} ${pyRepr(value)} is not one of ${pyRepr(key.enum)}`);
  }
}

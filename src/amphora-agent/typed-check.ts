/**
 * Checks untrusted JSON (a pushed config, a received heartbeat, an agent.json) against the
 * amphora TypeBox schemas. TypeBox's Value module knows neither string formats nor the
 * `Type.Unsafe` enums of schema-kit's `Enum`, so both are registered here, once: `uuid` with
 * the API's own UUID rule, `ip` with its address parser, `Unsafe` as the JSON-schema `enum` and `type` it carries.
 */
import { FormatRegistry, TypeRegistry, type Static, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { isIpAddress, isUuid } from '../domain/net.js';

if (!FormatRegistry.Has('uuid')) FormatRegistry.Set('uuid', isUuid);
if (!FormatRegistry.Has('ip')) FormatRegistry.Set('ip', isIpAddress);
if (!TypeRegistry.Has('Unsafe'))
  TypeRegistry.Set<{ enum?: unknown[]; type?: string }>('Unsafe', (schema, value) => (schema.enum?.includes(value) ?? true) && (schema.type === undefined || typeof value === schema.type));

export function conforms<T extends TSchema>(schema: T, value: unknown): value is Static<T> {
  return Value.Check(schema, value);
}

/** One line per violation, `<json pointer>: <message>`, at most `limit` of them. */
export function violations(schema: TSchema, value: unknown, limit = 20): string[] {
  const lines: string[] = [];
  for (const error of Value.Errors(schema, value)) {
    lines.push(`${error.path || '/'}: ${error.message}`);
    if (lines.length >= limit) break;
  }
  return lines;
}

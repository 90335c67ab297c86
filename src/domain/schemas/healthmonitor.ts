/** Request bodies of the health monitor resource. */
import { Type, Nullable, Uuid, Str, Tags, Strict, Patch, Enum } from '../schema-kit.js';
import { HealthMonitorType, HttpMethod, HttpVersion } from '../enums.js';
import { MaxMonitorSeconds } from '../grammar/limits.js';

// Octavia's patterns, verbatim: WSME prints them in its error messages.
// Octavia's pattern, kept for its error text; rules/healthmonitor.ts also refuses whitespace other than spaces.
const EXPECTED_CODES = String.raw`^(\d{3}(\s*,\s*\d{3})*)$|^(\d{3}-\d{3})$`;
const DOMAIN_NAME = String.raw`^(?=.{1,253}\.?$)(?:(?!-|[^.]+_)[A-Za-z0-9-_]{1,63}(?<!-)(?:\.|$))+$`;

const Retries = () => Type.Integer({ minimum: 1, maximum: 10 });
const Seconds = () => Type.Integer({ minimum: 0, maximum: MaxMonitorSeconds });

/** Settable on create and update alike; url_path's grammar is checked by the rules. */
const optionalFields = {
  name: Nullable(Str()),
  admin_state_up: Nullable(Type.Boolean()),
  max_retries_down: Nullable(Retries()),
  http_method: Nullable(Enum(HttpMethod)),
  url_path: Nullable(Type.String({ maxLength: 2048 })),
  expected_codes: Nullable(Type.String({ maxLength: 64, pattern: EXPECTED_CODES })),
  http_version: Nullable(Enum(HttpVersion)),
  domain_name: Nullable(Type.String({ minLength: 1, maxLength: 255, pattern: DOMAIN_NAME })),
  tags: Tags(),
};

const singleCreateFields = {
  type: Enum(HealthMonitorType),
  delay: Seconds(),
  timeout: Seconds(),
  max_retries: Retries(),
  ...Type.Partial(Type.Object(optionalFields)).properties,
};

/** A monitor given inside a pool (graph create): no pool_id. */
export const HealthMonitorSingleCreate = Strict(singleCreateFields);

export const HealthMonitorCreateBody = Strict({
  healthmonitor: Strict({
    ...singleCreateFields,
    pool_id: Uuid(),
    project_id: Type.Optional(Str(36)),
    tenant_id: Type.Optional(Str(36)),
  }),
});

/** null for delay/timeout/max_retries passes the schema so the handler can refuse it in Octavia's words. */
export const HealthMonitorUpdateBody = Strict({
  healthmonitor: Patch({
    ...optionalFields,
    delay: Nullable(Seconds()),
    timeout: Nullable(Seconds()),
    max_retries: Nullable(Retries()),
  }),
});

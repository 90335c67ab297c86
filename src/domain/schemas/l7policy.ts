/** Request bodies of the L7 policy resource. */
import { Type, Nullable, Uuid, Str, Tags, Strict, Patch, Enum } from '../schema-kit.js';
import { L7PolicyAction, RedirectHttpCode } from '../enums.js';
import { L7RuleSingleCreate } from './l7rule.js';

const MAX_POSITION = 2147483647;
// URL grammar is checked by the L7 rules (Octavia's URLType), length by the column.
const RedirectUrl = () => Type.String({ maxLength: 2048 });

const policyFields = {
  name: Type.Optional(Nullable(Str())),
  description: Type.Optional(Nullable(Str())),
  admin_state_up: Type.Optional(Nullable(Type.Boolean())),
  action: Enum(L7PolicyAction),
  redirect_url: Type.Optional(Nullable(RedirectUrl())),
  redirect_prefix: Type.Optional(Nullable(RedirectUrl())),
  redirect_http_code: Type.Optional(Nullable(Enum(RedirectHttpCode))),
  position: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: MAX_POSITION }))),
  rules: Type.Optional(Nullable(Type.Array(L7RuleSingleCreate))),
  tags: Type.Optional(Tags()),
};

/**
 * A policy given inside a listener (graph create): no listener_id, and its redirect pool
 * is referenced by name (the graph resolves it to a pool defined in the same request).
 */
export const L7PolicySingleCreate = Strict({
  ...policyFields,
  redirect_pool: Type.Optional(Strict({ name: Str() })),
});

export const L7PolicyCreateBody = Strict({
  l7policy: Strict({
    ...policyFields,
    listener_id: Uuid(),
    redirect_pool_id: Type.Optional(Nullable(Uuid())),
    project_id: Type.Optional(Str(36)),
    tenant_id: Type.Optional(Str(36)),
  }),
});

export const L7PolicyUpdateBody = Strict({
  l7policy: Patch({
    name: Nullable(Str()),
    description: Nullable(Str()),
    admin_state_up: Nullable(Type.Boolean()),
    action: Enum(L7PolicyAction),
    redirect_pool_id: Nullable(Uuid()),
    redirect_url: Nullable(RedirectUrl()),
    redirect_prefix: Nullable(RedirectUrl()),
    redirect_http_code: Nullable(Enum(RedirectHttpCode)),
    position: Type.Integer({ minimum: 1, maximum: MAX_POSITION }),
    tags: Tags(),
  }),
});

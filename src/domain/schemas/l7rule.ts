/** Request bodies of the L7 rule resource (`rule` envelope). */
import { Type, Nullable, Str, Tags, Strict, Patch, Enum } from '../schema-kit.js';
import { L7RuleType, L7RuleCompareType } from '../enums.js';

// A CR or LF in a key or value would split the proxy config line it lands on (rules/l7.ts refuses the other control characters).
const OneLine = () => Type.String({ maxLength: 255, pattern: '^[^\\r\\n]*$' });

const ruleFields = {
  type: Enum(L7RuleType),
  compare_type: Enum(L7RuleCompareType),
  value: OneLine(),
  key: Type.Optional(Nullable(OneLine())),
  invert: Type.Optional(Nullable(Type.Boolean())),
  admin_state_up: Type.Optional(Nullable(Type.Boolean())),
  tags: Type.Optional(Tags()),
};

/** A rule given inside a policy (graph create, or a policy's `rules` on POST). */
export const L7RuleSingleCreate = Strict(ruleFields);

export const L7RuleCreateBody = Strict({
  rule: Strict({ ...ruleFields, project_id: Type.Optional(Str(36)), tenant_id: Type.Optional(Str(36)) }),
});

/** A null type or value passes the schema: the merged rule is then judged by the rule validator, as in Octavia. */
export const L7RuleUpdateBody = Strict({
  rule: Patch({
    type: Nullable(Enum(L7RuleType)),
    compare_type: Enum(L7RuleCompareType),
    value: Nullable(OneLine()),
    key: Nullable(OneLine()),
    invert: Nullable(Type.Boolean()),
    admin_state_up: Nullable(Type.Boolean()),
    tags: Tags(),
  }),
});

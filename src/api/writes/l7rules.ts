/** L7 rule writes: the preparation policy creates share, and the locked create, update and delete. */
import { randomUUID } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { ApiDeps } from '../context.js';
import type { Database } from '../../db/schema.js';
import type { L7PolicyRow } from '../../db/records/l7policy.js';
import { l7RuleCodec, type L7RuleRecord } from '../../db/records/l7rule.js';
import { timestamp } from '../../domain/time.js';
import type { L7RuleSingleCreate, L7RuleUpdateBody } from '../../domain/schemas/l7rule.js';
import type { Static } from '../../domain/schema-kit.js';
import { checkRuleCount, validateL7Rule } from '../../domain/rules/l7.js';
import type { ProviderDriver } from '../../provider-contract/provider.js';
import { enqueue } from '../../controller/jobs.js';
import type { L7RuleRow } from '../../db/records/l7rule.js';
import { writeTags } from '../tags.js';
import { lockForChildChange, markPending, requireActive } from '../../db/lb-lock.js';
import { checkQuota } from '../quota.js';
import type { PolicyContext } from '../loaders.js';

type Trx = Transaction<Database>;
type UpdateInput = Static<typeof L7RuleUpdateBody>['rule'];

type RuleInput = Static<typeof L7RuleSingleCreate>;

/** The rule as providers see it: API names, defaults applied. */
export type L7RuleAttrs = Pick<L7RuleRecord, 'type' | 'compare_type' | 'key' | 'value' | 'invert' | 'admin_state_up'>;

function ruleAttrs(r: L7RuleAttrs): L7RuleAttrs {
  return { type: r.type, compare_type: r.compare_type, key: r.key, value: r.value, invert: r.invert, admin_state_up: r.admin_state_up };
}

/** Validates a new rule (Octavia's per-type rules, then the provider's) and applies defaults. */
export function prepareL7Rule(driver: ProviderDriver, input: RuleInput): L7RuleAttrs {
  const attrs = ruleAttrs({
    type: input.type,
    compare_type: input.compare_type,
    key: input.key ?? null,
    value: input.value,
    invert: Boolean(input.invert),
    admin_state_up: input.admin_state_up === undefined ? true : Boolean(input.admin_state_up),
  });
  validateL7Rule(attrs);
  driver.checks.l7rule?.(attrs);
  return attrs;
}

/** Writes a prepared rule (PENDING_CREATE) of `policy` with its tags; locking is the caller's. */
export async function writeL7Rule(trx: Trx, policy: Pick<L7PolicyRow, 'id' | 'project_id'>, attrs: L7RuleAttrs, tags: readonly string[] | undefined): Promise<L7RuleRow> {
  const row: L7RuleRow = {
    id: randomUUID(),
    project_id: policy.project_id,
    l7policy_id: policy.id,
    ...l7RuleCodec.encode(attrs),
    provisioning_status: 'PENDING_CREATE',
    operating_status: 'OFFLINE',
    created_at: timestamp(),
    updated_at: null,
  };
  await trx.insertInto('l7rule').values(row).execute();
  await writeTags(trx, row.id, tags);
  return row;
}

/** §5.2 for rule changes: the policy must be ACTIVE; LB, its listener and the policy go PENDING_UPDATE. */
async function lockPolicyForRuleChange(trx: Trx, pc: PolicyContext): Promise<void> {
  const policy = await trx.selectFrom('l7policy').select('provisioning_status').where('id', '=', pc.policy.id).executeTakeFirstOrThrow();
  requireActive(policy.provisioning_status, 'L7Policy', pc.policy.id);
  await lockForChildChange(trx, pc.loadBalancerId);
  await markPending(trx, 'listener', [pc.policy.listener_id], 'PENDING_UPDATE');
  await markPending(trx, 'l7policy', [pc.policy.id], 'PENDING_UPDATE');
}

/** POST …/rules: the rule (prepared before the transaction) counted, written, its policy locked and the job enqueued. */
export async function createL7Rule(deps: ApiDeps, trx: Trx, pc: PolicyContext, attrs: L7RuleAttrs, tags: readonly string[] | undefined): Promise<L7RuleRow> {
  const { n } = await trx.selectFrom('l7rule').select((eb) => eb.fn.countAll().as('n')).where('l7policy_id', '=', pc.policy.id).executeTakeFirstOrThrow();
  checkRuleCount(pc.policy.id, Number(n) + 1);
  await checkQuota(trx, deps.config, pc.policy.project_id, { l7rule: 1 }, deps.db.dialect);
  const rule = await writeL7Rule(trx, pc.policy, attrs, tags);
  await lockPolicyForRuleChange(trx, pc);
  await enqueue(trx, { loadBalancerId: pc.loadBalancerId, provider: pc.provider, operation: 'l7rule.create' });
  return rule;
}

/** A PUT body merged over the stored rule and judged (Octavia's rules, then the provider's) before the transaction. */
export function checkL7RuleUpdate(pc: PolicyContext, stored: L7RuleRow, b: UpdateInput): L7RuleAttrs {
  const current = l7RuleCodec.decode(stored);
  const merged = {
    type: b.type === undefined ? current.type : b.type,
    compare_type: b.compare_type ?? current.compare_type,
    key: b.key === undefined ? current.key : b.key,
    value: b.value === undefined ? current.value : b.value,
    // null resets invert to false; Octavia coerces a null admin_state_up to false too.
    invert: b.invert === undefined ? current.invert : Boolean(b.invert),
    admin_state_up: b.admin_state_up === undefined ? current.admin_state_up : Boolean(b.admin_state_up),
  };
  validateL7Rule(merged);
  const attrs = ruleAttrs(merged);
  pc.driver.checks.l7rule?.(attrs);
  return attrs;
}

/** Writes a checked change under the policy's lock; returns the rule as it now stands. */
export async function updateL7Rule(trx: Trx, pc: PolicyContext, stored: L7RuleRow, attrs: L7RuleAttrs, tags: readonly string[] | undefined): Promise<L7RuleRow> {
  await lockPolicyForRuleChange(trx, pc);
  await trx
    .updateTable('l7rule')
    .set({ ...l7RuleCodec.encode(attrs), provisioning_status: 'PENDING_UPDATE', updated_at: timestamp() })
    .where('id', '=', stored.id)
    .execute();
  await writeTags(trx, stored.id, tags);
  await enqueue(trx, { loadBalancerId: pc.loadBalancerId, provider: pc.provider, operation: 'l7rule.update' });
  return trx.selectFrom('l7rule').selectAll().where('id', '=', stored.id).executeTakeFirstOrThrow();
}

export async function deleteL7Rule(trx: Trx, pc: PolicyContext, stored: L7RuleRow): Promise<void> {
  await lockPolicyForRuleChange(trx, pc);
  await markPending(trx, 'l7rule', [stored.id], 'PENDING_DELETE');
  await enqueue(trx, { loadBalancerId: pc.loadBalancerId, provider: pc.provider, operation: 'l7rule.delete' });
}

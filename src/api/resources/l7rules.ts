/** /lbaas/l7policies/{l7policy_id}/rules: list, show, create, update, delete (envelope `rule`). */
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import type { Transaction } from 'kysely';
import type { ApiDeps } from '../context.js';
import type { Database, L7PolicyTable } from '../../db/schema.js';
import { apiError } from '../../domain/errors.js';
import type { RequestContext } from '../../domain/context.js';
import { timestamp } from '../../domain/time.js';
import { L7RuleCreateBody, L7RuleUpdateBody, type L7RuleSingleCreate } from '../../domain/schemas/l7rule.js';
import type { Static } from '../../domain/schema-kit.js';
import { checkRuleCount, validateL7Rule } from '../../domain/rules/l7.js';
import type { ProviderDriver } from '../../provider-contract/provider.js';
import { authorize } from '../../identity/policy.js';
import { enqueue } from '../../controller/jobs.js';
import { listWithin, pickFields, fieldsOf, treeAttributes, type ListSpec } from '../listing.js';
import { renderL7Rules, type L7RuleRow } from '../views/l7rule.js';
import { writeTags } from '../tags.js';
import { lockForChildChange, markPending, requireActive } from '../locks.js';
import { checkQuota } from '../quota.js';
import { change } from '../change.js';

type Trx = Transaction<Database>;

export const l7RuleList: ListSpec = {
  table: 'l7rule',
  tagged: true,
  projectColumn: 'project_id',
  attributes: {
    ...treeAttributes,
    type: { column: 'type', kind: 'string' },
    compare_type: { column: 'compare_type', kind: 'string' },
    key: { column: 'key', kind: 'string' },
    value: { column: 'value', kind: 'string' },
    invert: { column: 'invert', kind: 'bool' },
  },
};

type RuleInput = Static<typeof L7RuleSingleCreate>;

/** The rule as providers see it: API names, defaults applied. */
function ruleAttrs(r: { type: string; compare_type: string; key: string | null; value: string; invert: boolean; admin_state_up: boolean }) {
  return { type: r.type, compare_type: r.compare_type, key: r.key, value: r.value, invert: r.invert, admin_state_up: r.admin_state_up };
}

export type L7RuleAttrs = ReturnType<typeof ruleAttrs>;

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
export async function writeL7Rule(trx: Trx, policy: Pick<L7PolicyTable, 'id' | 'project_id'>, attrs: L7RuleAttrs, tags: readonly string[] | undefined): Promise<L7RuleRow> {
  const row: L7RuleRow = {
    id: randomUUID(),
    project_id: policy.project_id,
    l7policy_id: policy.id,
    ...attrs,
    invert: attrs.invert ? 1 : 0,
    admin_state_up: attrs.admin_state_up ? 1 : 0,
    provisioning_status: 'PENDING_CREATE',
    operating_status: 'OFFLINE',
    created_at: timestamp(),
    updated_at: null,
  };
  await trx.insertInto('l7rule').values(row).execute();
  await writeTags(trx, row.id, tags);
  return row;
}

interface PolicyContext {
  policy: L7PolicyTable;
  loadBalancerId: string;
  driver: ProviderDriver;
  provider: string;
}

/** The policy named in the path; a missing one is a routing error (pecan body), as in Octavia. */
async function policyContext(deps: ApiDeps, policyId: string): Promise<PolicyContext> {
  const row = await deps.db.kysely
    .selectFrom('l7policy')
    .innerJoin('listener', 'listener.id', 'l7policy.listener_id')
    .innerJoin('load_balancer', 'load_balancer.id', 'listener.load_balancer_id')
    .selectAll('l7policy')
    .select(['load_balancer.id as lb_id', 'load_balancer.provider as lb_provider'])
    .where('l7policy.id', '=', policyId)
    .executeTakeFirst();
  if (!row) throw apiError('PARENT_NOT_FOUND', 'L7 Policy', policyId);
  const { lb_id, lb_provider, ...policy } = row;
  return { policy, loadBalancerId: lb_id, provider: lb_provider, driver: deps.providers.forLoadBalancer(lb_provider) };
}

async function ruleFor(deps: ApiDeps, ctx: RequestContext, policyId: string, id: string, action: 'get_one' | 'put' | 'delete'): Promise<L7RuleRow> {
  const row = await deps.db.kysely.selectFrom('l7rule').selectAll().where('id', '=', id).where('l7policy_id', '=', policyId).executeTakeFirst();
  if (!row) throw apiError('NOT_FOUND', 'L7 Rule', id);
  authorize(ctx, 'l7rule', action, row.project_id);
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

async function renderOne(deps: ApiDeps, id: string) {
  const row = await deps.db.kysely.selectFrom('l7rule').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const [view] = await renderL7Rules(deps.db.kysely, [row]);
  return view!;
}

type Params = { Params: { policyId: string; id: string } };

export const l7RuleRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  const { db } = deps;

  app.get<{ Params: { policyId: string } }>('/l7policies/:policyId/rules', async (req) => {
    const { policy } = await policyContext(deps, req.params.policyId);
    authorize(req.ctx, 'l7rule', 'get_all', policy.project_id);
    const { items, links } = await listWithin(deps, req, l7RuleList, { column: 'l7policy_id', id: policy.id }, (rows: L7RuleRow[]) => renderL7Rules(db.kysely, rows));
    return { rules: items, rules_links: links };
  });

  app.get<Params>('/l7policies/:policyId/rules/:id', async (req) => {
    const { policy } = await policyContext(deps, req.params.policyId);
    const row = await ruleFor(deps, req.ctx, policy.id, req.params.id, 'get_one');
    const [view] = await renderL7Rules(db.kysely, [row]);
    return { rule: pickFields(view!, fieldsOf(req)) };
  });

  app.post<{ Params: { policyId: string } }>('/l7policies/:policyId/rules', { schema: { body: L7RuleCreateBody } }, async (req, reply) => {
    const pc = await policyContext(deps, req.params.policyId);
    authorize(req.ctx, 'l7rule', 'post', pc.policy.project_id);
    const b = (req.body as Static<typeof L7RuleCreateBody>).rule;
    const attrs = prepareL7Rule(pc.driver, b);
    const row = await change(deps, async (trx) => {
      const { n } = await trx.selectFrom('l7rule').select((eb) => eb.fn.countAll().as('n')).where('l7policy_id', '=', pc.policy.id).executeTakeFirstOrThrow();
      checkRuleCount(pc.policy.id, Number(n) + 1);
      await checkQuota(trx, deps.config, pc.policy.project_id, { l7rule: 1 }, deps.db.dialect);
      const rule = await writeL7Rule(trx, pc.policy, attrs, b.tags);
      await lockPolicyForRuleChange(trx, pc);
      await enqueue(trx, { loadBalancerId: pc.loadBalancerId, provider: pc.provider, operation: 'l7rule.create' });
      return rule;
    });
    return reply.code(201).send({ rule: await renderOne(deps, row.id) });
  });

  app.put<Params>('/l7policies/:policyId/rules/:id', { schema: { body: L7RuleUpdateBody } }, async (req) => {
    const pc = await policyContext(deps, req.params.policyId);
    const stored = await ruleFor(deps, req.ctx, pc.policy.id, req.params.id, 'put');
    const b = (req.body as Static<typeof L7RuleUpdateBody>).rule;
    const merged = {
      type: b.type === undefined ? stored.type : b.type,
      compare_type: b.compare_type ?? stored.compare_type,
      key: b.key === undefined ? stored.key : b.key,
      value: b.value === undefined ? stored.value : b.value,
      // null resets invert to false; Octavia coerces a null admin_state_up to false too.
      invert: b.invert === undefined ? stored.invert === 1 : Boolean(b.invert),
      admin_state_up: b.admin_state_up === undefined ? stored.admin_state_up === 1 : Boolean(b.admin_state_up),
    };
    validateL7Rule(merged);
    const attrs = ruleAttrs(merged);
    pc.driver.checks.l7rule?.(attrs);
    await change(deps, async (trx) => {
      await lockPolicyForRuleChange(trx, pc);
      await trx
        .updateTable('l7rule')
        .set({ ...attrs, invert: attrs.invert ? 1 : 0, admin_state_up: attrs.admin_state_up ? 1 : 0, provisioning_status: 'PENDING_UPDATE', updated_at: timestamp() })
        .where('id', '=', stored.id)
        .execute();
      await writeTags(trx, stored.id, b.tags);
      await enqueue(trx, { loadBalancerId: pc.loadBalancerId, provider: pc.provider, operation: 'l7rule.update' });
    });
    return { rule: await renderOne(deps, stored.id) };
  });

  app.delete<Params>('/l7policies/:policyId/rules/:id', async (req, reply) => {
    const pc = await policyContext(deps, req.params.policyId);
    const stored = await ruleFor(deps, req.ctx, pc.policy.id, req.params.id, 'delete');
    await change(deps, async (trx) => {
      await lockPolicyForRuleChange(trx, pc);
      await markPending(trx, 'l7rule', [stored.id], 'PENDING_DELETE');
      await enqueue(trx, { loadBalancerId: pc.loadBalancerId, provider: pc.provider, operation: 'l7rule.delete' });
    });
    return reply.code(204).send();
  });
};

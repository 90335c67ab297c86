/** /lbaas/l7policies/{l7policy_id}/rules: list, show, create, update, delete (envelope `rule`). */
import type { FastifyPluginAsync } from 'fastify';
import type { ApiDeps } from '../context.js';
import { L7RuleCreateBody, L7RuleUpdateBody } from '../../domain/schemas/l7rule.js';
import type { Static } from '../../domain/schema-kit.js';
import { authorize } from '../../identity/policy.js';
import { loadWaiting } from '../wait.js';
import { listWithin, pickFields, fieldsOf, treeObjectAttributes, type ListSpec } from '../listing.js';
import { renderL7Rules } from '../views/l7rule.js';
import type { L7RuleRow } from '../../db/records/l7rule.js';
import { policyOfPath, ruleFor } from '../loaders.js';
import { change } from '../change.js';
import { checkL7RuleUpdate, createL7Rule, deleteL7Rule, prepareL7Rule, updateL7Rule } from '../writes/l7rules.js';

export const l7RuleList: ListSpec = {
  table: 'l7rule',
  tagged: true,
  projectColumn: 'project_id',
  computed: { tags: [] },
  attributes: treeObjectAttributes(L7RuleCreateBody.properties.rule),
};

type Params = { Params: { policyId: string; id: string } };

export const l7RuleRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  const { db } = deps;
  const render = async (row: L7RuleRow) => (await renderL7Rules(db.kysely, [row]))[0]!;

  app.get<{ Params: { policyId: string } }>('/l7policies/:policyId/rules', async (req) => {
    const { policy } = await policyOfPath(deps, req.params.policyId);
    authorize(req.ctx, 'l7rule', 'get_all', policy.project_id);
    const { items, links } = await listWithin(deps, req, l7RuleList, { column: 'l7policy_id', id: policy.id }, (rows: L7RuleRow[], fields) => renderL7Rules(db.kysely, rows, fields));
    return { rules: items, rules_links: links };
  });

  app.get<Params>('/l7policies/:policyId/rules/:id', async (req, reply) => {
    const { policy } = await policyOfPath(deps, req.params.policyId);
    const row = await loadWaiting(deps, req, reply, 'l7rule', () => ruleFor(deps, req.ctx, policy.id, req.params.id, 'get_one'));
    return { rule: pickFields(await render(row), fieldsOf(req)) };
  });

  app.post<{ Params: { policyId: string } }>('/l7policies/:policyId/rules', { schema: { body: L7RuleCreateBody } }, async (req, reply) => {
    const pc = await policyOfPath(deps, req.params.policyId);
    authorize(req.ctx, 'l7rule', 'post', pc.policy.project_id);
    const b = (req.body as Static<typeof L7RuleCreateBody>).rule;
    const attrs = prepareL7Rule(pc.driver, b);
    const row = await change(deps, (trx) => createL7Rule(deps, trx, pc, attrs, b.tags));
    return reply.code(201).send({ rule: await render(row) });
  });

  app.put<Params>('/l7policies/:policyId/rules/:id', { schema: { body: L7RuleUpdateBody } }, async (req) => {
    const pc = await policyOfPath(deps, req.params.policyId);
    const stored = await ruleFor(deps, req.ctx, pc.policy.id, req.params.id, 'put');
    const b = (req.body as Static<typeof L7RuleUpdateBody>).rule;
    const attrs = checkL7RuleUpdate(pc, stored, b);
    const row = await change(deps, (trx) => updateL7Rule(trx, pc, stored, attrs, b.tags));
    return { rule: await render(row) };
  });

  app.delete<Params>('/l7policies/:policyId/rules/:id', async (req, reply) => {
    const pc = await policyOfPath(deps, req.params.policyId);
    const stored = await ruleFor(deps, req.ctx, pc.policy.id, req.params.id, 'delete');
    await change(deps, (trx) => deleteL7Rule(trx, pc, stored));
    return reply.code(204).send();
  });
};

/** /lbaas/pools/{pool_id}/members: list, show, create, update, delete and the batch update. */
import type { FastifyPluginAsync } from 'fastify';
import type { ApiDeps } from '../context.js';
import { Type, decodeField, type Static } from '../../domain/schema-kit.js';
import { MemberBatchBody, MemberCreateBody, MemberUpdateBody } from '../../domain/schemas/member.js';
import { authorize } from '../../identity/policy.js';
import { loadWaiting } from '../wait.js';
import { listWithin, pickFields, fieldsOf, treeObjectAttributes, type ListSpec } from '../listing.js';
import { renderMembers } from '../views/member.js';
import type { MemberRow } from '../../db/records/member.js';
import { memberOf, poolOfPath } from '../loaders.js';
import { change } from '../change.js';
import { applyMemberBatch, createMember, deleteMember, updateMember } from '../writes/members.js';

export const memberList: ListSpec = {
  table: 'member',
  tagged: true,
  projectColumn: 'project_id',
  computed: { tags: [] },
  attributes: treeObjectAttributes(MemberCreateBody.properties.member, { stored: { vnic_type: { column: 'vnic_type', kind: 'string' } }, requestOnly: ['request_sriov'] }),
};

export const memberRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  const { db } = deps;
  type PoolParams = { Params: { pool_id: string } };
  type MemberParams = { Params: { pool_id: string; id: string } };

  app.get<PoolParams>('/pools/:pool_id/members', async (req) => {
    const pool = await poolOfPath(deps, req.params.pool_id);
    authorize(req.ctx, 'member', 'get_all', pool.project_id);
    const { items, links } = await listWithin(deps, req, memberList, { column: 'pool_id', id: pool.id }, (rows: MemberRow[], fields) => renderMembers(db.kysely, rows, fields));
    return { members: items, members_links: links };
  });

  app.get<MemberParams>('/pools/:pool_id/members/:id', async (req, reply) => {
    const pool = await poolOfPath(deps, req.params.pool_id);
    const row = await loadWaiting(deps, req, reply, 'member', async () => {
      const member = await memberOf(deps, pool, req.params.id);
      authorize(req.ctx, 'member', 'get_one', pool.project_id);
      return member;
    });
    const [view] = await renderMembers(db.kysely, [row]);
    return { member: pickFields(view!, fieldsOf(req)) };
  });

  app.post<PoolParams>('/pools/:pool_id/members', { schema: { body: MemberCreateBody } }, async (req, reply) => {
    const pool = await poolOfPath(deps, req.params.pool_id);
    authorize(req.ctx, 'member', 'post', pool.project_id);
    const { project_id: _project, tenant_id: _tenant, ...input } = (req.body as Static<typeof MemberCreateBody>).member;
    const row = await change(deps, (trx) => createMember(deps, trx, pool, input));
    const [view] = await renderMembers(db.kysely, [row]);
    return reply.code(201).send({ member: view });
  });

  app.put<PoolParams & { Querystring: { additive_only?: string } }>('/pools/:pool_id/members', { schema: { body: MemberBatchBody } }, async (req, reply) => {
    const pool = await poolOfPath(deps, req.params.pool_id);
    const additiveOnly = req.query.additive_only === undefined ? false : (decodeField(Type.Boolean(), req.query.additive_only, 'additive_only') as boolean);
    for (const action of additiveOnly ? (['post', 'put'] as const) : (['post', 'put', 'delete'] as const)) authorize(req.ctx, 'member', action, pool.project_id);
    const wanted = (req.body as Static<typeof MemberBatchBody>).members;
    await change(deps, (trx) => applyMemberBatch(deps, trx, pool, wanted, additiveOnly));
    return reply.code(202).send();
  });

  app.put<MemberParams>('/pools/:pool_id/members/:id', { schema: { body: MemberUpdateBody } }, async (req) => {
    const pool = await poolOfPath(deps, req.params.pool_id);
    const row = await memberOf(deps, pool, req.params.id);
    authorize(req.ctx, 'member', 'put', pool.project_id);
    const b = (req.body as Static<typeof MemberUpdateBody>).member;
    return { member: await change(deps, (trx) => updateMember(deps, trx, pool, row, b)) };
  });

  app.delete<MemberParams>('/pools/:pool_id/members/:id', async (req, reply) => {
    const pool = await poolOfPath(deps, req.params.pool_id);
    const row = await memberOf(deps, pool, req.params.id);
    authorize(req.ctx, 'member', 'delete', pool.project_id);
    await change(deps, (trx) => deleteMember(trx, pool, row));
    return reply.code(204).send();
  });
};

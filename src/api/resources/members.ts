/** /lbaas/pools/{pool_id}/members: list, show, create, update, delete and the batch update. */
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import type { Kysely, Transaction } from 'kysely';
import type { ApiDeps } from '../context.js';
import type { Database } from '../../db/schema.js';
import { apiError } from '../../domain/errors.js';
import type { RequestContext } from '../../domain/context.js';
import { timestamp } from '../../domain/time.js';
import { Type, decodeField, type Static } from '../../domain/schema-kit.js';
import { MemberBatchBody, MemberCreateBody, MemberSingleCreate, MemberUpdateBody } from '../../domain/schemas/member.js';
import {
  memberSettingsForCreate, memberSettingsForUpdate, planMemberBatch, type MemberSettings,
} from '../../domain/rules/member.js';
import { assertMemberAddressAllowed, memberAddressPolicy } from '../../domain/rules/member-address.js';
import { authorize } from '../../identity/policy.js';
import { enqueue } from '../../controller/jobs.js';
import { listWithin, pickFields, fieldsOf, treeAttributes, type ListSpec } from '../listing.js';
import { memberRelations, memberView, type MemberRow } from '../views/member.js';
import type { PoolRow } from '../views/pool.js';
import { writeTags } from '../tags.js';
import { lockPoolForChildChange, markPending } from '../../db/lb-lock.js';
import { checkQuota } from '../quota.js';
import { parentLoadBalancer } from './listeners.js';
import type { LoadBalancerRow } from '../views/loadbalancer.js';
import { change } from '../change.js';

type Q = Kysely<Database> | Transaction<Database>;
type Trx = Transaction<Database>;
type MemberInput = Static<typeof MemberSingleCreate>;

export const memberList: ListSpec = {
  table: 'member',
  tagged: true,
  projectColumn: 'project_id',
  attributes: {
    ...treeAttributes,
    name: { column: 'name', kind: 'string' },
    address: { column: 'address', kind: 'string' },
    protocol_port: { column: 'protocol_port', kind: 'int' },
    weight: { column: 'weight', kind: 'int' },
    backup: { column: 'backup', kind: 'bool' },
    subnet_id: { column: 'subnet_id', kind: 'uuid' },
    monitor_address: { column: 'monitor_address', kind: 'string' },
    monitor_port: { column: 'monitor_port', kind: 'int' },
    vnic_type: { column: 'vnic_type', kind: 'string' },
  },
};

/** The pool of a member path; Octavia reports a missing one while routing (pecan format). */
async function poolOfPath(deps: ApiDeps, poolId: string): Promise<PoolRow> {
  const pool = await deps.db.kysely.selectFrom('pool').selectAll().where('id', '=', poolId).executeTakeFirst();
  if (!pool || pool.provisioning_status === 'DELETED') throw apiError('PARENT_NOT_FOUND', 'Pool', poolId);
  return pool;
}

/** A member of `pool`; one of another pool is as missing as one that does not exist. */
async function memberOf(deps: ApiDeps, pool: PoolRow, id: string): Promise<MemberRow> {
  const row = await deps.db.kysely.selectFrom('member').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row || row.pool_id !== pool.id || row.provisioning_status === 'DELETED') throw apiError('NOT_FOUND', 'Member', id);
  return row;
}

export async function renderMembers(db: Q, rows: MemberRow[]) {
  const rel = await memberRelations(db, rows.map((r) => r.id));
  return rows.map((r) => memberView(r, rel));
}

function settingsOf(row: MemberRow): MemberSettings {
  return { name: row.name, admin_state_up: row.admin_state_up === 1, weight: row.weight, backup: row.backup === 1, monitor_address: row.monitor_address, monitor_port: row.monitor_port };
}

function settingsColumns(s: MemberSettings) {
  return { name: s.name, admin_state_up: s.admin_state_up ? 1 : 0, weight: s.weight, backup: s.backup ? 1 : 0, monitor_address: s.monitor_address, monitor_port: s.monitor_port };
}

/** What a provider's member check sees: the API attributes after defaults or merge. */
function providerAttrs(row: MemberRow) {
  return { ...settingsOf(row), id: row.id, address: row.address, protocol_port: row.protocol_port, subnet_id: row.subnet_id, pool_id: row.pool_id, project_id: row.project_id, vnic_type: row.vnic_type };
}

/** SR-IOV member ports need the load balancer's flavor to say `allow_member_sriov: true`. */
async function flavorAllowsSriovMembers(trx: Trx, lbId: string): Promise<boolean> {
  const profile = await trx
    .selectFrom('load_balancer')
    .innerJoin('flavor', 'flavor.id', 'load_balancer.flavor_id')
    .innerJoin('flavor_profile', 'flavor_profile.id', 'flavor.flavor_profile_id')
    .select('flavor_profile.flavor_data')
    .where('load_balancer.id', '=', lbId)
    .executeTakeFirst();
  return !!profile && (JSON.parse(profile.flavor_data) as { allow_member_sriov?: unknown }).allow_member_sriov === true;
}

async function checkSubnet(deps: ApiDeps, trx: Trx, subnetId: string, projectId: string): Promise<void> {
  const subnet = await deps.network.subnet(trx, subnetId);
  const projects = subnet && deps.network.projectsOf(subnet.network_id);
  if (!projects || (projects.length > 0 && !projects.includes(projectId))) throw apiError('INVALID_SUBRESOURCE', 'Subnet', subnetId);
}

/**
 * Validates and writes a new member (PENDING_CREATE) of `pool` in the caller's transaction.
 * Locking, quota and the job are the caller's: endpoints, batch and graph create share this.
 */
export async function insertMember(deps: ApiDeps, trx: Trx, _ctx: RequestContext, pool: PoolRow, input: MemberInput, lb: LoadBalancerRow): Promise<MemberRow> {
  const addresses = memberAddressPolicy(deps.config);
  assertMemberAddressAllowed(input.address, 'address', addresses);
  if (input.monitor_address) assertMemberAddressAllowed(input.monitor_address, 'monitor_address', addresses);
  if (input.subnet_id) await checkSubnet(deps, trx, input.subnet_id, pool.project_id);
  if (input.request_sriov && !(await flavorAllowsSriovMembers(trx, pool.load_balancer_id)))
    throw apiError('BAD_REQUEST', 'The load balancer flavor does not allow SR-IOV member ports.');
  const taken = await trx.selectFrom('member').select('id').where('pool_id', '=', pool.id).where('address', '=', input.address).where('protocol_port', '=', input.protocol_port).executeTakeFirst();
  if (taken) throw apiError('DUPLICATE', `Another member on this pool is already using ip ${input.address} on protocol_port ${input.protocol_port}`);
  const monitored = await trx.selectFrom('health_monitor').select('id').where('pool_id', '=', pool.id).executeTakeFirst();
  const row: MemberRow = {
    id: randomUUID(),
    project_id: pool.project_id,
    pool_id: pool.id,
    ...settingsColumns(memberSettingsForCreate(input)),
    address: input.address,
    protocol_port: input.protocol_port,
    subnet_id: input.subnet_id ?? null,
    vnic_type: input.request_sriov ? 'direct' : 'normal',
    provisioning_status: 'PENDING_CREATE',
    operating_status: monitored ? 'OFFLINE' : 'NO_MONITOR',
    created_at: timestamp(),
    updated_at: null,
  };
  deps.providers.forLoadBalancer(lb.provider).checks.member?.(providerAttrs(row), { ...lb });
  await trx.insertInto('member').values(row).execute();
  await writeTags(trx, row.id, input.tags);
  return row;
}

/** Writes new settings over a stored member, marking it PENDING_UPDATE. */
async function rewriteMember(deps: ApiDeps, trx: Trx, lb: LoadBalancerRow, current: MemberRow, settings: MemberSettings, tags: string[] | undefined): Promise<MemberRow> {
  // Only a new monitor_address is judged: a member's address is immutable, and one stored before a rule changed stays updatable.
  if (settings.monitor_address && settings.monitor_address !== current.monitor_address)
    assertMemberAddressAllowed(settings.monitor_address, 'monitor_address', memberAddressPolicy(deps.config));
  const updated: MemberRow = { ...current, ...settingsColumns(settings), provisioning_status: 'PENDING_UPDATE', updated_at: timestamp() };
  deps.providers.forLoadBalancer(lb.provider).checks.member?.(providerAttrs(updated), { ...lb });
  await trx.updateTable('member').set(updated).where('id', '=', current.id).execute();
  await writeTags(trx, current.id, tags);
  return updated;
}

type BatchMember = Static<typeof MemberBatchBody>['members'][number];

/** The batch update of §3.4, inside the pool lock. */
async function applyBatch(deps: ApiDeps, trx: Trx, ctx: RequestContext, pool: PoolRow, wanted: BatchMember[], additiveOnly: boolean): Promise<void> {
  const lb = await parentLoadBalancer(trx, pool.load_balancer_id);
  const existing = await trx.selectFrom('member').selectAll().where('pool_id', '=', pool.id).execute();
  deps.providers.forLoadBalancer(lb.provider).checks.memberBatch?.(wanted);
  const plan = planMemberBatch(existing, wanted, additiveOnly);
  const growth = plan.create.length - plan.remove.length;
  if (growth > 0) await checkQuota(trx, deps.config, pool.project_id, { member: growth }, deps.db.dialect);
  // Listed members are re-declared: what the body omits takes POST's defaults.
  for (const { existing: current, wanted: w } of plan.update) await rewriteMember(deps, trx, lb, current, memberSettingsForCreate(w), w.tags);
  for (const w of plan.create) await insertMember(deps, trx, ctx, pool, w, lb);
  await markPending(trx, 'member', plan.remove.map((m) => m.id), 'PENDING_DELETE');
  await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'member.batch' });
}

export const memberRoutes = (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  const { db } = deps;
  type PoolParams = { Params: { pool_id: string } };
  type MemberParams = { Params: { pool_id: string; id: string } };

  app.get<PoolParams>('/pools/:pool_id/members', async (req) => {
    const pool = await poolOfPath(deps, req.params.pool_id);
    authorize(req.ctx, 'member', 'get_all', pool.project_id);
    const { items, links } = await listWithin(deps, req, memberList, { column: 'pool_id', id: pool.id }, (rows: MemberRow[]) => renderMembers(db.kysely, rows));
    return { members: items, members_links: links };
  });

  app.get<MemberParams>('/pools/:pool_id/members/:id', async (req) => {
    const pool = await poolOfPath(deps, req.params.pool_id);
    const row = await memberOf(deps, pool, req.params.id);
    authorize(req.ctx, 'member', 'get_one', pool.project_id);
    const [view] = await renderMembers(db.kysely, [row]);
    return { member: pickFields(view!, fieldsOf(req)) };
  });

  app.post<PoolParams>('/pools/:pool_id/members', { schema: { body: MemberCreateBody } }, async (req, reply) => {
    const pool = await poolOfPath(deps, req.params.pool_id);
    authorize(req.ctx, 'member', 'post', pool.project_id);
    const { project_id: _project, tenant_id: _tenant, ...input } = (req.body as Static<typeof MemberCreateBody>).member;
    const row = await change(deps, async (trx) => {
      await lockPoolForChildChange(trx, pool.id);
      await checkQuota(trx, deps.config, pool.project_id, { member: 1 }, db.dialect);
      const lb = await parentLoadBalancer(trx, pool.load_balancer_id);
      const created = await insertMember(deps, trx, req.ctx, pool, input, lb);
      await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'member.create' });
      return created;
    });
    const [view] = await renderMembers(db.kysely, [row]);
    return reply.code(201).send({ member: view });
  });

  app.put<PoolParams & { Querystring: { additive_only?: string } }>('/pools/:pool_id/members', { schema: { body: MemberBatchBody } }, async (req, reply) => {
    const pool = await poolOfPath(deps, req.params.pool_id);
    const additiveOnly = req.query.additive_only === undefined ? false : (decodeField(Type.Boolean(), req.query.additive_only, 'additive_only') as boolean);
    for (const action of additiveOnly ? (['post', 'put'] as const) : (['post', 'put', 'delete'] as const)) authorize(req.ctx, 'member', action, pool.project_id);
    const wanted = (req.body as Static<typeof MemberBatchBody>).members;
    await change(deps, async (trx) => {
      await lockPoolForChildChange(trx, pool.id);
      await applyBatch(deps, trx, req.ctx, pool, wanted, additiveOnly);
    });
    return reply.code(202).send();
  });

  app.put<MemberParams>('/pools/:pool_id/members/:id', { schema: { body: MemberUpdateBody } }, async (req) => {
    const pool = await poolOfPath(deps, req.params.pool_id);
    const row = await memberOf(deps, pool, req.params.id);
    authorize(req.ctx, 'member', 'put', pool.project_id);
    const b = (req.body as Static<typeof MemberUpdateBody>).member;
    // Rendered in the transaction: once committed, the worker may settle the change at once.
    const view = await change(deps, async (trx) => {
      await lockPoolForChildChange(trx, pool.id);
      const current = await trx.selectFrom('member').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow();
      const lb = await parentLoadBalancer(trx, pool.load_balancer_id);
      const updated = await rewriteMember(deps, trx, lb, current, memberSettingsForUpdate(settingsOf(current), b), b.tags);
      await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'member.update' });
      return (await renderMembers(trx, [updated]))[0];
    });
    return { member: view };
  });

  app.delete<MemberParams>('/pools/:pool_id/members/:id', async (req, reply) => {
    const pool = await poolOfPath(deps, req.params.pool_id);
    const row = await memberOf(deps, pool, req.params.id);
    authorize(req.ctx, 'member', 'delete', pool.project_id);
    await change(deps, async (trx) => {
      await lockPoolForChildChange(trx, pool.id);
      const lb = await parentLoadBalancer(trx, pool.load_balancer_id);
      await markPending(trx, 'member', [row.id], 'PENDING_DELETE');
      await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'member.delete' });
    });
    return reply.code(204).send();
  });
};

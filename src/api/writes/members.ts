/** Member writes: the insert pool, batch and graph creates share, and the locked create, update, batch and delete. */
import { randomUUID } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { ApiDeps } from '../context.js';
import type { Database } from '../../db/schema.js';
import { apiError } from '../../domain/errors.js';
import { timestamp } from '../../domain/time.js';
import type { Static } from '../../domain/schema-kit.js';
import type { MemberBatchBody, MemberSingleCreate, MemberUpdateBody } from '../../domain/schemas/member.js';
import {
  memberSettingsForCreate, memberSettingsForUpdate, planMemberBatch, type MemberSettings,
} from '../../domain/rules/member.js';
import { assertMemberAddressAllowed, memberAddressPolicy } from '../../domain/rules/member-address.js';
import { enqueue } from '../../controller/jobs.js';
import { renderMembers } from '../views/member.js';
import { memberCodec, type MemberRow } from '../../db/records/member.js';
import type { PoolRow } from '../../db/records/pool.js';
import { loadBalancerCodec, type LoadBalancerRow } from '../../db/records/load-balancer.js';
import { writeTags } from '../tags.js';
import { lockPoolForChildChange, markPending } from '../../db/lb-lock.js';
import { checkQuota } from '../quota.js';
import { parentLoadBalancer } from '../loaders.js';

type Trx = Transaction<Database>;
type MemberInput = Static<typeof MemberSingleCreate>;

function settingsOf(row: MemberRow): MemberSettings {
  const { name, admin_state_up, weight, backup, monitor_address, monitor_port } = memberCodec.decode(row);
  return { name, admin_state_up, weight, backup, monitor_address, monitor_port };
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
export async function insertMember(deps: ApiDeps, trx: Trx, pool: PoolRow, input: MemberInput, lb: LoadBalancerRow): Promise<MemberRow> {
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
    ...memberCodec.encode(memberSettingsForCreate(input)),
    address: input.address,
    protocol_port: input.protocol_port,
    subnet_id: input.subnet_id ?? null,
    vnic_type: input.request_sriov ? 'direct' : 'normal',
    provisioning_status: 'PENDING_CREATE',
    operating_status: monitored ? 'OFFLINE' : 'NO_MONITOR',
    created_at: timestamp(),
    updated_at: null,
  };
  deps.providers.forLoadBalancer(lb.provider).checks.member?.(memberCodec.decode(row), loadBalancerCodec.decode(lb));
  await trx.insertInto('member').values(row).execute();
  await writeTags(trx, row.id, input.tags);
  return row;
}

/** Writes new settings over a stored member, marking it PENDING_UPDATE. */
async function rewriteMember(deps: ApiDeps, trx: Trx, lb: LoadBalancerRow, current: MemberRow, settings: MemberSettings, tags: string[] | undefined): Promise<MemberRow> {
  // Only a new monitor_address is judged: a member's address is immutable, and one stored before a rule changed stays updatable.
  if (settings.monitor_address && settings.monitor_address !== current.monitor_address)
    assertMemberAddressAllowed(settings.monitor_address, 'monitor_address', memberAddressPolicy(deps.config));
  const updated: MemberRow = { ...current, ...memberCodec.encode(settings), provisioning_status: 'PENDING_UPDATE', updated_at: timestamp() };
  deps.providers.forLoadBalancer(lb.provider).checks.member?.(memberCodec.decode(updated), loadBalancerCodec.decode(lb));
  await trx.updateTable('member').set(updated).where('id', '=', current.id).execute();
  await writeTags(trx, current.id, tags);
  return updated;
}

type BatchMember = Static<typeof MemberBatchBody>['members'][number];

/** The batch update of §3.4, under the pool's lock. */
export async function applyMemberBatch(deps: ApiDeps, trx: Trx, pool: PoolRow, wanted: BatchMember[], additiveOnly: boolean): Promise<void> {
  await lockPoolForChildChange(trx, pool.id);
  const lb = await parentLoadBalancer(trx, pool.load_balancer_id);
  const existing = await trx.selectFrom('member').selectAll().where('pool_id', '=', pool.id).execute();
  deps.providers.forLoadBalancer(lb.provider).checks.memberBatch?.(wanted);
  const plan = planMemberBatch(existing, wanted, additiveOnly);
  const growth = plan.create.length - plan.remove.length;
  if (growth > 0) await checkQuota(trx, deps.config, pool.project_id, { member: growth }, deps.db.dialect);
  // Listed members are re-declared: what the body omits takes POST's defaults.
  for (const { existing: current, wanted: w } of plan.update) await rewriteMember(deps, trx, lb, current, memberSettingsForCreate(w), w.tags);
  for (const w of plan.create) await insertMember(deps, trx, pool, w, lb);
  await markPending(trx, 'member', plan.remove.map((m) => m.id), 'PENDING_DELETE');
  await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'member.batch' });
}

/** POST /pools/{pool_id}/members: the pool locked, the quota taken, the member written and its job enqueued. */
export async function createMember(deps: ApiDeps, trx: Trx, pool: PoolRow, input: MemberInput): Promise<MemberRow> {
  await lockPoolForChildChange(trx, pool.id);
  await checkQuota(trx, deps.config, pool.project_id, { member: 1 }, deps.db.dialect);
  const lb = await parentLoadBalancer(trx, pool.load_balancer_id);
  const created = await insertMember(deps, trx, pool, input, lb);
  await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'member.create' });
  return created;
}

/** Applies a PUT body to the member as stored now (read under the pool's lock); rendered in the transaction, as listeners are. */
export async function updateMember(deps: ApiDeps, trx: Trx, pool: PoolRow, row: MemberRow, b: Static<typeof MemberUpdateBody>['member']) {
  await lockPoolForChildChange(trx, pool.id);
  const current = await trx.selectFrom('member').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow();
  const lb = await parentLoadBalancer(trx, pool.load_balancer_id);
  const updated = await rewriteMember(deps, trx, lb, current, memberSettingsForUpdate(settingsOf(current), b), b.tags);
  await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'member.update' });
  return (await renderMembers(trx, [updated]))[0]!;
}

export async function deleteMember(trx: Trx, pool: PoolRow, row: MemberRow): Promise<void> {
  await lockPoolForChildChange(trx, pool.id);
  const lb = await parentLoadBalancer(trx, pool.load_balancer_id);
  await markPending(trx, 'member', [row.id], 'PENDING_DELETE');
  await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'member.delete' });
}

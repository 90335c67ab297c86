/** Listener writes: the insert the endpoint and graph create share, and the locked create, update and delete. */
import type { Transaction } from 'kysely';
import type { ApiDeps } from '../context.js';
import type { Database } from '../../db/schema.js';
import { apiError } from '../../domain/errors.js';
import { timestamp } from '../../domain/time.js';
import type { Static } from '../../domain/schema-kit.js';
import type { ListenerInput, ListenerUpdateBody } from '../../domain/schemas/listener.js';
import {
  assertPoolProtocolAllowed, assertPortFree, listenerSpecForCreate, listenerSpecForUpdate,
  type ListenerEnv,
} from '../../domain/rules/listener.js';
import { enqueue } from '../../controller/jobs.js';
import { listenerSpecOf } from '../views/listener.js';
import { listenerCodec, type ListenerRecord, type ListenerRow } from '../../db/records/listener.js';
import { loadBalancerCodec, type LoadBalancerRow } from '../../db/records/load-balancer.js';
import { writeTags } from '../tags.js';
import { lockForChildChange, markPending } from '../../db/lb-lock.js';
import { checkQuota } from '../quota.js';
import { parentLoadBalancer } from '../loaders.js';
import { namedUpdate, newLoadBalancerChild } from './named.js';
import { enqueueTlsUpdate, listenerUser } from './tls-consumers.js';
import { forCreate, listenerTlsRefs, namesAny, touchesListenerRefs, verifyTlsRefs } from '../tls-refs.js';
import type { Caller } from '../../keymanager/index.js';
import { checkHttp01Port } from '../../domain/rules/acme.js';
import { checkAcmeAvailable } from './acme-listeners.js';

type Trx = Transaction<Database>;
type CreateInput = Static<typeof ListenerInput>;
type UpdateInput = Static<typeof ListenerUpdateBody>['listener'];

function listenerEnv(deps: ApiDeps, row: LoadBalancerRow): ListenerEnv {
  const lb = loadBalancerCodec.decode(row);
  return {
    vipAddresses: [lb.vip_address, ...lb.additional_vips.map((v) => v.ip_address)].filter((a): a is string => !!a),
    hasVipSecurityGroups: lb.vip_sg_ids.length > 0,
    allowTerminatedHttps: deps.config.api.allowTerminatedHttps,
    allowPrometheus: deps.config.api.allowPrometheusListeners,
  };
}

/** A default pool must live on the listener's load balancer and speak a compatible protocol. */
async function checkDefaultPool(trx: Trx, lbId: string, poolId: string, listenerProtocol: string): Promise<void> {
  const pool = await trx.selectFrom('pool').select(['protocol', 'load_balancer_id']).where('id', '=', poolId).executeTakeFirst();
  if (!pool || pool.load_balancer_id !== lbId) throw apiError('NOT_FOUND', 'Pool', poolId);
  assertPoolProtocolAllowed(listenerProtocol, pool.protocol);
}

/**
 * The certificate references a new listener names, checked before its transaction. The
 * listener rules come first, as Octavia judges the references only once they are allowed at all.
 */
export async function verifyNewListenerRefs(deps: ApiDeps, caller: Caller, lb: LoadBalancerRow, input: CreateInput): Promise<void> {
  if (namesAny(listenerTlsRefs(input))) await verifyTlsRefs(deps.keyManager, caller, [forCreate(listenerTlsRefs(listenerSpecForCreate(input, listenerEnv(deps, lb))))]);
}

/** The references an update names, judged against the listener they would leave. */
export async function verifyListenerUpdateRefs(deps: ApiDeps, caller: Caller, row: ListenerRow, b: UpdateInput): Promise<void> {
  if (!touchesListenerRefs(b)) return;
  const lb = await parentLoadBalancer(deps.db.kysely, row.load_balancer_id);
  const result = listenerSpecForUpdate(listenerSpecOf(row), b, listenerEnv(deps, lb));
  await verifyTlsRefs(deps.keyManager, caller, [{ named: listenerTlsRefs(b), result: listenerTlsRefs(result) }]);
}

/**
 * Validates and writes a new listener (PENDING_CREATE) of `lb` in the caller's transaction.
 * Locking, quota and the job are the caller's: the endpoint and graph create share this.
 */
export async function insertListener(deps: ApiDeps, trx: Trx, lb: LoadBalancerRow, input: CreateInput, placeholderRef?: string): Promise<ListenerRow> {
  const spec = listenerSpecForCreate(input, listenerEnv(deps, lb));
  if (spec.acme_domains !== null) {
    // Only the listeners endpoint gives a managed certificate something to serve until it is issued.
    if (!placeholderRef) throw apiError('VALIDATION', 'acme_domains is set on a listener created on its own (POST /v2/lbaas/listeners), not inside a load balancer create.');
    spec.default_tls_container_ref = placeholderRef;
  }
  const siblings = (await trx.selectFrom('listener').select(['id', 'protocol', 'protocol_port', 'acme_domains']).where('load_balancer_id', '=', lb.id).execute()).map((r) => listenerCodec.decode(r));
  assertPortFree(spec, siblings);
  checkHttp01Port([...siblings, spec]);
  const defaultPoolId = input.default_pool_id ?? null;
  if (defaultPoolId) await checkDefaultPool(trx, lb.id, defaultPoolId, spec.protocol);
  const record: ListenerRecord = {
    ...newLoadBalancerChild(lb, input),
    default_pool_id: defaultPoolId,
    ...spec,
    status_reason: null,
  };
  deps.providers.forLoadBalancer(lb.provider).checks.listener?.(record);
  const row = listenerCodec.encode(record);
  await trx.insertInto('listener').values(row).execute();
  await writeTags(trx, row.id, input.tags);
  return row;
}

/** POST /listeners: the LB locked, the quota taken, the listener written and its job enqueued. */
export async function createListener(deps: ApiDeps, trx: Trx, lb: LoadBalancerRow, input: CreateInput, placeholderRef?: string): Promise<ListenerRow> {
  await lockForChildChange(trx, lb.id);
  await checkQuota(trx, deps.config, lb.project_id, { listener: 1 }, deps.db.dialect);
  const created = await insertListener(deps, trx, lb, input, placeholderRef);
  await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'listener.create' });
  return created;
}

/** Applies a PUT body to the listener as stored now (read under the LB lock) and enqueues the job. */
export async function updateListener(deps: ApiDeps, trx: Trx, row: ListenerRow, b: UpdateInput): Promise<ListenerRow> {
  const { id } = row;
  await lockForChildChange(trx, row.load_balancer_id);
  const current = await trx.selectFrom('listener').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const stored = listenerCodec.decode(current);
  const lb = await parentLoadBalancer(trx, current.load_balancer_id);
  const spec = listenerSpecForUpdate(listenerSpecOf(current), b, listenerEnv(deps, lb));
  if (b.acme_domains) {
    checkAcmeAvailable(deps, lb);
    const siblings = await trx.selectFrom('listener').select(['id', 'protocol', 'protocol_port', 'acme_domains']).where('load_balancer_id', '=', lb.id).where('id', '!=', id).execute();
    checkHttp01Port([...siblings.map((r) => listenerCodec.decode(r)), spec]);
  }
  if (b.default_pool_id) await checkDefaultPool(trx, lb.id, b.default_pool_id, spec.protocol);
  const record: ListenerRecord = {
    ...stored,
    ...spec,
    ...namedUpdate(stored, b),
    default_pool_id: b.default_pool_id === undefined ? current.default_pool_id : b.default_pool_id,
    provisioning_status: 'PENDING_UPDATE',
    status_reason: null,
    updated_at: timestamp(),
  };
  deps.providers.forLoadBalancer(lb.provider).checks.listener?.(record);
  const updated = listenerCodec.encode(record);
  await trx.updateTable('listener').set(updated).where('id', '=', id).execute();
  await writeTags(trx, id, b.tags);
  await enqueueTlsUpdate(trx, lb, listenerUser, b, current, updated);
  return updated;
}

export async function deleteListener(trx: Trx, row: ListenerRow): Promise<void> {
  await lockForChildChange(trx, row.load_balancer_id);
  const lb = await parentLoadBalancer(trx, row.load_balancer_id);
  await markPending(trx, 'listener', [row.id], 'PENDING_DELETE');
  await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: 'listener.delete' });
}

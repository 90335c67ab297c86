/**
 * Whole-tree status transitions of one load balancer. The LB is the lock: while any object
 * of its tree is PENDING_*, the API refuses further changes, so a finished job may settle
 * every pending object of the tree at once.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.js';
import { timestamp } from '../domain/time.js';
import { PendingStatuses } from '../domain/enums.js';
import { loadBalancerCodec, type LoadBalancerRecord } from './records/load-balancer.js';
import { listenerCodec, type ListenerRecord } from './records/listener.js';
import { poolCodec, type PoolRecord } from './records/pool.js';
import { memberCodec, type MemberRecord } from './records/member.js';
import { healthMonitorCodec, type HealthMonitorRecord } from './records/health-monitor.js';
import { deletePorts } from './free-addresses.js';

type Q = Kysely<Database> | Transaction<Database>;

/** Objects being deleted are no longer served: a data plane is built from the rest. */
export const BEING_REMOVED = 'PENDING_DELETE';

/** The rows a data plane serves for one load balancer (see servedTrees). */
export interface ServedTree {
  lb: LoadBalancerRecord & { vip_address: string };
  listeners: ListenerRecord[];
  pools: PoolRecord[];
  members: MemberRecord[];
  monitors: HealthMonitorRecord[];
}

/**
 * The rows a data plane serves for each of `lbIds` that has a VIP address (L4 and pools; L7 is
 * the amphora's own), leaving out what is being deleted, in a stable order: listeners by port,
 * pools and members by creation. Five queries however many load balancers are asked for.
 */
export async function servedTrees(db: Q, lbIds: readonly string[]): Promise<Map<string, ServedTree>> {
  const trees = new Map<string, ServedTree>();
  if (!lbIds.length) return trees;
  const ids = [...lbIds];
  const [lbs, listeners, pools, members, monitors] = await Promise.all([
    db.selectFrom('load_balancer').selectAll().where('id', 'in', ids).execute(),
    db.selectFrom('listener').selectAll().where('load_balancer_id', 'in', ids).where('provisioning_status', '!=', BEING_REMOVED).orderBy('protocol_port').orderBy('id').execute(),
    db.selectFrom('pool').selectAll().where('load_balancer_id', 'in', ids).where('provisioning_status', '!=', BEING_REMOVED).orderBy('created_at').orderBy('id').execute(),
    db
      .selectFrom('member')
      .innerJoin('pool', 'pool.id', 'member.pool_id')
      .selectAll('member')
      .select('pool.load_balancer_id as served_by')
      .where('pool.load_balancer_id', 'in', ids)
      .where('member.provisioning_status', '!=', BEING_REMOVED)
      .orderBy('member.created_at')
      .orderBy('member.id')
      .execute(),
    db
      .selectFrom('health_monitor')
      .innerJoin('pool', 'pool.id', 'health_monitor.pool_id')
      .selectAll('health_monitor')
      .select('pool.load_balancer_id as served_by')
      .where('pool.load_balancer_id', 'in', ids)
      .where('health_monitor.provisioning_status', '!=', BEING_REMOVED)
      .execute(),
  ]);
  for (const lb of lbs) {
    if (lb.vip_address) trees.set(lb.id, { lb: { ...loadBalancerCodec.decode(lb), vip_address: lb.vip_address }, listeners: [], pools: [], members: [], monitors: [] });
  }
  for (const l of listeners) trees.get(l.load_balancer_id)?.listeners.push(listenerCodec.decode(l));
  for (const p of pools) trees.get(p.load_balancer_id)?.pools.push(poolCodec.decode(p));
  for (const { served_by, ...m } of members) trees.get(served_by)?.members.push(memberCodec.decode(m));
  for (const { served_by, ...hm } of monitors) trees.get(served_by)?.monitors.push(healthMonitorCodec.decode(hm));
  return trees;
}

/** The rows a data plane serves for load balancer `lbId` (see servedTrees). */
export async function servedTree(db: Q, lbId: string): Promise<ServedTree> {
  const tree = (await servedTrees(db, [lbId])).get(lbId);
  if (tree) return tree;
  const lb = await db.selectFrom('load_balancer').select('id').where('id', '=', lbId).executeTakeFirst();
  throw new Error(lb ? `load balancer ${lbId} has no VIP address` : `load balancer ${lbId} does not exist`);
}

export interface TreeIds {
  listeners: string[];
  pools: string[];
  members: string[];
  healthMonitors: string[];
  l7policies: string[];
  l7rules: string[];
}

export async function treeIds(db: Q, lbId: string): Promise<TreeIds> {
  const listeners = (await db.selectFrom('listener').select('id').where('load_balancer_id', '=', lbId).execute()).map((r) => r.id);
  const pools = (await db.selectFrom('pool').select('id').where('load_balancer_id', '=', lbId).execute()).map((r) => r.id);
  const none = ['-'];
  const members = (await db.selectFrom('member').select('id').where('pool_id', 'in', pools.length ? pools : none).execute()).map((r) => r.id);
  const healthMonitors = (await db.selectFrom('health_monitor').select('id').where('pool_id', 'in', pools.length ? pools : none).execute()).map((r) => r.id);
  const l7policies = (await db.selectFrom('l7policy').select('id').where('listener_id', 'in', listeners.length ? listeners : none).execute()).map((r) => r.id);
  const l7rules = (await db.selectFrom('l7rule').select('id').where('l7policy_id', 'in', l7policies.length ? l7policies : none).execute()).map((r) => r.id);
  return { listeners, pools, members, healthMonitors, l7policies, l7rules };
}

const childTables = ['listener', 'pool', 'member', 'health_monitor', 'l7policy', 'l7rule'] as const;
export type ChildTable = (typeof childTables)[number];

function idsOf(ids: TreeIds, table: ChildTable): string[] {
  switch (table) {
    case 'listener': return ids.listeners;
    case 'pool': return ids.pools;
    case 'member': return ids.members;
    case 'health_monitor': return ids.healthMonitors;
    case 'l7policy': return ids.l7policies;
    case 'l7rule': return ids.l7rules;
  }
}

/** Removes rows and everything hanging off them (tags, descendants). */
async function removeRows(db: Q, table: ChildTable, ids: string[]): Promise<void> {
  if (!ids.length) return;
  switch (table) {
    case 'listener': {
      const policies = (await db.selectFrom('l7policy').select('id').where('listener_id', 'in', ids).execute()).map((r) => r.id);
      await removeRows(db, 'l7policy', policies);
      break;
    }
    case 'pool': {
      const members = (await db.selectFrom('member').select('id').where('pool_id', 'in', ids).execute()).map((r) => r.id);
      const hms = (await db.selectFrom('health_monitor').select('id').where('pool_id', 'in', ids).execute()).map((r) => r.id);
      await removeRows(db, 'member', members);
      await removeRows(db, 'health_monitor', hms);
      await db.updateTable('listener').set({ default_pool_id: null }).where('default_pool_id', 'in', ids).execute();
      break;
    }
    case 'l7policy': {
      const rules = (await db.selectFrom('l7rule').select('id').where('l7policy_id', 'in', ids).execute()).map((r) => r.id);
      await removeRows(db, 'l7rule', rules);
      const listeners = (await db.selectFrom('l7policy').select('listener_id').distinct().where('id', 'in', ids).execute()).map((r) => r.listener_id);
      await db.deleteFrom('l7policy').where('id', 'in', ids).execute();
      for (const listenerId of listeners) await renumberPolicies(db, listenerId);
      break;
    }
    default:
      break;
  }
  await db.deleteFrom(table).where('id', 'in', ids).execute();
  await db.deleteFrom('tag').where('resource_id', 'in', ids).execute();
}

/** Policy positions stay 1..n with no gap once a policy is gone, as Octavia keeps them. */
async function renumberPolicies(db: Q, listenerId: string): Promise<void> {
  const rows = await db.selectFrom('l7policy').select(['id', 'position']).where('listener_id', '=', listenerId).orderBy('position').orderBy('created_at').orderBy('id').execute();
  for (const [i, r] of rows.entries()) if (r.position !== i + 1) await db.updateTable('l7policy').set({ position: i + 1 }).where('id', '=', r.id).execute();
}

/** Deletes the load balancer, its whole tree, its tags and its VIP ports. */
export async function deleteLoadBalancerTree(db: Q, lbId: string): Promise<void> {
  const ids = await treeIds(db, lbId);
  await removeRows(db, 'listener', ids.listeners);
  await removeRows(db, 'pool', ids.pools);
  await deletePorts(db, (q) => q.where('device_id', '=', lbId));
  await db.deleteFrom('tag').where('resource_id', '=', lbId).execute();
  await db.deleteFrom('load_balancer').where('id', '=', lbId).execute();
}

/**
 * A job succeeded: PENDING_DELETE objects disappear, the other pending ones become ACTIVE.
 * Every row whose status the settle changes gets `updated_at`, as Octavia's SQLAlchemy
 * `onupdate` stamps any updated row (so a created object has one once it is ACTIVE).
 * Returns false when the load balancer itself was deleted.
 */
export async function settleSuccess(db: Q, lbId: string): Promise<boolean> {
  const lb = await db.selectFrom('load_balancer').select('provisioning_status').where('id', '=', lbId).executeTakeFirst();
  if (!lb) return false;
  if (lb.provisioning_status === 'PENDING_DELETE') {
    await deleteLoadBalancerTree(db, lbId);
    return false;
  }
  const ids = await treeIds(db, lbId);
  const now = timestamp();
  for (const table of childTables) {
    const all = idsOf(ids, table);
    if (!all.length) continue;
    const doomed = (await db.selectFrom(table).select('id').where('id', 'in', all).where('provisioning_status', '=', 'PENDING_DELETE').execute()).map((r) => r.id);
    await removeRows(db, table, doomed);
    await db.updateTable(table).set({ provisioning_status: 'ACTIVE', updated_at: now }).where('id', 'in', all).where('provisioning_status', 'in', ['PENDING_CREATE', 'PENDING_UPDATE']).execute();
  }
  await db.updateTable('load_balancer').set({ provisioning_status: 'ACTIVE', status_reason: null, updated_at: now }).where('id', '=', lbId).execute();
  return true;
}

/** A job failed after its reverts: every pending object of the tree and the LB go to ERROR (stamped as in settleSuccess). */
export async function settleFailure(db: Q, lbId: string, reason: string): Promise<void> {
  const ids = await treeIds(db, lbId);
  const now = timestamp();
  for (const table of childTables) {
    const all = idsOf(ids, table);
    if (!all.length) continue;
    await db.updateTable(table).set({ provisioning_status: 'ERROR', updated_at: now }).where('id', 'in', all).where('provisioning_status', 'in', PendingStatuses).execute();
  }
  await db.updateTable('load_balancer').set({ provisioning_status: 'ERROR', status_reason: reason, updated_at: now }).where('id', '=', lbId).execute();
}

/** How deep a table sits below the load balancer: a change marks the objects above it PENDING_UPDATE too. */
const depth: Record<ChildTable, number> = { listener: 1, pool: 2, l7policy: 2, member: 3, health_monitor: 3, l7rule: 3 };

export interface PendingObject {
  table: ChildTable;
  id: string;
  provisioning_status: string;
}

/**
 * The objects a job was asked to change, among the pending objects of its tree: every object
 * created or deleted, and an updated one unless something deeper is pending (a pool whose member
 * changed is PENDING_UPDATE only because of the member, and so are its listeners).
 */
export function changedObjects(pending: readonly PendingObject[]): PendingObject[] {
  const deepest = Math.max(0, ...pending.map((p) => depth[p.table]));
  return pending.filter((p) => p.provisioning_status !== 'PENDING_UPDATE' || depth[p.table] === deepest);
}

/** The pending objects of the tree, every table. */
export async function pendingObjects(db: Q, lbId: string): Promise<PendingObject[]> {
  const ids = await treeIds(db, lbId);
  const found: PendingObject[] = [];
  for (const table of childTables) {
    const all = idsOf(ids, table);
    if (!all.length) continue;
    const rows = await db.selectFrom(table).select(['id', 'provisioning_status']).where('id', 'in', all).where('provisioning_status', 'in', PendingStatuses).execute();
    found.push(...rows.map((r) => ({ table, id: r.id, provisioning_status: r.provisioning_status })));
  }
  return found;
}

/** Objects go to ERROR, stamped as in settleSuccess. */
export async function markError(db: Q, objects: readonly PendingObject[]): Promise<void> {
  const now = timestamp();
  for (const table of childTables) {
    const ids = objects.filter((o) => o.table === table).map((o) => o.id);
    if (ids.length) await db.updateTable(table).set({ provisioning_status: 'ERROR', updated_at: now }).where('id', 'in', ids).execute();
  }
}

/** Objects with no health of their own: ONLINE when enabled, OFFLINE when not. */
export async function setOnOffStatus(db: Q, table: ChildTable | 'load_balancer', ids: readonly string[]): Promise<void> {
  if (!ids.length) return;
  await db.updateTable(table).set({ operating_status: 'ONLINE' }).where('id', 'in', [...ids]).where('admin_state_up', '=', 1).execute();
  await db.updateTable(table).set({ operating_status: 'OFFLINE' }).where('id', 'in', [...ids]).where('admin_state_up', '=', 0).execute();
}

/** A load balancer's status tree (`GET …/status`), the one clients wait on. */
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { ServedCertificateRoles, daysToExpiry, expiryWarning } from '../../domain/certificate-expiry.js';
import { statsByListener } from './stats.js';

const none = ['-'];

/**
 * The tree of §6.1: pools appear under the listeners that use them, never on their own.
 * Ostia adds to each listener its statistics (`stats`, as `GET …/listeners/{id}/stats`), to a
 * listener that serves certificates the expiry of the first of them (`certificate`), why its
 * last certificate change was rolled back (`status_reason`), and the load balancer's own
 * `status_reason` (why it is in ERROR, or what a change it kept serving through refused).
 */
export async function statusTree(
  db: Kysely<Database>,
  lb: { id: string; name: string; operating_status: string; provisioning_status: string; status_reason: string | null },
  // An event stream sends the tree when a status changes; counters change all the time.
  { stats: withStats = true }: { stats?: boolean } = {},
) {
  const listeners = await db.selectFrom('listener').select(['id', 'name', 'operating_status', 'provisioning_status', 'default_pool_id', 'status_reason']).where('load_balancer_id', '=', lb.id).orderBy('created_at').orderBy('id').execute();
  const pools = await db.selectFrom('pool').select(['id', 'name', 'operating_status', 'provisioning_status']).where('load_balancer_id', '=', lb.id).execute();
  const poolIds = pools.length ? pools.map((p) => p.id) : none;
  const listenerIds = listeners.length ? listeners.map((l) => l.id) : none;
  const [monitors, members, policies, expiries, stats] = await Promise.all([
    db.selectFrom('health_monitor').select(['id', 'name', 'type', 'operating_status', 'provisioning_status', 'pool_id']).where('pool_id', 'in', poolIds).execute(),
    db.selectFrom('member').select(['id', 'name', 'operating_status', 'provisioning_status', 'address', 'protocol_port', 'pool_id']).where('pool_id', 'in', poolIds).orderBy('created_at').orderBy('id').execute(),
    db
      .selectFrom('l7policy')
      .select(['listener_id', 'redirect_pool_id'])
      .where('listener_id', 'in', listenerIds)
      .where('admin_state_up', '=', 1)
      .where('redirect_pool_id', 'is not', null)
      .where(({ exists, selectFrom }) => exists(selectFrom('l7rule').select('l7rule.id').whereRef('l7rule.l7policy_id', '=', 'l7policy.id')))
      .orderBy('position')
      .execute(),
    db
      .selectFrom('certificate_in_use')
      .select('object_id')
      .select((eb) => eb.fn.min('not_after').as('not_after'))
      .where('load_balancer_id', '=', lb.id)
      .where('object_kind', '=', 'listener')
      .where('role', 'in', [...ServedCertificateRoles])
      .groupBy('object_id')
      .execute(),
    withStats ? statsByListener(db, listeners.map((l) => l.id)) : undefined,
  ]);
  const now = new Date();
  const notAfter = new Map(expiries.map((e) => [e.object_id, e.not_after]));
  const certificate = (listenerId: string) => {
    const not_after = notAfter.get(listenerId);
    if (not_after === undefined) return undefined;
    const days = daysToExpiry(not_after, now);
    return { not_after, days_to_expiry: days, warning: expiryWarning(days) };
  };
  const poolTree = (id: string) => {
    const p = pools.find((x) => x.id === id);
    if (!p) return undefined;
    const hm = monitors.find((m) => m.pool_id === id);
    return {
      id: p.id,
      name: p.name,
      provisioning_status: p.provisioning_status,
      operating_status: p.operating_status,
      ...(hm ? { health_monitor: { id: hm.id, name: hm.name, type: hm.type, provisioning_status: hm.provisioning_status, operating_status: hm.operating_status } } : {}),
      members: members.filter((m) => m.pool_id === id).map((m) => ({ id: m.id, name: m.name, operating_status: m.operating_status, provisioning_status: m.provisioning_status, address: m.address, protocol_port: m.protocol_port })),
    };
  };
  return {
    loadbalancer: {
      id: lb.id,
      name: lb.name,
      operating_status: lb.operating_status,
      provisioning_status: lb.provisioning_status,
      ...(lb.status_reason !== null ? { status_reason: lb.status_reason } : {}),
      listeners: listeners.map((l) => {
        const ids = [l.default_pool_id, ...policies.filter((p) => p.listener_id === l.id).map((p) => p.redirect_pool_id)].filter((x): x is string => !!x);
        const served = certificate(l.id);
        return {
          id: l.id,
          name: l.name,
          operating_status: l.operating_status,
          provisioning_status: l.provisioning_status,
          ...(stats ? { stats: stats.get(l.id)! } : {}),
          ...(served ? { certificate: served } : {}),
          ...(l.status_reason !== null ? { status_reason: l.status_reason } : {}),
          pools: [...new Set(ids)].map(poolTree).filter((p) => p !== undefined),
        };
      }),
    },
  };
}

/**
 * What a write of a listener or pool owes the key manager: the objects are consumers of the
 * certificate references they use, and an update's job carries the references it replaces.
 * Listeners and pools do this alike; a `CertificateUser` holds what differs between them.
 */
import type { FastifyRequest } from 'fastify';
import type { Kysely, Transaction } from 'kysely';
import type { BaseLogger } from 'pino';
import type { ApiDeps } from '../context.js';
import type { Database } from '../../db/schema.js';
import { enqueue } from '../../controller/jobs.js';
import {
  consumerOf, listenerRefColumns, listenerRefsInUse, poolRefColumns, poolRefsInUse, syncConsumers, type TlsChange,
} from '../../certificate-use/consumers.js';
import type { Caller } from '../../keymanager/index.js';
import { change } from '../change.js';
import { tlsCaller, touchesListenerRefs, touchesPoolRefs } from '../tls-refs.js';
import type { LoadBalancerRow } from '../../db/records/load-balancer.js';
import { renderListeners } from '../views/listener.js';
import type { ListenerRow } from '../../db/records/listener.js';
import { renderPools } from '../views/pool.js';
import type { PoolRow } from '../../db/records/pool.js';

type Log = Pick<BaseLogger, 'warn'>;
type Q = Kysely<Database> | Transaction<Database>;

/** A listener or a pool, as its writes deal with the certificates it references. */
export interface CertificateUser<Row extends { id: string }, Body> {
  readonly kind: 'listener' | 'pool';
  /** Whether an update body sets or clears a reference: only then does it concern the key manager. */
  touches(body: Body): boolean;
  /** The references an update replaces, as its job carries them. */
  replaced(previous: Row, requested: Row): TlsChange;
  refsInUse(row: Row): string[];
  render(q: Q, rows: readonly Row[]): Promise<Array<Record<string, unknown>>>;
}

export const listenerUser: CertificateUser<ListenerRow, Parameters<typeof touchesListenerRefs>[0]> = {
  kind: 'listener', touches: touchesListenerRefs, refsInUse: listenerRefsInUse, render: renderListeners,
  replaced: (previous, requested) => ({ kind: 'listener', id: requested.id, previous: listenerRefColumns(previous), requested: listenerRefColumns(requested) }),
};

export const poolUser: CertificateUser<PoolRow, Parameters<typeof touchesPoolRefs>[0]> = {
  kind: 'pool', touches: touchesPoolRefs, refsInUse: poolRefsInUse, render: renderPools,
  replaced: (previous, requested) => ({ kind: 'pool', id: requested.id, previous: poolRefColumns(previous), requested: poolRefColumns(requested) }),
};

/**
 * The update job of a stored listener or pool. When the body named references, the job
 * carries what they replace: the job releases the old ones once the new ones serve, or
 * restores them (certificate-use/consumers.ts).
 */
export async function enqueueTlsUpdate<Row extends { id: string }, Body>(
  trx: Transaction<Database>, lb: Pick<LoadBalancerRow, 'id' | 'provider'>, user: CertificateUser<Row, Body>, body: Body, previous: Row, updated: Row,
): Promise<void> {
  const payload = user.touches(body) ? { tls_change: user.replaced(previous, updated) } : undefined;
  await enqueue(trx, { loadBalancerId: lb.id, provider: lb.provider, operation: `${user.kind}.update` as const, payload });
}

/**
 * After the transaction: the object becomes a consumer of the references it now uses. The
 * ones an update replaced stay registered until its job has ended.
 */
export async function registerRefs<Row extends { id: string }>(deps: Pick<ApiDeps, 'keyManager'>, log: Log, user: CertificateUser<Row, never>, row: Row): Promise<void> {
  await syncConsumers(deps.keyManager, log, consumerOf(user.kind, row.id), [], user.refsInUse(row));
}

/**
 * A create or update of a listener or pool, from the request to its answer: the references
 * the body names are verified before the transaction (the key manager is not asked while the
 * load balancer is locked), `write` runs in it and the object is rendered there as written
 * (once committed, the worker may settle the change at once); then, if the body named
 * references, the object is registered as their consumer.
 */
export async function changeCertificateUser<Row extends { id: string }>(
  deps: ApiDeps,
  req: FastifyRequest,
  user: CertificateUser<Row, never>,
  named: boolean,
  verify: (caller: Caller) => Promise<void>,
  write: (trx: Transaction<Database>) => Promise<Row>,
): Promise<Record<string, unknown>> {
  await verify(tlsCaller(req));
  const { row, view } = await change(deps, async (trx) => {
    const written = await write(trx);
    const [rendered] = await user.render(trx, [written]);
    return { row: written, view: rendered! };
  });
  if (named) await registerRefs(deps, req.log, user, row);
  return view;
}

/** The PUT of a listener or pool: as changeCertificateUser, registering consumers only when the body sets or clears a reference. */
export async function updateCertificateUser<Row extends { id: string }, Body>(
  deps: ApiDeps,
  req: FastifyRequest,
  user: CertificateUser<Row, Body>,
  row: Row,
  body: Body,
  verify: (deps: ApiDeps, caller: Caller, row: Row, body: Body) => Promise<void>,
  update: (deps: ApiDeps, trx: Transaction<Database>, row: Row, body: Body) => Promise<Row>,
): Promise<Record<string, unknown>> {
  return changeCertificateUser(deps, req, user, user.touches(body), (caller) => verify(deps, caller, row, body), (trx) => update(deps, trx, row, body));
}

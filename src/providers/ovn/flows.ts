/**
 * The OVN provider's flows. Nothing boots: every change of a load balancer is one Northbound
 * transaction that makes its rows what the tree says, then the statuses settle from what was
 * planned and what the probes say now — one step, so nothing is planned twice.
 *
 *   every operation but delete   sync-and-settle
 *   loadbalancer.delete          remove-northbound → settle
 *   loadbalancer.migrate to amphora   ../provider-moves.ts
 *
 * A flow that finds the Northbound connection down waits for the client to reconnect (the
 * lease kept alive meanwhile) and then writes the state as it is by then, so a change made while
 * the database was away is not lost. A worker that dies between the transaction and the settling
 * runs the step again: the transaction then finds nothing to change.
 */
import type { Flow } from '../../provider-contract/flow.js';
import { settleFailure } from '../../db/lb-tree.js';
import type { Operation, StepPayload } from '../../provider-contract/operations.js';
import { moveDeps, movingTo, ovnToAmphora, type MoveDeps } from '../provider-moves.js';
import { PROVIDER } from './capabilities.js';
import type { OvnDepsLoader } from './deps.js';
import { removeNorthbound, settleDeleted, syncAndSettle } from './steps.js';

export function ovnFlows(load: OvnDepsLoader, moves: MoveDeps = {}): (op: Operation, payload?: StepPayload) => Flow {
  const onFailure: Flow['onFailure'] = async (ctx, step, error) => {
    await settleFailure(ctx.db.kysely, ctx.loadBalancerId, `${step}: ${error.message}`);
  };
  const change: Flow = { steps: [syncAndSettle(load)], onFailure };
  const remove: Flow = { steps: [removeNorthbound(load), settleDeleted], onFailure };
  return (op, payload) => {
    const to = op === 'loadbalancer.migrate' ? movingTo(PROVIDER, payload) : undefined;
    if (to) return ovnToAmphora(load, moveDeps(moves, to).amphora!);
    return op === 'loadbalancer.delete' ? remove : change;
  };
}

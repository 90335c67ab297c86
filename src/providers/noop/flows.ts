/** Every noop operation is one step: settle the tree's statuses. */
import type { Flow } from '../../provider-contract/flow.js';
import { settleFailure } from '../../db/lb-tree.js';
import { settleStatuses } from './steps.js';

export const noopFlow: Flow = {
  steps: [settleStatuses],
  async onFailure(ctx, step, error) {
    await settleFailure(ctx.db.kysely, ctx.loadBalancerId, `${step}: ${error.message}`);
  },
};

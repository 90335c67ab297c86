/** Every noop operation is one step: settle the tree's statuses. */
import type { Flow } from '../../provider-contract/flow.js';
import { settleFailure } from '../../db/lb-tree.js';
import { settleWithoutDataPlane } from '../no-data-plane-statuses.js';

export const noopFlow: Flow = {
  steps: [
    {
      name: 'settle-statuses',
      async run(ctx) {
        await ctx.db.kysely.transaction().execute((trx) => settleWithoutDataPlane(trx, ctx.loadBalancerId));
      },
    },
  ],
  async onFailure(ctx, step, error) {
    await settleFailure(ctx.db.kysely, ctx.loadBalancerId, `${step}: ${error.message}`);
  },
};

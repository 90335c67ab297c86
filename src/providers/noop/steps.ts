/** The noop provider's one step: with no data plane to wait for, the tree's statuses settle at once. */
import type { Step } from '../../provider-contract/flow.js';
import { settleWithoutDataPlane } from '../no-data-plane-statuses.js';
import { recordMigration } from '../migration-record.js';

export const settleStatuses: Step = {
  name: 'settle-statuses',
  async run(ctx) {
    await ctx.db.kysely.transaction().execute(async (trx) => {
      await recordMigration(trx, ctx);
      await settleWithoutDataPlane(trx, ctx.loadBalancerId);
    });
  },
};

/**
 * What the key manager is told around a job, whichever provider runs it: the API registered
 * each listener and pool as a consumer of the certificates it references, so once a job has
 * ended, done or failed, the objects it removed and the references it replaced stop being
 * consumers (a failed job removed nothing, and what it replaced may still be in its rows), and
 * the load balancer's certificates in use are recorded as they now stand.
 *
 * Every provider runs it: noop takes every TLS option the API takes, and OVN, which refuses TLS
 * listeners, still stores the references of a pool.
 */
import type { KeyManager } from '../keymanager/index.js';
import { pendingReleases, releaseRemoved, releaseReplaced } from '../certificate-use/consumers.js';
import { recordAfterJob } from '../certificate-use/in-use.js';
import type { JobHook } from '../provider-contract/provider.js';

export function certificateBookkeeping(keyManager: KeyManager): JobHook {
  return {
    async begin(ctx) {
      // Taken before the job runs: afterwards the rows it removed are gone.
      const releases = await pendingReleases(ctx.db, ctx.loadBalancerId);
      return async () => {
        await releaseRemoved(keyManager, ctx.db, ctx.log, releases);
        await releaseReplaced(keyManager, ctx.db, ctx.log, ctx.payload.tls_change ?? null);
        await recordAfterJob(keyManager, ctx.db, ctx.loadBalancerId, ctx.log);
      };
    },
  };
}

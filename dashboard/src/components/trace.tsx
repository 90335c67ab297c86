/**
 * A load balancer's provisioning trace (the Ostia extension `GET /v2/lbaas/loadbalancers/{id}/trace`,
 * the same as `ostia trace`): its jobs' steps as timelines, and the load balancer's status_reason.
 * One live request: a job under way grows while it is watched.
 */
import { get, lbaas } from '../api.js';
import { useLive } from '../live.js';
import { Notice } from './notice.js';
import { jobsOfTrace, Timeline, type TraceEntry } from './timeline.js';

/** Jobs shown at once; the earlier ones (every change of a long-lived load balancer) fold away. */
const RECENT_JOBS = 3;

interface TraceBody {
  trace: TraceEntry[];
  status_reason: string | null;
}

export function ProvisioningTrace({ loadBalancerId }: { loadBalancerId: string }) {
  const live = useLive((signal) => get<TraceBody>(lbaas(`loadbalancers/${loadBalancerId}/trace`), signal), [loadBalancerId]);
  const body = live.data;
  const jobs = body ? jobsOfTrace(body.trace) : [];
  const earlier = jobs.slice(0, -RECENT_JOBS);
  const failedEarlier = earlier.filter((j) => j.steps.some((s) => s.error !== null)).length;
  return (
    <div>
      <Notice>{live.error?.message}</Notice>
      {body?.status_reason ? <Notice kind="warning">Status reason: {body.status_reason}</Notice> : null}
      {body === undefined ? <p class="muted">Loading…</p> : null}
      {earlier.length ? (
        <details>
          <summary>
            {earlier.length} earlier job{earlier.length === 1 ? '' : 's'}
            {failedEarlier ? `, ${failedEarlier} with a failed step` : ''}
          </summary>
          <Timeline jobs={earlier} />
        </details>
      ) : null}
      {body ? <Timeline jobs={jobs.slice(-RECENT_JOBS)} empty="No job has run a step for this load balancer." /> : null}
    </div>
  );
}

/**
 * The failover history (admin; the Ostia extension `GET /v2/ostia/failovers`), newest first: when,
 * which load balancer and amphora, whether the health manager or a request started it, how it
 * ended and why it ran, and its steps as a timeline. One request per refresh; `?lb=<id>` narrows
 * it to one load balancer on the API's side.
 */
import { useMemo } from 'preact/hooks';
import { get, ostia } from '../api.js';
import { useLive } from '../live.js';
import { href, route } from '../router.js';
import { isAdmin, session } from '../session.js';
import { Status } from '../components/status.js';
import { Notice } from '../components/notice.js';
import { Timeline, type TimelineStep } from '../components/timeline.js';
import { FilterSearch, FilterSelect, matchesSearch } from '../components/filters.js';
import { ago, duration, parseTime, when } from '../format.js';
import { JobState } from '../../../src/domain/enums.js';

/** One failover job as the API serves it (src/api/views/failovers.ts). */
interface Failover {
  job_id: string;
  load_balancer_id: string;
  /** null: a load balancer failover (each of its amphorae). */
  amphora_id: string | null;
  automatic: boolean;
  state: string;
  reason: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  error: string | null;
  steps: TimelineStep[];
}

const TRIGGERS = { automatic: 'automatically, by the health manager', requested: 'on request, through the API' } as const;
/** Those worth a look open at once: the newest few and every failed one. */
const OPEN_NEWEST = 3;

function took(f: Failover): string {
  const start = parseTime(f.started_at);
  if (!start) return 'not started (queued)';
  const end = parseTime(f.finished_at);
  return end ? duration(end.getTime() - start.getTime()) : `running for ${duration(Date.now() - start.getTime())}`;
}

function FailoverCard({ f, open }: { f: Failover; open: boolean }) {
  const headingId = `failover-${f.job_id}`;
  return (
    <article class="card failover" aria-labelledby={headingId}>
      <h2 id={headingId} class="failover-title">
        <Status value={f.state} /> {f.amphora_id ? 'Amphora' : 'Load balancer'} failover, {ago(f.created_at)}
      </h2>
      <dl class="facts">
        <dt>Queued</dt>
        <dd>{when(f.created_at)}</dd>
        <dt>Load balancer</dt>
        <dd>
          <a href={href(`/loadbalancers/${f.load_balancer_id}`)}>{f.load_balancer_id}</a>
        </dd>
        <dt>Amphora</dt>
        <dd>{f.amphora_id ? <code>{f.amphora_id}</code> : <span class="muted">each of the load balancer's</span>}</dd>
        <dt>Triggered</dt>
        <dd>{f.automatic ? TRIGGERS.automatic : TRIGGERS.requested}</dd>
        <dt>Reason</dt>
        <dd>{f.reason}</dd>
        <dt>Duration</dt>
        <dd>{took(f)}</dd>
        {f.error ? (
          <>
            <dt>Error</dt>
            <dd class="reason-error">{f.error}</dd>
          </>
        ) : null}
      </dl>
      <details open={open}>
        <summary>Steps ({f.steps.length})</summary>
        <Timeline jobs={[{ id: f.job_id, title: `${f.amphora_id ? 'amphora' : 'loadbalancer'}.failover`, steps: f.steps }]} empty="No step has run yet." />
      </details>
    </article>
  );
}

function FailoverList() {
  const q = route.value.query;
  const lb = q.get('lb') ?? '';
  const search = q.get('q') ?? '';
  const live = useLive((signal) => get<{ failovers: Failover[] }>(ostia(`failovers${lb ? `?loadbalancer_id=${encodeURIComponent(lb)}` : ''}`), signal), [lb]);
  const all = live.data?.failovers ?? [];
  const rows = useMemo(() => {
    const state = q.get('state');
    const trigger = q.get('trigger');
    return all.filter(
      (f) =>
        (!state || f.state === state) &&
        (!trigger || (trigger === 'automatic') === f.automatic) &&
        matchesSearch(search, [f.load_balancer_id, f.amphora_id, f.reason, f.error]),
    );
  }, [all, q.toString()]);
  return (
    <>
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <FilterSearch placeholder="load balancer, amphora, reason" />
        <FilterSelect name="state" label="State" options={JobState} />
        <FilterSelect name="trigger" label="Triggered" options={Object.entries(TRIGGERS)} any="either way" />
      </form>
      {lb ? (
        <Notice kind="info">
          Failovers of load balancer <code>{lb}</code> only. <a href={href('/failovers')}>Show all</a>
        </Notice>
      ) : null}
      <Notice>{live.error?.message}</Notice>
      <p class="muted count" aria-live="polite">
        {live.data === undefined ? 'Loading…' : `${rows.length} of ${all.length} failovers, newest first`}
      </p>
      {live.data !== undefined && !rows.length ? <p class="empty-note">{all.length ? 'No failover matches.' : 'No failover has run.'}</p> : null}
      <div class="failovers">
        {rows.map((f, i) => (
          <FailoverCard key={f.job_id} f={f} open={i < OPEN_NEWEST || f.state === 'failed'} />
        ))}
      </div>
    </>
  );
}

export function Failovers() {
  return (
    <section>
      <h1>Failovers</h1>
      {isAdmin.value ? (
        <FailoverList />
      ) : (
        <Notice kind="warning">The API's policy does not let {session.value?.user.name} read failovers in project {session.value?.project.name}: only administrators do.</Notice>
      )}
    </section>
  );
}

/**
 * Steps of jobs as horizontal bars: each job on its own time axis (jobs may be days apart), each
 * step placed by when it started and as long as it took, its name, duration and error as text.
 * The provisioning trace of a load balancer and the failover history draw their steps with it.
 */
import type { ComponentChildren } from 'preact';
import { duration, parseTime, when } from '../format.js';

/** One step as the provisioning trace and the failover history serve it (src/controller/trace.ts). */
export interface TimelineStep {
  step: string;
  started_at: string;
  /** null: still running, or its worker stopped before it ended (the job resumes it). */
  finished_at: string | null;
  duration_ms: number | null;
  error: string | null;
}

export interface TimelineJob {
  id: string;
  title: ComponentChildren;
  steps: TimelineStep[];
}

/** A trace entry: a step and the job (operation) it ran in. */
export interface TraceEntry extends TimelineStep {
  job_id: string;
  operation: string;
}

/** The trace's steps grouped by job, in the order the jobs started, each titled by its operation. */
export function jobsOfTrace(trace: readonly TraceEntry[]): TimelineJob[] {
  const jobs = new Map<string, TimelineJob>();
  for (const entry of trace) {
    let job = jobs.get(entry.job_id);
    if (!job) jobs.set(entry.job_id, (job = { id: entry.job_id, title: entry.operation, steps: [] }));
    job.steps.push(entry);
  }
  return [...jobs.values()];
}

const ms = (t: string | null) => parseTime(t)?.getTime() ?? null;

/** Where each bar sits on its job's axis, in percent; a step without an end is a marker at its start. */
function layout(steps: readonly TimelineStep[]) {
  const starts = steps.map((s) => ms(s.started_at)!);
  const ends = steps.map((s, i) => ms(s.finished_at) ?? (s.duration_ms === null ? starts[i]! : starts[i]! + s.duration_ms));
  const t0 = Math.min(...starts);
  const span = Math.max(Math.max(...ends) - t0, 1);
  return {
    t0,
    span,
    bars: steps.map((_, i) => ({ offset: starts[i]! - t0, left: ((starts[i]! - t0) / span) * 100, width: ((ends[i]! - starts[i]!) / span) * 100 })),
  };
}

function JobTimeline({ job }: { job: TimelineJob }) {
  if (!job.steps.length) return <p class="muted">No step has run yet.</p>;
  const { t0, span, bars } = layout(job.steps);
  const failed = job.steps.some((s) => s.error !== null);
  return (
    <figure class={`timeline${failed ? ' timeline-failed' : ''}`}>
      <figcaption>
        <strong>{job.title}</strong>{' '}
        <span class="muted">
          started {when(new Date(t0).toISOString())}, {duration(span)} from the first step's start to the last one's end
        </span>
      </figcaption>
      <ol class="timeline-steps">
        {job.steps.map((s, i) => {
          const bar = bars[i]!;
          const open = s.finished_at === null && s.duration_ms === null;
          return (
            <li key={`${s.step}-${s.started_at}`} class={`timeline-step${s.error !== null ? ' timeline-step-error' : ''}`}>
              <span class="timeline-name">{s.step}</span>
              <span class="timeline-track" aria-hidden="true">
                <span class={`timeline-bar${open ? ' timeline-bar-open' : ''}`} style={{ left: `${bar.left}%`, width: `${bar.width}%` }} />
              </span>
              <span class="timeline-duration">
                {open ? 'no end yet' : duration(s.duration_ms ?? bar.width * span / 100)}
                <small class="muted"> {bar.offset ? `at +${duration(bar.offset)}` : 'at start'}</small>
              </span>
              {s.error !== null ? <p class="timeline-error">{s.error}</p> : null}
            </li>
          );
        })}
      </ol>
    </figure>
  );
}

export function Timeline({ jobs, empty = 'No step recorded.' }: { jobs: readonly TimelineJob[]; empty?: string }) {
  if (!jobs.length) return <p class="muted">{empty}</p>;
  return (
    <div class="timelines">
      {jobs.map((j) => (
        <JobTimeline key={j.id} job={j} />
      ))}
    </div>
  );
}

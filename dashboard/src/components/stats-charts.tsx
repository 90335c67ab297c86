/**
 * Listener statistics as they change: the counters each status-tree response carries, kept for
 * the last WINDOW responses per listener, charted as rates (bytes/s, new connections/s, request
 * errors/s, from the counters' deltas) and as the active connections, beside the totals in figures.
 */
import { useRef } from 'preact/hooks';
import type { ListenerStats, ListenerStatus } from '../types.js';
import { bytes } from '../format.js';
import { Chart, type ChartOption } from './chart.js';
import { Table, type Column } from './table.js';

/** Responses kept per listener: a minute and a half or more at the live refresh pace. */
export const WINDOW = 120;

/**
 * A rate is the delta over at least this long: the counters move when an amphora's heartbeat
 * lands, not at every response, so a delta between two consecutive responses is often zero.
 */
export const RATE_SPAN_MS = 10_000;

interface Sample extends ListenerStats {
  t: number;
}

type History = Map<string, Sample[]>;

/** The window of samples per listener, grown by each new response (`at` tells one from a re-render). */
export function useStatsHistory(listeners: ListenerStatus[] | undefined, at: Date | null): History {
  const history = useRef<History>(new Map());
  const seen = useRef(0);
  if (listeners && at && at.getTime() !== seen.current) {
    seen.current = at.getTime();
    const next: History = new Map();
    for (const l of listeners) {
      if (l.stats) next.set(l.id, [...(history.current.get(l.id) ?? []), { t: seen.current, ...l.stats }].slice(-WINDOW));
    }
    history.current = next;
  }
  return history.current;
}

type Counter = 'bytes_in' | 'bytes_out' | 'total_connections' | 'request_errors';

/** Per second over the last RATE_SPAN_MS (less at first); a counter that went down (an amphora replaced) leaves a gap and starts over. */
function rates(samples: Sample[], counter: Counter): Array<[number, number | null]> {
  const out: Array<[number, number | null]> = [];
  let base = 0;
  for (let i = 1; i < samples.length; i++) {
    const s = samples[i]!;
    if (s[counter] < samples[i - 1]![counter]) {
      base = i;
      out.push([s.t, null]);
      continue;
    }
    while (base + 1 < i && samples[base + 1]!.t <= s.t - RATE_SPAN_MS) base++;
    const from = samples[base]!;
    out.push([s.t, s.t > from.t ? ((s[counter] - from[counter]) * 1000) / (s.t - from.t) : null]);
  }
  return out;
}

const latestRate = (samples: Sample[], counter: Counter) => rates(samples, counter).at(-1)?.[1] ?? null;

const perSecond = (n: number | null, unit: (v: number) => string) => (n === null ? '—' : `${unit(n)}/s`);
const count = (n: number) => (Number.isInteger(n) ? n.toLocaleString() : n.toFixed(1));

interface Series {
  name: string;
  data: Array<[number, number | null]>;
}

function lineChart(series: Series[], axis: (v: number) => string, integers: boolean): ChartOption {
  return {
    animation: false,
    grid: { left: 8, right: 28, top: 36, bottom: 8, containLabel: true },
    tooltip: { trigger: 'axis', valueFormatter: (v: unknown) => (typeof v === 'number' ? axis(v) : '—') },
    legend: { top: 0, left: 0, type: 'scroll' },
    xAxis: { type: 'time', axisLabel: { hideOverlap: true } },
    yAxis: { type: 'value', minInterval: integers ? 1 : 0, axisLabel: { formatter: (v: number) => axis(v) } },
    series: series.map((s) => ({ type: 'line', name: s.name, data: s.data, showSymbol: false, connectNulls: false })),
  };
}

export function StatsCharts({ listeners, history }: { listeners: ListenerStatus[]; history: History }) {
  const shown = listeners.filter((l) => history.has(l.id));
  if (!shown.length) return null;
  const label = (l: ListenerStatus) => l.name || l.id.slice(0, 8);
  const samples = (l: ListenerStatus) => history.get(l.id)!;
  const each = (f: (l: ListenerStatus) => Series[]) => shown.flatMap(f);
  const charts: Array<{ title: string; option: ChartOption }> = [
    {
      title: 'Traffic (bytes/s)',
      option: lineChart(
        each((l) => [
          { name: `${label(l)} in`, data: rates(samples(l), 'bytes_in') },
          { name: `${label(l)} out`, data: rates(samples(l), 'bytes_out') },
        ]),
        (v) => `${bytes(Math.round(v))}/s`,
        true,
      ),
    },
    { title: 'Active connections', option: lineChart(each((l) => [{ name: label(l), data: samples(l).map((s) => [s.t, s.active_connections]) }]), count, true) },
    { title: 'New connections/s', option: lineChart(each((l) => [{ name: label(l), data: rates(samples(l), 'total_connections') }]), count, false) },
    { title: 'Request errors/s', option: lineChart(each((l) => [{ name: label(l), data: rates(samples(l), 'request_errors') }]), count, false) },
  ];
  const now = (l: ListenerStatus) => samples(l).at(-1)!;
  const columns: Column<ListenerStatus>[] = [
    { key: 'listener', label: 'Listener', render: label },
    { key: 'in', label: 'Bytes in', render: (l) => bytes(now(l).bytes_in) },
    { key: 'out', label: 'Bytes out', render: (l) => bytes(now(l).bytes_out) },
    { key: 'active', label: 'Active connections', render: (l) => now(l).active_connections.toLocaleString() },
    { key: 'total', label: 'Total connections', render: (l) => now(l).total_connections.toLocaleString() },
    { key: 'errors', label: 'Request errors', render: (l) => now(l).request_errors.toLocaleString() },
    { key: 'rate', label: 'In / out now', render: (l) => `${perSecond(latestRate(samples(l), 'bytes_in'), (v) => bytes(Math.round(v)))} / ${perSecond(latestRate(samples(l), 'bytes_out'), (v) => bytes(Math.round(v)))}`, wide: true },
    { key: 'cps', label: 'Connections now', render: (l) => perSecond(latestRate(samples(l), 'total_connections'), count), wide: true },
  ];
  // A chart keeps series it was given once: a new set of listeners draws it afresh.
  const key = shown.map((l) => l.id).join();
  return (
    <>
      <Table columns={columns} rows={shown} rowKey={(l) => l.id} empty="" caption="Listener statistics" />
      <div class="stats-charts">
        {charts.map((c) => (
          <figure class="card stats-chart" key={`${c.title}/${key}`}>
            <figcaption>{c.title}</figcaption>
            <Chart option={c.option} height={200} label={`${c.title} per listener, last ${WINDOW} samples`} />
          </figure>
        ))}
      </div>
      <p class="muted count">
        Rates per second over the last {RATE_SPAN_MS / 1000} s; charts of the last {WINDOW} updates.
      </p>
    </>
  );
}

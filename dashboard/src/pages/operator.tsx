/**
 * The operator tools on the live service (admin): the capacity plan of today's load balancers
 * (`GET /v2/ostia/plan`, the JSON of `ostia plan --from-live --json`) and the OVN provider advice
 * (`GET /v2/ostia/advice`, that of `ostia advise --from-live --json`). Each is one request, repeated
 * slowly: both read every load balancer, and the plan measures this machine.
 */
import { useMemo } from 'preact/hooks';
import type { ComponentChildren } from 'preact';
import { get, ostia } from '../api.js';
import { useLive, type Live } from '../live.js';
import { href } from '../router.js';
import { can, session } from '../session.js';
import { Chart, type ChartOption } from '../components/chart.js';
import { Notice } from '../components/notice.js';
import { Table, type Column } from '../components/table.js';
import { when } from '../format.js';
import { format as figure, type VerdictKind } from '../../../src/tools/plan/capacity.js';
import type { MeasuredTime, PlanResult } from '../../../src/tools/plan/result.js';
import type { LiveAdvice, LiveSummary } from '../../../src/tools/advise/summary.js';

/** Between two readings of the plan or the advice: they change as load balancers come and go, not by the second. */
const TOOL_PAUSE_MS = 15_000;

type PlanClass = PlanResult['classes'][number];
type PlanResource = PlanResult['resources'][number];

/** A verdict as a badge: its words, and the colour of the status it is like. */
function Badge({ tone, children }: { tone: 'active' | 'pending' | 'error' | 'no-monitor' | 'unknown'; children: ComponentChildren }) {
  return <span class={`status status-${tone}`}>{children}</span>;
}

const PLAN_VERDICTS: Record<VerdictKind, { words: string; tone: 'active' | 'pending' | 'error' | 'unknown' }> = {
  fits: { words: 'fits', tone: 'active' },
  'fits-without-failover-headroom': { words: 'fits only without failover headroom', tone: 'pending' },
  exceeds: { words: 'does not fit', tone: 'error' },
  'no-limit': { words: 'no limit', tone: 'unknown' },
};

const ADVICE_VERDICTS: Record<LiveAdvice['verdict'], { words: string; tone: 'active' | 'pending' | 'no-monitor' | 'unknown' }> = {
  'fits-ovn': { words: 'fits OVN', tone: 'active' },
  'needs-amphora': { words: 'needs amphora', tone: 'pending' },
  'on-ovn': { words: 'on OVN already', tone: 'no-monitor' },
  'no-data-plane': { words: 'no amphora', tone: 'unknown' },
};

/** What went wrong reaching a tool, in the API's words, and that the command line says the same. */
function ToolError({ live, path, command }: { live: Live<unknown>; path: string; command: string }) {
  const e = live.error;
  if (!e) return null;
  const what = e.status === 404 ? `This API does not serve GET ${path} (404: ${e.message}).` : `GET ${path} answered ${e.status ? `${e.status}: ` : ''}${e.message}`;
  return (
    <Notice>
      {what} <code>{command}</code> on the command line reads the same from the database.
    </Notice>
  );
}

const measured = (m: MeasuredTime | null) => (m ? `${figure(m.medianSeconds)} s (${m.count} job${m.count === 1 ? '' : 's'})` : 'not measured yet');

/** Share of a resource's capacity in percent, as the CLI's picture draws it. */
const share = (value: number, capacity: number) => (capacity > 0 ? (Math.max(0, value) / capacity) * 100 : 0);
const narrow = () => window.innerWidth < 700;

/** Others grey, the classes in turn, the failover headroom amber and what is left pale green, as the CLI's picture. */
const CLASS_COLOURS = ['#1f5fbf', '#6b3fa0', '#0f7c8c', '#8c3d5a', '#4d7a1f'];

function usageChart(plan: PlanResult): ChartOption {
  const stack = (name: string, color: string, pick: (r: PlanResource) => number) => ({ name, type: 'bar', stack: 'use', itemStyle: { color }, data: plan.resources.map((r) => Math.round(share(pick(r), r.capacity) * 10) / 10) });
  return {
    tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' }, valueFormatter: (v: number) => `${figure(v)}%` },
    legend: { bottom: 0, type: 'scroll' },
    grid: { left: 8, right: 24, top: 8, bottom: 40, containLabel: true },
    xAxis: { type: 'value', max: 100, axisLabel: { formatter: '{value}%' } },
    yAxis: { type: 'category', inverse: true, data: plan.resources.map((r) => r.label), axisLabel: { width: narrow() ? 110 : 300, overflow: 'break', lineHeight: 14 } },
    series: [
      stack('in use by others', '#8a949e', (r) => r.other),
      ...plan.classes.map((c, i) => stack(c.name, CLASS_COLOURS[i % CLASS_COLOURS.length]!, (r) => r.byClass[i]!)),
      stack('failover headroom', '#d98c00', (r) => r.failover),
      stack('free', '#bfe3c9', (r) => r.free),
    ],
  };
}

function holdsChart(plan: PlanResult, limiting: PlanResource[]): ChartOption {
  return {
    tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' } },
    grid: { left: 8, right: 48, top: 8, bottom: 8, containLabel: true },
    xAxis: { type: 'value' },
    yAxis: { type: 'category', inverse: true, data: limiting.map((r) => r.label), axisLabel: { width: narrow() ? 110 : 300, overflow: 'break', lineHeight: 14 } },
    series: [
      {
        name: 'load balancers of the mix it holds',
        type: 'bar',
        label: { show: true, position: 'right' },
        data: limiting.map((r) => ({ value: r.holds, itemStyle: { color: r.label === plan.verdict.firstLimit ? '#b3261e' : '#1f5fbf' } })),
      },
    ],
  };
}

function ClassTable({ plan }: { plan: PlanResult }) {
  const num = (key: string, label: string, pick: (c: PlanClass) => number, wide = false): Column<PlanClass> => ({ key, label, sort: pick, render: (c) => figure(pick(c)), wide });
  const columns: Column<PlanClass>[] = [
    { key: 'name', label: 'Class', sort: (c) => c.name, render: (c) => <span title={`VIP subnet ${c.vip_subnet}${c.project_id ? `, project ${c.project_id}` : ''}`}>{c.name}</span> },
    { key: 'provider', label: 'Provider', sort: (c) => c.provider, render: (c) => `${c.provider}${c.topology ? ` ${c.topology}` : ''}${c.flavor ? ` (${c.flavor})` : ''}` },
    num('count', 'Count', (c) => c.count),
    num('listeners', 'Listeners', (c) => c.listeners, true),
    num('amphorae', 'Amphorae', (c) => c.total.amphorae),
    num('vip', 'VIP addr', (c) => c.total.vipAddresses, true),
    num('mgmt', 'Mgmt addr', (c) => c.total.managementAddresses, true),
    num('vcpu', 'vCPU', (c) => c.total.vcpus, true),
    num('ram', 'RAM MiB', (c) => c.total.ramMiB, true),
    num('disk', 'Disk GiB', (c) => c.total.diskGiB, true),
    { key: 'max', label: 'Max count', sort: (c) => c.max_count ?? Infinity, render: (c) => (c.max_count === null ? 'no limit' : figure(c.max_count)) },
    { key: 'limited', label: 'Limited by', sort: (c) => c.limited_by ?? '', render: (c) => c.limited_by ?? '—' },
    { key: 'create', label: 'Create', render: (c) => measured(c.measured.create), wide: true },
    { key: 'failover', label: 'Failover', render: (c) => (c.topology === null ? '—' : measured(c.measured.failover)), wide: true },
  ];
  return <Table columns={columns} rows={plan.classes} rowKey={(c) => c.name} empty="No class." caption="Classes of the live load balancers" />;
}

function ResourceTable({ plan }: { plan: PlanResult }) {
  const num = (key: string, label: string, pick: (r: PlanResource) => number, wide = false): Column<PlanResource> => ({ key, label, sort: pick, render: (r) => figure(pick(r)), wide });
  const columns: Column<PlanResource>[] = [
    { key: 'label', label: 'Resource', sort: (r) => r.label, render: (r) => (r.label === plan.verdict.firstLimit ? <strong>{r.label} (first limit)</strong> : r.label) },
    { key: 'unit', label: 'Unit', render: (r) => r.unit, wide: true },
    num('capacity', 'Capacity', (r) => r.capacity),
    num('in_use', 'In use', (r) => r.inUse, true),
    num('classes', 'Classes', (r) => r.byClass.reduce((a, b) => a + b, 0), true),
    num('failover', 'Failover', (r) => r.failover, true),
    num('free', 'Free after', (r) => r.free),
    { key: 'free_percent', label: 'Free %', sort: (r) => r.free_percent, render: (r) => `${figure(r.free_percent)}%` },
    { key: 'holds', label: 'Holds', sort: (r) => r.holds ?? Infinity, render: (r) => (r.holds === null ? '—' : figure(r.holds)) },
  ];
  return <Table columns={columns} rows={plan.resources} rowKey={(r) => r.key} empty="No resource." caption="Resources against capacity" />;
}

function CapacityPlan() {
  const live = useLive((signal) => get<PlanResult>(ostia('plan'), signal), [], TOOL_PAUSE_MS);
  const plan = live.data;
  const usage = useMemo(() => (plan ? usageChart(plan) : null), [plan]);
  const limiting = useMemo(() => (plan ? [...plan.resources].filter((r) => r.holds !== null).sort((a, b) => a.holds! - b.holds!) : []), [plan]);
  const holds = useMemo(() => (plan && limiting.length ? holdsChart(plan, limiting) : null), [plan, limiting]);
  const v = plan ? PLAN_VERDICTS[plan.verdict.kind] : null;
  return (
    <section aria-labelledby="plan-heading">
      <div class="heading">
        <h2 id="plan-heading">Capacity plan of the live load balancers</h2>
        <button type="button" class="secondary" onClick={() => live.refresh()}>
          Compute again
        </button>
      </div>
      <ToolError live={live} path="/v2/ostia/plan" command="ostia plan --from-live" />
      {plan && v ? (
        <>
          <div class="card verdict">
            <p>
              <Badge tone={v.tone}>{v.words}</Badge> {plan.verdict.sentence}
            </p>
            <p class="muted">
              {plan.totals.load_balancers} load balancer(s), {plan.totals.listeners} listener(s), {plan.totals.amphorae} amphora(e) in {plan.classes.length} class(es); compute.driver {plan.drivers.compute}, network.driver{' '}
              {plan.drivers.network}. Computed {when(live.at?.toISOString())}.
            </p>
          </div>
          <h3>Classes</h3>
          <ClassTable plan={plan} />
          <h3>What limits capacity: load balancers of today's mix each resource holds</h3>
          {holds ? <Chart option={holds} height={Math.max(140, 48 * limiting.length + 40)} label={`Load balancers of today's mix each resource holds; the first limit is ${plan.verdict.firstLimit ?? 'none'}`} /> : <p class="muted">No resource limits this mix.</p>}
          <h3>Used against available, as shares of each resource</h3>
          {usage ? <Chart option={usage} height={Math.max(180, 56 * plan.resources.length + 60)} label="Used against available per resource: in use by others, each class, failover headroom and free, as shares of capacity" /> : null}
          <ResourceTable plan={plan} />
          <ul class="plan-notes">
            <li>Hosts: {plan.hosts}</li>
            <li>Anti-affinity: {plan.anti_affinity.sentence}</li>
            {plan.notes.map((n) => (
              <li key={n}>{n}</li>
            ))}
          </ul>
        </>
      ) : live.error ? null : (
        <p class="muted">Computing…</p>
      )}
    </section>
  );
}

function ProviderAdvice() {
  const live = useLive((signal) => get<LiveSummary>(ostia('advice'), signal), [], TOOL_PAUSE_MS);
  const a = live.data;
  const columns: Column<LiveAdvice>[] = [
    { key: 'name', label: 'Load balancer', sort: (x) => x.name || x.id, render: (x) => <a href={href(`/loadbalancers/${x.id}`)}>{x.name || x.id.slice(0, 8)}</a> },
    { key: 'provider', label: 'Provider', sort: (x) => x.provider, render: (x) => x.provider, wide: true },
    { key: 'cluster', label: 'Cluster', sort: (x) => x.cluster ?? '', render: (x) => x.cluster ?? <span class="muted">—</span>, wide: true },
    { key: 'amphorae', label: 'Amphorae', sort: (x) => x.amphorae, render: (x) => x.amphorae },
    { key: 'verdict', label: 'Verdict', sort: (x) => x.verdict, render: (x) => <Badge tone={ADVICE_VERDICTS[x.verdict].tone}>{ADVICE_VERDICTS[x.verdict].words}</Badge> },
    {
      key: 'why',
      label: 'Why',
      render: (x) =>
        x.refusals.length ? (
          <ul class="refusals">
            {x.refusals.map((r, i) => (
              <li key={i}>
                <span class="muted">{r.object}:</span> {r.reason}
              </li>
            ))}
          </ul>
        ) : (
          x.explanation
        ),
    },
  ];
  return (
    <section aria-labelledby="advice-heading">
      <h2 id="advice-heading">Provider advice: which load balancers could run on OVN</h2>
      <ToolError live={live} path="/v2/ostia/advice" command="ostia advise --from-live" />
      {a ? (
        <>
          <div class="card verdict">
            <p>{a.explanation}</p>
            <p class="muted">
              {a.movable} of {a.amphoraLoadBalancers} amphora load balancer(s) fit OVN; amphorae today {a.amphoraeToday}, after {a.amphoraeAfter}, saved {a.amphoraeSaved}.
            </p>
          </div>
          <Table columns={columns} rows={a.loadBalancers} rowKey={(x) => x.id} empty="No load balancer." initialSort={{ key: 'verdict', desc: true }} caption="Advice per load balancer" />
        </>
      ) : live.error ? null : (
        <p class="muted">Loading…</p>
      )}
    </section>
  );
}

export function Operator() {
  if (!can('planning', 'get_all')) {
    return (
      <section>
        <h1>Capacity and advice</h1>
        <Notice kind="warning">The API's policy does not let {session.value?.user.name} read the capacity plan or the provider advice: only administrators do.</Notice>
      </section>
    );
  }
  return (
    <section class="rows-as-cards">
      <h1>Capacity and advice</h1>
      <CapacityPlan />
      <ProviderAdvice />
    </section>
  );
}

/**
 * `ostia baseline`: a representative mix of load balancers under load (./baseline/mix.ts), its figures
 * stored with the date, the service's version and its configuration, and compared with the baseline stored
 * before it: a table of changes, and a chart of before against now.
 */
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../config.js';
import { mixRefusal, runMix, type Measurements, type MixResult } from './baseline/mix.js';
import { compare, lastBaselines, NOISE_PERCENT, serviceVersion, storeBaseline, versionText, type Baseline, type Comparison, type Figure } from './baseline/record.js';
import { PROBE_EVERY_MS } from './baseline/interruption.js';
import { apiLoginOptions, loginFromFlags } from './api-session.js';
import { CliError, formatTable, printJson, usageError, writeLine, type Command } from './command.js';
import { drawPicture, pictureOption, type Chart } from './picture.js';
import { configFromFlags, dataDirOption } from './settings.js';

/** The exit status when a figure is worse than the previous baseline, apart from 1 (failed), 2 (usage), 130 (interrupted). */
export const WORSE_EXIT = 3;
const DEFAULT_DURATION_S = 5;
const DEFAULT_CONNECTIONS = 16;
const MAX_DURATION_S = 600;

export const baseline: Command = {
  name: 'baseline',
  summary: 'Load a mix of throw-away load balancers with wrk, time a failover, store the figures and compare them with the previous baseline.',
  options: {
    ...dataDirOption,
    ...apiLoginOptions('ostia', '; an admin one, to fail over'),
    duration: { type: 'string', value: 'SECONDS', help: `seconds of each wrk run, two per listener (default ${DEFAULT_DURATION_S})` },
    connections: { type: 'string', value: 'N', help: `wrk's open connections (default ${DEFAULT_CONNECTIONS})` },
    'vip-subnet': { type: 'string', value: 'SUBNET', help: 'subnet of the VIPs (default public-subnet)' },
    'member-subnet': { type: 'string', value: 'SUBNET', help: 'subnet of the members (default private-subnet)' },
    store: { type: 'string', value: 'DIR', help: 'where baselines are stored (default DATA_DIR/baselines)' },
    'compare-only': { type: 'boolean', help: 'run no load: show the last stored baseline against the one before it' },
    ...pictureOption,
  },
  details: [
    "Runs against a running 'ostia up' (or api and worker roles) on this machine with the amphora provider: it logs in",
    'with a cloud of clouds.yaml and serves two members on the member subnet: HTTP servers of its own on loopback',
    "(network.driver catalog), or two servers on the member network's bridge (network.driver bridge, as root; see",
    "'ostia server create'). It creates one load balancer with an HTTP, a TCP and, when the service has a key manager,",
    'a TERMINATED_HTTPS listener (a self-signed certificate it stores there), and under compute.driver netns an',
    'ACTIVE_STANDBY one with an HTTP listener. On each listener: wrk -t1 keep-alive (requests/s, latency p50 and p99,',
    "the CPU of the amphora's processes from /proc per request), then wrk with a new connection per request (new",
    'connections/s). Then it fails each load balancer over (PUT .../failover) while a client sends a request every 20 ms:',
    'the interruption, the failed requests, the time to ACTIVE again. It deletes all it made, also on failure or Ctrl-C.',
    'Parts the configuration cannot run are skipped, each with why.',
    'The figures are stored in DATA_DIR/baselines/<time>.json with the date, the version (package and git commit) and',
    'the configuration (drivers, providers, flavors; nothing secret), and compared with the last one stored: a change of',
    `${NOISE_PERCENT}% or more is better or worse, less is unchanged. Needs wrk (apt-get install wrk).`,
    `Exit status: 0 nothing worse than the previous baseline (or none before), ${WORSE_EXIT} a figure worse by ${NOISE_PERCENT}% or more,`,
    '1 the baseline failed, 2 usage, 130 interrupted (what it made is deleted first).',
  ].join('\n'),
  async run(input) {
    const v = input.values as Record<string, string | boolean | undefined>;
    const config = configFromFlags(baseline, input);
    const store = typeof v.store === 'string' ? v.store : join(config.dataDir, 'baselines');
    const picture = typeof v.picture === 'string' ? v.picture : undefined;
    if (v['compare-only']) {
      for (const o of ['duration', 'connections', 'os-cloud', 'clouds', 'url', 'vip-subnet', 'member-subnet']) if (v[o] !== undefined) throw usageError(baseline, `--${o} runs load; --compare-only runs none`);
      const stored = lastBaselines(store, 2);
      if (!stored.length) throw new CliError(`no baseline is stored in ${store}`, "Run 'ostia baseline' first (with the same --data-dir or --store).");
      const now = stored[stored.length - 1]!;
      return report(now.baseline, stored.length > 1 ? stored[0]!.baseline : null, now.file, input.json, picture);
    }
    const durationS = positive(v.duration, 'duration', DEFAULT_DURATION_S, MAX_DURATION_S);
    const connections = positive(v.connections, 'connections', DEFAULT_CONNECTIONS, 10_000);
    const refused = mixRefusal(config);
    if (refused) throw refused;
    const session = await loginFromFlags(v, config.dataDir, 'ostia');
    const flavors = (await session.json<{ flavors: Array<{ name: string; flavor_profile_id: string; enabled: boolean }> }>('GET', '/v2/lbaas/flavors')).flavors.map((f) => ({ name: f.name, enabled: f.enabled }));
    const aborter = new AbortController();
    const stop = () => aborter.abort();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    const takenAt = new Date().toISOString();
    const loadBefore = loadavg()[0]!;
    let result: MixResult;
    try {
      result = await runMix({
        session,
        config,
        durationS,
        connections,
        vipSubnet: typeof v['vip-subnet'] === 'string' ? v['vip-subnet'] : 'public-subnet',
        memberSubnet: typeof v['member-subnet'] === 'string' ? v['member-subnet'] : 'private-subnet',
        signal: aborter.signal,
        progress: (line) => writeLine(process.stderr, `ostia baseline: ${line}`),
      });
    } catch (e) {
      if (aborter.signal.aborted) throw new CliError('interrupted', 'What the baseline made was deleted; nothing was stored.', 130);
      throw e;
    } finally {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    }
    const previous = lastBaselines(store, 1)[0]?.baseline ?? null;
    const now: Baseline = {
      format: 1,
      taken_at: takenAt,
      service: { ...serviceVersion(), url: session.url },
      configuration: configuration(config, flavors, durationS, connections, result.backends, loadBefore),
      figures: figuresOf(result),
      skipped: result.skipped,
      measurements: { parts: result.parts, failovers: result.failovers, backends: result.backends },
    };
    return report(now, previous, storeBaseline(store, now), input.json, picture);
  },
};

function positive(text: string | boolean | undefined, name: string, fallback: number, max: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (typeof text !== 'string' || !/^\d+$/.test(text) || n < 1 || n > max) throw usageError(baseline, `--${name} must be a whole number from 1 to ${max}, got '${String(text)}'`);
  return n;
}

/** What the figures depend on, and nothing secret: drivers, providers, flavors by name, the load's shape, the machine. */
function configuration(config: Config, flavors: unknown, durationS: number, connections: number, backends: string, loadAverage: number): Record<string, unknown> {
  return {
    compute_driver: config.compute.driver,
    network_driver: config.network.driver,
    enabled_providers: config.api.enabledProviders,
    default_provider: config.api.defaultProvider,
    flavors,
    load: `wrk -t1 -c${connections} -d${durationS}s, keep-alive then Connection: close, per listener`,
    backends,
    machine: { cpus: cpus().length, load_average_1m: Math.round(loadAverage * 100) / 100 },
  };
}

export function figuresOf(r: Pick<Measurements, 'parts' | 'failovers'>): Figure[] {
  const figures: Figure[] = [];
  for (const p of r.parts) {
    figures.push(
      { name: `${p.label}: requests/s`, unit: 'req/s', value: p.requests_per_s, better: 'higher' },
      { name: `${p.label}: latency p50`, unit: 'ms', value: p.latency_p50_ms, better: 'lower' },
      { name: `${p.label}: latency p99`, unit: 'ms', value: p.latency_p99_ms, better: 'lower' },
      { name: `${p.label}: new connections/s`, unit: 'conn/s', value: p.new_connections_per_s, better: 'higher' },
    );
    if (p.amphora_cpu_us_per_request !== null) figures.push({ name: `${p.label}: amphora CPU per request`, unit: 'µs', value: p.amphora_cpu_us_per_request, better: 'lower' });
  }
  for (const f of r.failovers)
    figures.push(
      { name: `failover ${f.topology}: interruption`, unit: 'ms', value: f.interruption_ms, better: 'lower' },
      { name: `failover ${f.topology}: failed requests`, unit: 'requests', value: f.failed_requests, better: 'lower' },
      { name: `failover ${f.topology}: to ACTIVE`, unit: 'ms', value: f.to_active_ms, better: 'lower' },
    );
  return figures;
}

const cell = (v: number | null) => (v === null ? '–' : String(v));
const changeCell = (p: number | null) => (p === null ? '–' : `${p >= 0 ? '+' : ''}${p}%`);

function render(now: Baseline, c: Comparison, file: string): string {
  const m = now.measurements;
  const lines = [`Baseline of ${now.taken_at}, version ${versionText(now)}, ${now.service.url}`, ...Object.entries(now.configuration).map(([k, value]) => `  ${k}: ${typeof value === 'string' ? value : JSON.stringify(value)}`), ''];
  if (m?.parts.length)
    lines.push(
      formatTable(
        [
          ['LISTENER', 'TOPOLOGY', 'REQ/S', 'P50 MS', 'P99 MS', 'NEW CONN/S', 'FAILED', 'AMPHORA CPU µS/REQ', 'AMPHORA CPU %'],
          ...m.parts.map((p) => [p.label, p.topology, String(p.requests_per_s), String(p.latency_p50_ms), String(p.latency_p99_ms), String(p.new_connections_per_s), String(p.failed_requests), cell(p.amphora_cpu_us_per_request), cell(p.amphora_cpu_percent)]),
        ],
        [2, 3, 4, 5, 6, 7, 8],
      ).trimEnd(),
      ...m.parts.map((p) => `  ${p.label}: amphora CPU: ${p.amphora_cpu_note}.`),
      '',
    );
  if (m?.failovers.length)
    lines.push(
      formatTable([['FAILOVER', 'INTERRUPTION MS', 'FAILED / REQUESTS', 'TO ACTIVE MS'], ...m.failovers.map((f) => [f.topology, String(f.interruption_ms), `${f.failed_requests} / ${f.requests}`, String(f.to_active_ms)])], [1, 2, 3]).trimEnd(),
      `  A request every ${PROBE_EVERY_MS} ms during the failover: the interruption runs from the first failed one to the first answered after the last failure.`,
      '',
    );
  for (const s of now.skipped) lines.push(`Skipped ${s.part}: ${s.reason}.`);
  if (now.skipped.length) lines.push('');
  lines.push(
    c.previous === null ? 'Compared with: nothing (the first baseline here).' : `Compared with the baseline of ${c.previous}:`,
    formatTable([['FIGURE', 'UNIT', 'BEFORE', 'NOW', 'CHANGE', 'VERDICT'], ...c.figures.map((f) => [f.name, f.unit, cell(f.before), cell(f.now), changeCell(f.change_percent), f.change])], [2, 3, 4]).trimEnd(),
    ...c.figures.filter((f) => f.change !== 'unchanged' && f.change !== 'new').map((f) => `  ${f.sentence}`),
    '',
    `Verdict: ${c.verdict}`,
    `Stored: ${file}`,
  );
  return lines.join('\n') + '\n';
}

async function report(now: Baseline, previous: Baseline | null, file: string, json: boolean, picture: string | undefined): Promise<number> {
  const c = compare(previous, now);
  if (picture) await drawPicture(picture, chart(c, now));
  if (json) printJson({ baseline: now, stored: file, comparison: c, ...(picture && { picture }) });
  else process.stdout.write(render(now, c, file));
  return c.worse > 0 ? WORSE_EXIT : 0;
}

/** Figures of many units on one axis: each pair is drawn as a share of its larger figure, and labelled with the figures themselves. */
function chart(c: Comparison, now: Baseline): Chart {
  const label = (f: Comparison['figures'][number]) => `${f.name} (${f.unit})`;
  const scale = (f: Comparison['figures'][number]) => Math.max(f.before ?? 0, f.now ?? 0);
  const share = (value: number | null, f: Comparison['figures'][number]) => (value === null || scale(f) === 0 ? 0 : Math.round((value / scale(f)) * 1000) / 10);
  const series = (name: string, pick: (f: Comparison['figures'][number]) => number | null) => ({
    name,
    values: c.figures.map((f) => share(pick(f), f)),
    labels: c.figures.map((f) => cell(pick(f))),
  });
  return {
    title: 'ostia baseline: before and now',
    subtitle: c.previous === null ? `${now.taken_at}: the first baseline` : `${c.previous} → ${now.taken_at}; ${c.worse} worse, ${c.better} better (bars: share of the larger figure)`,
    categories: c.figures.map(label),
    series: [...(c.previous === null ? [] : [series(`before (${c.previous})`, (f) => f.before)]), series(`now (${now.taken_at})`, (f) => f.now)],
    unit: '%',
    axisEnd: 100,
    horizontal: true,
  };
}

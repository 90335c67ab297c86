/**
 * Waiting without polling, against polling as clients do it today (a GET every second), in one
 * run on one `ostia up` (noop provider, 127.0.0.1):
 *
 *  - latency: the time from the request that changes a load balancer (`PUT` of its name, whose
 *    transaction writes PENDING_UPDATE) to the moment its watcher learns of it: through its
 *    event stream (`GET …/loadbalancers/{id}/events`), or through its next poll. With 1 watcher
 *    and with `--watchers` (default 1,000), each on its own load balancer, changes spread over them;
 *  - the API's CPU per minute while `--watchers` clients wait: streams, held GETs
 *    (`GET …?wait=55` on load balancers held in PENDING_UPDATE) or pollers, with no change.
 *
 *   npm run build && node dist/bench/events.js [--watchers 1000] [--changes 100] [--cpu-seconds 60] [--json]
 */
import { setMaxListeners } from 'node:events';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import SQLite from '@rocicorp/zero-sqlite3';
import { VIP_SUBNET_ID } from '../src/config.js';
import { EventStreamClient } from '../src/tools/event-stream-client.js';
import { startOstia, type OstiaProcess } from '../test/support/ostia-process.js';
import { benchArgs, positiveInt } from './support/args.js';
import { runBench } from './support/lab.js';
import { cpuSeconds, processTree } from './support/processes.js';
import { progress } from './support/progress.js';
import { median, percentile } from './support/stats.js';
import { grid, num } from './support/table.js';

const HELP = `usage: node dist/bench/events.js [options]
  --watchers N      the many-watchers case: N clients, each on its own load balancer (default 1000)
  --changes N       changes measured in each latency case (default 100)
  --cpu-seconds N   how long the API's CPU is counted with each kind of waiting client (default 60)
  --json            print one JSON document instead of text
  --help            this text
`;

/** As clients poll today: cloud-provider-openstack's first interval, Terraform's, the CLI's floor. */
const POLL_MS = 1_000;
/** The mean pause between two changes on different load balancers. */
const CHANGE_EVERY_MS = 150;
const HELD_SECONDS = 55;
const CREATE_CONCURRENCY = 8;
const LATE_MS = 15_000;

interface Params {
  watchers: number;
  changes: number;
  cpuSeconds: number;
  json: boolean;
}

function parse(): Params | null {
  const v = benchArgs({ watchers: { type: 'string', default: '1000' }, changes: { type: 'string', default: '100' }, 'cpu-seconds': { type: 'string', default: '60' } });
  if (!v) return null;
  return { watchers: positiveInt('watchers', v.watchers), changes: positiveInt('changes', v.changes), cpuSeconds: positiveInt('cpu-seconds', v['cpu-seconds']), json: v.json };
}

class Api {
  constructor(
    readonly base: string,
    readonly headers: Record<string, string>,
  ) {}
  async send(method: string, path: string, body?: unknown): Promise<Response> {
    return fetch(`${this.base}${path}`, { method, headers: { ...this.headers, 'content-type': 'application/json' }, body: body === undefined ? null : JSON.stringify(body) });
  }
  async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.send(method, path, body);
    if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  }
}

interface Lb {
  id: string;
  /** The name its last change gave it, and when that change was sent. */
  pending: { name: string; at: number } | null;
}

async function createFleet(api: Api, n: number): Promise<Lb[]> {
  const lbs: Lb[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: CREATE_CONCURRENCY }, async () => {
      while (next < n) {
        next++;
        const { loadbalancer } = await api.json<{ loadbalancer: { id: string } }>('POST', '/v2/lbaas/loadbalancers', { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, name: 'w' } });
        lbs.push({ id: loadbalancer.id, pending: null });
        if (lbs.length % 200 === 0) progress(`created ${lbs.length}/${n} load balancers`);
      }
    }),
  );
  for (const lb of lbs) await api.json('GET', `/v2/lbaas/loadbalancers/${lb.id}?wait=${HELD_SECONDS}`);
  return lbs;
}

interface Latency {
  case: string;
  watchers: number;
  changes: number;
  seen: number;
  median_ms: number | null;
  p99_ms: number | null;
  /** The changing PUT's own answer, for scale: a watcher may learn of the change before it. */
  put_median_ms: number;
  load_1m: number;
}

/**
 * `changes` changes, one every CHANGE_EVERY_MS on load balancers taken in turn; the watchers
 * report what they see (`saw`), and the latency of each change is when its watcher first saw it.
 */
async function measureChanges(api: Api, lbs: Lb[], changes: number, label: string): Promise<Latency> {
  const latencies: number[] = [];
  const puts: number[] = [];
  const waiting = (learners = new Map<string, (at: number) => void>());
  let seq = 0;
  const previous = new Map<Lb, Promise<unknown>>();
  for (let i = 0; i < changes; i++) {
    const lb = lbs[i % lbs.length]!;
    // A load balancer changes again only once its last change was seen: a poller would miss one otherwise.
    await Promise.race([previous.get(lb), new Promise((r) => setTimeout(r, LATE_MS))]);
    const name = `${label}-${seq++}`;
    const at = performance.now();
    lb.pending = { name, at };
    const learnt = new Promise<number>((resolve) => waiting.set(name, resolve));
    previous.set(lb, learnt.then((t) => latencies.push(t - at)));
    const res = await api.send('PUT', `/v2/lbaas/loadbalancers/${lb.id}`, { loadbalancer: { name } });
    if (res.status !== 200) throw new Error(`PUT ${lb.id}: HTTP ${res.status} ${await res.text()}`);
    puts.push(performance.now() - at);
    // Out of step with the pollers' second (a load balancer changed again waits for its last change to be seen).
    await new Promise((r) => setTimeout(r, Math.random() * (lbs.length === 1 ? POLL_MS : 2 * CHANGE_EVERY_MS)));
  }
  const deadline = Date.now() + LATE_MS;
  while (latencies.length < changes && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return {
    case: label,
    watchers: lbs.length,
    changes,
    seen: latencies.length,
    median_ms: latencies.length ? median(latencies) : null,
    p99_ms: latencies.length ? percentile(latencies, 99) : null,
    put_median_ms: median(puts),
    load_1m: loadavg()[0]!,
  };
}

/** The watchers of the case under way report here: the name they saw on a load balancer. */
let learners = new Map<string, (at: number) => void>();
function saw(lb: Lb, name: string): void {
  if (lb.pending?.name !== name) return;
  lb.pending = null;
  const learnt = learners.get(name);
  learners.delete(name);
  learnt?.(performance.now());
}

async function withStreams<T>(api: Api, lbs: Lb[], body: () => Promise<T>): Promise<T> {
  const streams: EventStreamClient[] = [];
  const abort = new AbortController();
  try {
    for (const lb of lbs) {
      const s = await EventStreamClient.open(`${api.base}/v2/lbaas/loadbalancers/${lb.id}/events`, api.headers);
      streams.push(s);
      await s.next(LATE_MS);
      void (async () => {
        while (!abort.signal.aborted) {
          const e = await s.next(3_600_000).catch(() => null);
          if (!e) return;
          if (e.event === 'status') saw(lb, (e.data as { statuses: { loadbalancer: { name: string } } }).statuses.loadbalancer.name);
        }
      })();
    }
    return await body();
  } finally {
    abort.abort();
    for (const s of streams) s.close();
  }
}

/** One signal ends every client's loop: each request in flight listens to it. */
function clientsAbort(): AbortController {
  const abort = new AbortController();
  setMaxListeners(0, abort.signal);
  return abort;
}

async function withPollers<T>(api: Api, lbs: Lb[], body: () => Promise<T>): Promise<T> {
  const abort = clientsAbort();
  const loops = lbs.map(async (lb, i) => {
    // Spread over the second, as independent clients are.
    await new Promise((r) => setTimeout(r, (i * POLL_MS) / lbs.length));
    while (!abort.signal.aborted) {
      const t0 = performance.now();
      const res = await fetch(`${api.base}/v2/lbaas/loadbalancers/${lb.id}`, { headers: api.headers, signal: abort.signal }).catch(() => null);
      if (!res) return;
      saw(lb, ((await res.json()) as { loadbalancer: { name: string } }).loadbalancer.name);
      await new Promise((r) => setTimeout(r, Math.max(0, POLL_MS - (performance.now() - t0))));
    }
  });
  try {
    return await body();
  } finally {
    abort.abort();
    await Promise.all(loops);
  }
}

/** `--watchers` GETs held with `?wait=` on load balancers held PENDING_UPDATE by a write the API does not hear (another SQLite connection). */
async function withHeldWaits<T>(ostia: OstiaProcess, api: Api, lbs: Lb[], body: () => Promise<T>): Promise<T> {
  const db = new SQLite(join(ostia.dataDir, 'ostia.db'));
  db.pragma('busy_timeout = 5000');
  const set = (status: string) => db.prepare(`UPDATE load_balancer SET provisioning_status = ? WHERE id IN (${lbs.map(() => '?').join(',')})`).run(status, ...lbs.map((l) => l.id));
  set('PENDING_UPDATE');
  const abort = clientsAbort();
  const loops = lbs.map(async (lb) => {
    while (!abort.signal.aborted) {
      const res = await fetch(`${api.base}/v2/lbaas/loadbalancers/${lb.id}?wait=${HELD_SECONDS}`, { headers: api.headers, signal: abort.signal }).catch(() => null);
      if (!res) return;
      await res.arrayBuffer();
    }
  });
  try {
    return await body();
  } finally {
    abort.abort();
    await Promise.all(loops);
    set('ACTIVE');
    db.close();
  }
}

interface Cpu {
  waiting: string;
  clients: number;
  cpu_s_per_minute: number | null;
  load_1m: number;
}

async function cpuWhile(label: string, pids: number[], clients: number, seconds: number): Promise<Cpu> {
  // Opening the clients costs what it costs once; the steady state is counted.
  await new Promise((r) => setTimeout(r, 3_000));
  const before = cpuSeconds(pids);
  progress(`${label}: counting the API's CPU for ${seconds} s`);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const after = cpuSeconds(pids);
  return { waiting: label, clients, cpu_s_per_minute: before === null || after === null ? null : ((after - before) * 60) / seconds, load_1m: loadavg()[0]! };
}

async function run(p: Params): Promise<void> {
  const ostia = await startOstia();
  try {
    const api = new Api(ostia.url, { 'x-auth-token': await ostia.token('ostia-demo') });
    const lbs = await createFleet(api, p.watchers);
    const one = lbs.slice(0, 1);
    const pids = processTree(ostia.pid);
    const latency: Latency[] = [];
    for (const [label, set] of [
      ['events', one],
      ['polling 1 s', one],
      ['events', lbs],
      ['polling 1 s', lbs],
    ] as const) {
      progress(`latency: ${label}, ${set.length} watcher(s), ${p.changes} changes`);
      const measure = () => measureChanges(api, set, p.changes, label.startsWith('events') ? 'events' : 'polling');
      latency.push(label === 'events' ? await withStreams(api, set, measure) : await withPollers(api, set, measure));
    }
    const cpu: Cpu[] = [
      await withStreams(api, lbs, () => cpuWhile('event streams', pids, lbs.length, p.cpuSeconds)),
      await withHeldWaits(ostia, api, lbs, () => cpuWhile(`held GETs (?wait=${HELD_SECONDS})`, pids, lbs.length, p.cpuSeconds)),
      await withPollers(api, lbs, () => cpuWhile('polling every 1 s', pids, lbs.length, p.cpuSeconds)),
    ];
    report(p, latency, cpu);
  } finally {
    await ostia.stop();
  }
}

function report(p: Params, latency: Latency[], cpu: Cpu[]): void {
  if (p.json) {
    process.stdout.write(`${JSON.stringify({ latency, cpu, command: command(p) }, null, 2)}\n`);
    return;
  }
  const polled = (watchers: number) => latency.find((l) => l.case === 'polling' && l.watchers === watchers);
  const rows = [['learnt by', 'watchers', 'changes seen', 'median ms', 'p99 ms', 'median vs polling', 'the PUT\'s answer ms', 'load 1m']];
  for (const l of latency) {
    const base = polled(l.watchers);
    const ratio = l.case === 'events' && base?.median_ms && l.median_ms ? `${num(base.median_ms / l.median_ms)}× sooner` : '';
    rows.push([l.case === 'events' ? 'event stream' : 'polling every 1 s', String(l.watchers), `${l.seen}/${l.changes}`, num(l.median_ms), num(l.p99_ms), ratio, num(l.put_median_ms), num(l.load_1m, 2)]);
  }
  const pollCpu = cpu.find((c) => c.waiting.startsWith('polling'))?.cpu_s_per_minute ?? null;
  const cpuRows = [['waiting clients', 'clients', 'API CPU s/min', 'vs polling', 'load 1m']];
  for (const c of cpu) {
    const ratio = pollCpu && c.cpu_s_per_minute !== null && !c.waiting.startsWith('polling') ? `${num(c.cpu_s_per_minute / pollCpu, 3)}×` : '';
    cpuRows.push([c.waiting, String(c.clients), num(c.cpu_s_per_minute, 2), ratio, num(c.load_1m, 2)]);
  }
  process.stdout.write(
    [
      'From the request that changes a load balancer to its watcher knowing (ostia up, noop provider):',
      grid(rows),
      '',
      'The API process\'s CPU while the clients wait and nothing changes:',
      grid(cpuRows),
      '',
      `Command: ${command(p)}`,
      '',
    ].join('\n'),
  );
}

const command = (p: Params) => `node dist/bench/events.js --watchers ${p.watchers} --changes ${p.changes} --cpu-seconds ${p.cpuSeconds}`;

runBench(HELP, parse, run);

/**
 * API benchmark: Ostia (`ostia up`, noop provider) and, when it is already running, the real
 * Octavia 11 baseline with no-op drivers (see octavia-baseline.md), measured in the same run
 * because the machine is shared and noisy.
 *
 *   npm run build && node dist/bench/api.js [--json] [--seconds 10] [--concurrency 8] [--lists 100,1000] [--creates 50] [--close] [--scale 100,1000,10000]
 *
 * Per target: as many load balancers as the longest list created by 8 clients (wall time until all
 * ACTIVE), then requests/s for GET one LB and GET a page of each --lists length (`?limit=N`, as
 * clients page; the longest also with `fields=id,name`) (1 s warm-up, then a fixed duration;
 * keep-alive, loopback) with server CPU per request read from /proc, then create → ACTIVE
 * latency of 50 sequential creates (POST, then GET every 10 ms until ACTIVE). With --scale, Ostia
 * alone then grows to each count and walks its whole list page by page (`limit`/`marker`, 1000 a
 * page): server CPU per listed load balancer at each count, against the smallest. The bench never installs or starts the
 * baseline; it only probes for it, and waits for its cascade deletes to finish so that they do not load the machine
 * while Ostia is measured.
 *
 * Connections: Ostia keeps them alive. The baseline's uwsgi `http-socket` (as Debian configures it) answers
 * HTTP/1.1 without `Connection: close` and then closes the socket anyway, so a keep-alive client gets "socket hang up"
 * on reuse; the bench therefore opens a new connection per request to the baseline (`Connection: close`), which is
 * what every client of that deployment does. `--close` does the same for Ostia, to compare like with like. The report
 * says which mode each target used.
 */
import http from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { VIP_SUBNET_ID } from '../src/config.js';
import { startOstia } from '../test/support/ostia-process.js';
import { BEFORE_FREE_ADDRESS_INDEX, createsAtScale, createsAtScaleTable } from './support/creates-at-scale.js';
import { postgresServer } from './support/private-postgres.js';
import { cpuSeconds, processTree } from './support/processes.js';
import { startSplit, type Deployment } from './support/soak-deployments.js';
import { percentile } from './support/stats.js';
import { num } from './support/table.js';

const USAGE = `Usage: node dist/bench/api.js [--json] [--seconds 10] [--concurrency 8] [--lists 100,1000] [--creates 50] [--close] [--scale 100,1000,10000] [--split [--database-url URL]]

Ostia's API (ostia up, noop provider) and, when it runs, the Octavia 11 baseline, measured in the same run:
create of as many load balancers as the longest of --lists by --concurrency clients, GET one and GET a page of
each --lists length (requests/s, server CPU per request) for --seconds each, and create → ACTIVE latency of
--creates sequential creates. --scale: Ostia's server CPU per listed load balancer when it holds each count,
walking the whole list in pages of 1000. --close opens one connection per request on both sides; --json prints
one JSON document on stdout.
--existing N [--baseline-ref REF]: then --creates creates → ACTIVE, interleaved, on four more Ostias: this version
and REF (default ${BEFORE_FREE_ADDRESS_INDEX}, before the free-address index; built once from git), each empty and
grown to N load balancers (bench/support/creates-at-scale.ts).
--split: Ostia as two \`ostia api\` and two \`ostia worker\` on PostgreSQL (--database-url or OSTIA_TEST_PG_URL, else a
private server), the timed GETs round-robin over both APIs and PostgreSQL's CPU counted, as Octavia runs two uwsgi
processes on MariaDB; without it, one \`ostia up\` (one Node thread) on SQLite.
`;
/** Page size of the --scale walk: Octavia's default pagination_max_limit. */
const SCALE_PAGE = 1000;
const POLL_MS = 10;
const WARMUP_S = 1;
const ACTIVE_TIMEOUT_MS = 120_000;
/** How long the baseline's worker may take to finish the cascade deletes of one run. */
const DELETE_TIMEOUT_MS = 600_000;
const DELETE_POLL_MS = 250;
const BASELINE_DOC = '/work/shared/reference/octavia-baseline.md';

interface Params {
  seconds: number;
  concurrency: number;
  /** Page lengths listed; the longest is how many load balancers are created. */
  lists: number[];
  creates: number;
  scale: number[];
}

const lbCount = (p: Params) => Math.max(...p.lists);

interface Target {
  readonly name: string;
  /** API root, no trailing slash. */
  readonly base: string;
  /** Further API processes of the same deployment: the timed GETs go round-robin over base and these. */
  readonly otherBases?: readonly string[];
  readonly headers: Readonly<Record<string, string>>;
  readonly vipSubnetId: string;
  /** false when the server closes every connection after one response (uwsgi http-socket). */
  readonly keepAlive: boolean;
  /** Lists exactly this target's benchmark project. */
  readonly listPath: string;
  /** Server processes whose CPU time a GET costs (API and database). */
  serverPids(): number[];
  cleanup(ids: readonly string[], progress: (msg: string) => void): Promise<void>;
  close(): Promise<void>;
}

interface Throughput {
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50_ms: number;
  p99_ms: number;
  /** Server CPU per request (API + database processes); null when /proc was not readable. */
  cpu_ms_per_request: number | null;
}

interface Latency {
  n: number;
  median_ms: number;
  p90_ms: number;
  min_ms: number;
  max_ms: number;
  post_median_ms: number;
}

interface TargetResult {
  target: string;
  url: string;
  keep_alive: boolean;
  bulk_create: { lbs: number; clients: number; seconds: number; lbs_per_second: number };
  get_one: Throughput;
  /** One per --lists length, then the longest with fields=id,name. */
  get_lists: Array<Throughput & { items: number; fields: string | null }>;
  create_to_active: Latency;
}

interface ScalePoint {
  load_balancers: number;
  pages: number;
  walks: number;
  cpu_us_per_listed: number | null;
  wall_ms_per_walk: number;
}

// --- HTTP -------------------------------------------------------------------------------

function client(concurrency: number, keepAlive = true) {
  // Without keep-alive the socket pool must not be capped: a capped agent hands a request that waited for a free
  // slot the socket of the response that just ended, which the server has closed ("socket hang up"). The callers'
  // loops bound the concurrency anyway.
  const agent = new http.Agent({ keepAlive, maxSockets: keepAlive ? concurrency : Infinity });
  return {
    request(method: string, url: string, headers: Readonly<Record<string, string>>, body?: unknown): Promise<{ status: number; text: string }> {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      return new Promise((resolve, reject) => {
        const req = http.request(url, { method, agent, headers: { accept: 'application/json', ...(keepAlive ? {} : { connection: 'close' }), ...headers, ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}) } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end(payload);
      });
    },
    close: () => agent.destroy(),
  };
}
type Client = ReturnType<typeof client>;

async function json<T>(c: Client, method: string, url: string, headers: Readonly<Record<string, string>>, body?: unknown): Promise<T> {
  const r = await c.request(method, url, headers, body);
  if (r.status >= 300) throw new Error(`${method} ${url}: HTTP ${r.status} ${r.text.slice(0, 500)}`);
  return JSON.parse(r.text) as T;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// --- measurements -----------------------------------------------------------------------

async function createLb(c: Client, t: Target, name: string): Promise<string> {
  const r = await json<{ loadbalancer: { id: string } }>(c, 'POST', `${t.base}/v2/lbaas/loadbalancers`, t.headers, { loadbalancer: { name, vip_subnet_id: t.vipSubnetId } });
  return r.loadbalancer.id;
}

async function waitActive(c: Client, t: Target, id: string): Promise<void> {
  const deadline = Date.now() + ACTIVE_TIMEOUT_MS;
  for (;;) {
    const lb = await json<{ loadbalancer: { provisioning_status: string } }>(c, 'GET', `${t.base}/v2/lbaas/loadbalancers/${id}`, t.headers);
    const status = lb.loadbalancer.provisioning_status;
    if (status === 'ACTIVE') return;
    if (status === 'ERROR') throw new Error(`${t.name}: load balancer ${id} went to ERROR`);
    if (Date.now() > deadline) throw new Error(`${t.name}: load balancer ${id} still ${status} after ${ACTIVE_TIMEOUT_MS} ms`);
    await sleep(POLL_MS);
  }
}

async function bulkCreate(c: Client, t: Target, p: Params, count: number, from = 0): Promise<{ ids: string[]; seconds: number }> {
  const ids: string[] = [];
  let next = from;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: p.concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const id = await createLb(c, t, `bench-${i}`);
        ids.push(id);
        await waitActive(c, t, id);
      }
    }),
  );
  return { ids, seconds: (performance.now() - started) / 1000 };
}

/** Keeps `concurrency` GETs in flight for `seconds`; returns their latencies and the non-200 count. */
async function load(c: Client, t: Target, url: string, concurrency: number, seconds: number): Promise<{ latencies: number[]; errors: number }> {
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  const urls = [url, ...(t.otherBases ?? []).map((base) => base + url.slice(t.base.length))];
  let sent = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        try {
          const r = await c.request('GET', urls[sent++ % urls.length]!, t.headers);
          latencies.push(performance.now() - t0);
          if (r.status !== 200) errors++;
        } catch {
          // reset or refused connection: counted, not timed
          errors++;
        }
      }
    }),
  );
  return { latencies, errors };
}

/** Requests/s after a warm-up (JIT, connection pools, lazily imported workers), with server CPU per request. */
async function throughput(c: Client, t: Target, url: string, p: Params): Promise<Throughput> {
  await load(c, t, url, p.concurrency, WARMUP_S);
  const pids = t.serverPids();
  const cpuBefore = cpuSeconds(pids);
  const started = performance.now();
  const { latencies, errors } = await load(c, t, url, p.concurrency, p.seconds);
  const seconds = (performance.now() - started) / 1000;
  const cpuAfter = cpuSeconds(pids);
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    errors,
    seconds,
    rps: latencies.length / seconds,
    p50_ms: percentile(latencies, 50),
    p99_ms: percentile(latencies, 99),
    cpu_ms_per_request: cpuBefore === null || cpuAfter === null ? null : ((cpuAfter - cpuBefore) * 1000) / latencies.length,
  };
}

async function createToActive(c: Client, t: Target, p: Params): Promise<{ latency: Latency; ids: string[] }> {
  const total: number[] = [];
  const post: number[] = [];
  const ids: string[] = [];
  for (let i = 0; i < p.creates; i++) {
    const t0 = performance.now();
    const id = await createLb(c, t, `latency-${i}`);
    post.push(performance.now() - t0);
    await waitActive(c, t, id);
    total.push(performance.now() - t0);
    ids.push(id);
  }
  total.sort((a, b) => a - b);
  post.sort((a, b) => a - b);
  return {
    ids,
    latency: { n: total.length, median_ms: percentile(total, 50), p90_ms: percentile(total, 90), min_ms: total[0]!, max_ms: total[total.length - 1]!, post_median_ms: percentile(post, 50) },
  };
}

/** The list path with more query parameters. */
function listUrl(t: Target, query: string): string {
  return `${t.base}${t.listPath}${t.listPath.includes('?') ? '&' : '?'}${query}`;
}

async function measure(t: Target, p: Params, progress: (msg: string) => void): Promise<TargetResult> {
  const c = client(p.concurrency, t.keepAlive);
  const count = lbCount(p);
  try {
    progress(`${t.name}: creating ${count} load balancers with ${p.concurrency} clients`);
    const bulk = await bulkCreate(c, t, p, count);
    progress(`${t.name}: GET one load balancer for ${p.seconds} s`);
    const getOne = await throughput(c, t, `${t.base}/v2/lbaas/loadbalancers/${bulk.ids[0]}`, p);
    const getLists: TargetResult['get_lists'] = [];
    for (const [n, fields] of [...p.lists.map((n) => [n, null] as const), [count, 'id,name'] as const]) {
      const url = listUrl(t, `limit=${n}${fields ? fields.split(',').map((f) => `&fields=${f}`).join('') : ''}`);
      const listed = await json<{ loadbalancers: unknown[] }>(c, 'GET', url, t.headers);
      if (listed.loadbalancers.length !== n) throw new Error(`${t.name}: the list holds ${listed.loadbalancers.length} load balancers, expected ${n}`);
      progress(`${t.name}: GET a list of ${n}${fields ? ` (fields ${fields})` : ''} for ${p.seconds} s`);
      getLists.push({ ...(await throughput(c, t, url, p)), items: n, fields });
    }
    progress(`${t.name}: ${p.creates} sequential creates until ACTIVE`);
    const latency = await createToActive(c, t, p);
    await t.cleanup([...bulk.ids, ...latency.ids], progress);
    return {
      target: t.name,
      url: t.base,
      keep_alive: t.keepAlive,
      bulk_create: { lbs: count, clients: p.concurrency, seconds: bulk.seconds, lbs_per_second: count / bulk.seconds },
      get_one: getOne,
      get_lists: getLists,
      create_to_active: latency.latency,
    };
  } finally {
    c.close();
  }
}

/** Walks the whole list as clients page it, following each `next` link; returns the pages read. */
async function walkList(c: Client, t: Target): Promise<{ pages: number; listed: number }> {
  let url: string | undefined = listUrl(t, `limit=${SCALE_PAGE}`);
  let pages = 0;
  let listed = 0;
  while (url) {
    const page: { loadbalancers: unknown[]; loadbalancers_links: Array<{ rel: string; href: string }> } = await json(c, 'GET', url, t.headers);
    pages++;
    listed += page.loadbalancers.length;
    url = page.loadbalancers_links.find((l) => l.rel === 'next')?.href;
  }
  return { pages, listed };
}

/** Grows Ostia to each --scale count and measures the server CPU per listed load balancer of whole-list walks. */
async function scale(t: Target, p: Params, progress: (msg: string) => void): Promise<ScalePoint[]> {
  const c = client(p.concurrency, t.keepAlive);
  const points: ScalePoint[] = [];
  try {
    let have = (await walkList(c, t)).listed;
    for (const n of [...p.scale].sort((a, b) => a - b)) {
      if (n > have) {
        progress(`${t.name}: growing to ${n} load balancers`);
        await bulkCreate(c, t, p, n, have);
        have = n;
      }
      // A count below what the earlier sections left is measured once, at what there is.
      if (points.some((pt) => pt.load_balancers === have)) continue;
      await walkList(c, t); // warm-up
      const pids = t.serverPids();
      const cpuBefore = cpuSeconds(pids);
      const started = performance.now();
      let walks = 0;
      let pages = 0;
      let listed = 0;
      while (performance.now() - started < p.seconds * 1000) {
        const w = await walkList(c, t);
        walks++;
        pages += w.pages;
        listed += w.listed;
      }
      const wall = performance.now() - started;
      const cpuAfter = cpuSeconds(pids);
      progress(`${t.name}: ${n} load balancers, ${walks} whole-list walks`);
      points.push({ load_balancers: have, pages: pages / walks, walks, cpu_us_per_listed: cpuBefore === null || cpuAfter === null ? null : ((cpuAfter - cpuBefore) * 1e6) / listed, wall_ms_per_walk: wall / walks });
    }
    return points;
  } finally {
    c.close();
  }
}

function pidFromFile(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, 'utf8').trim());
    return pid > 0 && existsSync(`/proc/${pid}`) ? pid : undefined;
  } catch {
    return undefined;
  }
}

// --- targets ------------------------------------------------------------------------------

async function ostiaTarget(keepAlive: boolean): Promise<Target> {
  const ostia = await startOstia();
  try {
    return {
      name: 'Ostia',
      base: ostia.url,
      headers: { 'x-auth-token': await ostia.token('ostia-demo') },
      vipSubnetId: await ostia.subnetId('public-subnet'),
      keepAlive,
      listPath: `/v2/lbaas/loadbalancers`,
      serverPids: () => processTree(ostia.pid),
      // The data dir goes away with the process.
      cleanup: async () => {},
      close: () => ostia.stop(),
    };
  } catch (err) {
    await ostia.stop();
    throw err;
  }
}

/**
 * The production shape beside Octavia's two uwsgi processes: two `ostia api` and two `ostia worker`
 * on a PostgreSQL database (a private server unless `databaseUrl`), PostgreSQL's CPU counted as the
 * server's as MariaDB's is Octavia's.
 */
async function splitTarget(keepAlive: boolean, databaseUrl: string | undefined): Promise<Target> {
  const server = postgresServer(databaseUrl);
  let deployment: Deployment;
  try {
    deployment = await startSplit(server.url, { apis: 2, workers: 2 });
  } catch (err) {
    server.stop();
    throw err;
  }
  const [first, ...others] = deployment.apis;
  return {
    name: 'Ostia (2 api + 2 worker, PostgreSQL)',
    base: first!.base,
    otherBases: others.map((a) => a.base),
    headers: first!.headers,
    vipSubnetId: VIP_SUBNET_ID,
    keepAlive,
    listPath: `/v2/lbaas/loadbalancers`,
    serverPids: () => [...deployment.serverPids(), ...deployment.databasePids()],
    cleanup: async () => {},
    close: async () => {
      await deployment.stop();
      server.stop();
    },
  };
}

function baselineUrl(): string {
  return (process.env.OCTAVIA_BASELINE_URL ?? `http://127.0.0.1:${process.env.API_PORT ?? '19876'}`).replace(/\/+$/, '');
}

/** The running baseline, or undefined: probed with one GET, never started from here. */
async function baselineTarget(p: Params): Promise<Target | undefined> {
  const base = baselineUrl();
  const c = client(p.concurrency, false);
  try {
    const probe = await Promise.race([c.request('GET', `${base}/v2/lbaas/providers`, { 'x-project-id': 'probe' }), sleep(3000).then(() => undefined)]);
    if (!probe || probe.status !== 200 || !probe.text.includes('providers')) {
      c.close();
      return undefined;
    }
  } catch {
    c.close();
    return undefined;
  }
  // noauth: the project comes from X-Project-Id and every caller is admin, so lists filter by project.
  const project = `bench-${randomBytes(6).toString('hex')}`;
  const headers = { 'x-project-id': project };
  const oct = process.env.OCT ?? '/tmp/octavia-baseline';
  return {
    name: 'Octavia 11',
    base,
    headers,
    // The no-op network driver accepts any subnet id.
    vipSubnetId: randomUUID(),
    keepAlive: false,
    listPath: `/v2/lbaas/loadbalancers?project_id=${project}`,
    serverPids: () => {
      const api = pidFromFile(join(oct, 'run', 'uwsgi.pid'));
      const db = pidFromFile(join(oct, 'run', 'mariadb.pid'));
      return api && db ? [...processTree(api), db] : [];
    },
    // Leave the baseline as we found it. Its worker deletes asynchronously, so wait until every LB answers 404:
    // otherwise the deletes would still be using the machine's CPU while Ostia is measured.
    cleanup: async (ids, progress) => {
      progress(`Octavia 11: cascade-deleting ${ids.length} load balancers and waiting until they are gone`);
      const deadline = Date.now() + DELETE_TIMEOUT_MS;
      let next = 0;
      let left = 0;
      await Promise.all(
        Array.from({ length: p.concurrency }, async () => {
          while (next < ids.length) {
            const id = ids[next++]!;
            const url = `${base}/v2/lbaas/loadbalancers/${id}`;
            for (;;) {
              const r = await c.request('DELETE', `${url}?cascade=true`, headers);
              // 409: still PENDING_* (e.g. a create the worker has not finished); try again shortly
              if (r.status !== 409 || Date.now() > deadline) break;
              await sleep(DELETE_POLL_MS);
            }
            while ((await c.request('GET', url, headers)).status !== 404) {
              if (Date.now() > deadline) {
                left++;
                break;
              }
              await sleep(DELETE_POLL_MS);
            }
          }
        }),
      );
      if (left) progress(`Octavia 11: ${left} load balancers still not deleted after ${DELETE_TIMEOUT_MS / 1000} s`);
    },
    close: async () => c.close(),
  };
}

// --- report -------------------------------------------------------------------------------

/** Ostia against the baseline, each "how many times better" (higher is better for Ostia). */
interface Ratios {
  get_one_rps: number;
  /** Per get_lists entry. */
  get_lists_rps: number[];
  create_to_active_median: number;
  create_to_active_p90: number;
  bulk_create: number;
}

function ratios(o: TargetResult, b: TargetResult): Ratios {
  return {
    get_one_rps: o.get_one.rps / b.get_one.rps,
    get_lists_rps: o.get_lists.map((l, i) => l.rps / b.get_lists[i]!.rps),
    create_to_active_median: b.create_to_active.median_ms / o.create_to_active.median_ms,
    create_to_active_p90: b.create_to_active.p90_ms / o.create_to_active.p90_ms,
    bulk_create: b.bulk_create.seconds / o.bulk_create.seconds,
  };
}

function table(p: Params, o: TargetResult, b: TargetResult | undefined, r: Ratios | undefined): string {
  type Row = [string, (t: TargetResult) => string, ((r: Ratios) => number) | null];
  const throughputRows = (label: string, pick: (t: TargetResult) => Throughput, ratio: (r: Ratios) => number): Row[] => [
    [`${label}, c=${p.concurrency} (req/s)`, (t) => num(pick(t).rps), ratio],
    ['  latency p50 / p99 (ms)', (t) => `${num(pick(t).p50_ms)} / ${num(pick(t).p99_ms)}`, null],
    ['  server CPU per request (ms)', (t) => num(pick(t).cpu_ms_per_request, 2), null],
  ];
  const rows: Row[] = [
    ['HTTP connections', (t) => (t.keep_alive ? 'keep-alive' : 'one per request'), null],
    ...throughputRows('GET one LB', (t) => t.get_one, (r) => r.get_one_rps),
    ...o.get_lists.flatMap((l, i) => throughputRows(`GET list of ${l.items} LBs${l.fields ? ` fields=${l.fields}` : ''}`, (t) => t.get_lists[i]!, (r) => r.get_lists_rps[i]!)),
    [`create → ACTIVE median, n=${p.creates} (ms)`, (t) => num(t.create_to_active.median_ms), (r) => r.create_to_active_median],
    ['create → ACTIVE p90 (ms)', (t) => num(t.create_to_active.p90_ms), (r) => r.create_to_active_p90],
    ['  POST alone, median (ms)', (t) => num(t.create_to_active.post_median_ms), null],
    [`${lbCount(p)} LBs by ${p.concurrency} clients → all ACTIVE (s)`, (t) => num(t.bulk_create.seconds, 2), (r) => r.bulk_create],
  ];
  const w = [48, 16, 16, 10];
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('');
  const out = [line(['', o.target, b ? b.target : '', b ? 'Ostia is' : ''])];
  for (const [label, value, ratio] of rows) out.push(line([label, value(o), b ? value(b) : '', r && ratio ? `${num(ratio(r), 1)}x` : '']));
  const errorsOf = (t: TargetResult) => t.get_one.errors + t.get_lists.reduce((sum, l) => sum + l.errors, 0);
  const errors = errorsOf(o) + (b ? errorsOf(b) : 0);
  if (errors) out.push(`WARNING: ${errors} GET requests answered non-200; their rates are not comparable.`);
  return out.join('\n');
}

function scaleTable(points: readonly ScalePoint[]): string {
  const first = points[0]?.cpu_us_per_listed ?? null;
  const lines = ['Ostia, whole list walked in pages of 1000    LBs   pages  walks   CPU µs per listed LB   vs smallest'];
  for (const pt of points) {
    const ratio = first !== null && pt.cpu_us_per_listed !== null ? `${num(pt.cpu_us_per_listed / first, 2)}x` : '–';
    lines.push(`${''.padEnd(44)}${String(pt.load_balancers).padStart(6)}${num(pt.pages, 0).padStart(8)}${String(pt.walks).padStart(7)}${num(pt.cpu_us_per_listed, 1).padStart(23)}${ratio.padStart(14)}`);
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      json: { type: 'boolean', default: false },
      seconds: { type: 'string', default: '10' },
      concurrency: { type: 'string', default: '8' },
      lists: { type: 'string', default: '100,1000' },
      scale: { type: 'string', default: '' },
      creates: { type: 'string', default: '50' },
      close: { type: 'boolean', default: false },
      existing: { type: 'string', default: '0' },
      'baseline-ref': { type: 'string', default: BEFORE_FREE_ADDRESS_INDEX },
      split: { type: 'boolean', default: false },
      'database-url': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const counts = (v: string) => v.split(',').filter(Boolean).map(Number);
  const p: Params = { seconds: Number(values.seconds), concurrency: Number(values.concurrency), lists: counts(values.lists), creates: Number(values.creates), scale: counts(values.scale) };
  for (const [k, v] of Object.entries(p)) for (const n of [v].flat()) if (!Number.isFinite(n) || n <= 0) throw new Error(`--${k} must be positive numbers`);
  if (!p.lists.length) throw new Error('--lists names no list length');
  const existing = Number(values.existing);
  if (!Number.isInteger(existing) || existing < 0) throw new Error(`--existing must be a whole number, got '${values.existing}'`);
  const progress = (msg: string) => process.stderr.write(`# ${msg}\n`);
  const loadBefore = loadavg()[0]!;

  const baseline = await baselineTarget(p);
  let baselineResult: TargetResult | undefined;
  if (baseline) {
    try {
      baselineResult = await measure(baseline, p, progress);
    } finally {
      await baseline.close();
    }
  }
  const ostia = values.split ? await splitTarget(!values.close, values['database-url'] ?? process.env.OSTIA_TEST_PG_URL) : await ostiaTarget(!values.close);
  let ostiaResult: TargetResult;
  let scalePoints: ScalePoint[] = [];
  try {
    ostiaResult = await measure(ostia, p, progress);
    if (p.scale.length) scalePoints = await scale(ostia, p, progress);
  } finally {
    await ostia.close();
  }

  const atScale = existing ? await createsAtScale({ existing, creates: p.creates, concurrency: p.concurrency, baselineRef: values['baseline-ref'], keepAlive: !values.close }) : undefined;

  const r = baselineResult ? ratios(ostiaResult, baselineResult) : undefined;
  const note = baselineResult
    ? `Octavia baseline measured at ${baselineUrl()} in the same run.`
    : `Octavia baseline not running at ${baselineUrl()}, so only Ostia was measured. To compare, start it (once: install, setup) with: ` +
      `bash /work/shared/baseline/octavia-baseline.sh start   (see ${BASELINE_DOC}; OCTAVIA_BASELINE_URL or API_PORT select another endpoint)`;
  const load = { before: loadBefore, after: loadavg()[0]! };
  if (values.json) {
    process.stdout.write(JSON.stringify({ params: p, load_average: load, ostia: ostiaResult, baseline: baselineResult ?? null, ratios: r ?? null, scale: scalePoints, creates_at_scale: atScale ?? null, note }) + '\n');
  } else {
    process.stdout.write(`${table(p, ostiaResult, baselineResult, r)}\n${scalePoints.length ? `\n${scaleTable(scalePoints)}\n` : ''}${atScale ? `\n${createsAtScaleTable(atScale)}\n` : ''}\n${note}\nLoad average (1 min): ${load.before.toFixed(2)} before, ${load.after.toFixed(2)} after; the machine is shared, compare within one run.\n`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});

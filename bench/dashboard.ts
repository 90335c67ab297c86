/**
 * The dashboard in headless Chromium (Debian's, driven by playwright-core) against `ostia up`
 * holding `--lbs` load balancers (noop provider) and one amphora load balancer whose member's
 * backend the bench can make fail its health check:
 *
 *   npm run build && node dist/bench/dashboard.js [--json] [--lbs 1000] [--repeat 5] [--flips 6]
 *
 * - list: from the hash change to the load-balancer list until it is drawn (all fetched, the first rows drawn), and from a
 *   key typed into the search box until the filtered list is drawn (interactive), beside the
 *   same list fetched by `openstack loadbalancer list` (the real CLI, its start included) and by
 *   one bare `GET` of the API, measured in the same run;
 * - live: from the moment the API first answers a changed operating status (the bench asks it
 *   every 20 ms) until the open page shows it (a MutationObserver in the page stamps the time),
 *   on the list of all load balancers and on the load balancer's own page.
 */
import http from 'node:http';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { killAll, processesUnder, startOstia, type OstiaProcess } from '../test/support/ostia-process.js';
import { writeAmphoraConfig } from '../test/support/amphora-config.js';
import { launchBrowser, loggedIn } from '../test/support/browser.js';
import { OPENSTACK_BIN } from '../test/support/openstack-cli.js';
import { memberSubnetAddress, randomPort } from '../test/support/amphora-fixtures.js';
import { benchArgs, positiveInt } from './support/args.js';
import { progress } from './support/progress.js';
import { median, percentile } from './support/stats.js';
import { grid, num } from './support/table.js';

const USAGE = `Usage: node dist/bench/dashboard.js [--json] [--lbs 1000] [--repeat 5] [--flips 6]

The dashboard in headless Chromium against ostia up with --lbs load balancers: the list's render and
interaction times (--repeat runs, median) beside the CLI's and the API's list, and the delay from the API
answering a changed status to the open page showing it (--flips changes, on the list and on the detail page).
`;
const CONCURRENCY = 8;
const API_POLL_MS = 20;
const STATUS_TIMEOUT_MS = 60_000;
const run = promisify(execFile);

type Obj = Record<string, unknown>;

/** A backend whose answers the bench switches between 200 and 503, so its HTTP health check passes or fails. */
async function switchableBackend(): Promise<{ address: string; port: number; fail(v: boolean): void; close(): void }> {
  let failing = false;
  const server = http.createServer((_req, res) => {
    res.statusCode = failing ? 503 : 200;
    res.end(failing ? 'down' : 'up');
  });
  const address = memberSubnetAddress();
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  return { address, port: (server.address() as AddressInfo).port, fail: (v) => (failing = v), close: () => server.close() };
}

async function api(ostia: OstiaProcess, token: string, method: string, path: string, body?: unknown): Promise<Obj> {
  const res = await fetch(`${ostia.url}${path}`, { method, headers: { 'x-auth-token': token, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${text}`);
  return text ? (JSON.parse(text) as Obj) : {};
}

async function until<T>(probe: () => Promise<T | null | undefined | false>, what: string, intervalMs = API_POLL_MS): Promise<T> {
  const deadline = Date.now() + STATUS_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const v = await probe();
    if (v) return v;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Arms a MutationObserver in the page that stamps Date.now() when `text` first appears inside the element `selector` matches with `rowText`. */
async function armStamp(page: Page, rowSelector: string, rowText: string, text: string): Promise<void> {
  await page.evaluate(
    ({ rowSelector, rowText, text }) => {
      const w = window as unknown as { __stamp: number | null };
      w.__stamp = null;
      const seen = () => [...document.querySelectorAll(rowSelector)].some((el) => el.textContent!.includes(rowText) && el.textContent!.includes(text));
      if (seen()) return void (w.__stamp = Date.now());
      const observer = new MutationObserver(() => {
        if (seen()) {
          w.__stamp = Date.now();
          observer.disconnect();
        }
      });
      observer.observe(document.body, { subtree: true, childList: true, characterData: true });
    },
    { rowSelector, rowText, text },
  );
}

const stamp = (page: Page) => until(() => page.evaluate(() => (window as unknown as { __stamp: number | null }).__stamp), 'the page to show the change', 10);

async function main(): Promise<void> {
  const args = benchArgs({ lbs: { type: 'string', default: '1000' }, repeat: { type: 'string', default: '5' }, flips: { type: 'string', default: '6' } });
  if (!args) return void process.stdout.write(USAGE);
  const lbs = positiveInt('lbs', args.lbs);
  const repeat = positiveInt('repeat', args.repeat);
  const flips = positiveInt('flips', args.flips);
  const scratch = mkdtempSync(join(tmpdir(), 'ostia-bench-dashboard-'));
  const backend = await switchableBackend();
  const ostia = await startOstia({ extraArgs: ['--config', await writeAmphoraConfig(scratch, { amphora: { heartbeatIntervalMs: 500, heartbeatTimeoutMs: 2000 }, log: { level: 'warn' } })] });
  const browser = await launchBrowser();
  try {
    const token = await ostia.token('ostia-demo');
    const subnet = await ostia.subnetId('public-subnet');
    progress(`creating ${lbs - 1} noop load balancers and one amphora load balancer`);
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let i = next++; i < lbs - 1; i = next++) await api(ostia, token, 'POST', '/v2/lbaas/loadbalancers', { loadbalancer: { name: `lb-${String(i).padStart(5, '0')}`, vip_subnet_id: subnet, provider: 'noop' } });
      }),
    );
    const port = randomPort();
    const created = (await api(ostia, token, 'POST', '/v2/lbaas/loadbalancers', {
      loadbalancer: {
        name: 'watched',
        vip_subnet_id: subnet,
        provider: 'amphora',
        listeners: [{ protocol: 'HTTP', protocol_port: port, default_pool: { name: 'watched-pool', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members: [{ address: backend.address, protocol_port: backend.port }], healthmonitor: { type: 'HTTP', delay: 1, timeout: 1, max_retries: 1 } } }],
      },
    })).loadbalancer as Obj;
    const lbId = String(created.id);
    const lbStatus = async () => ((await api(ostia, token, 'GET', `/v2/lbaas/loadbalancers/${lbId}`)).loadbalancer as Obj).operating_status as string;
    await until(async () => (await lbStatus()) === 'ONLINE', 'the amphora load balancer to be ONLINE', 100);

    progress('the same list through the CLI and the API');
    const cliMs: number[] = [];
    const apiMs: number[] = [];
    for (let i = 0; i < repeat; i++) {
      let t0 = performance.now();
      const { stdout } = await run(OPENSTACK_BIN, ['--os-cloud', 'ostia-demo', 'loadbalancer', 'list', '-f', 'json'], { env: { ...process.env, OS_CLIENT_CONFIG_FILE: ostia.cloudsYaml }, maxBuffer: 64 << 20 });
      cliMs.push(performance.now() - t0);
      if ((JSON.parse(stdout) as unknown[]).length !== lbs) throw new Error(`the CLI listed ${(JSON.parse(stdout) as unknown[]).length} load balancers, expected ${lbs}`);
      t0 = performance.now();
      await api(ostia, token, 'GET', '/v2/lbaas/loadbalancers');
      apiMs.push(performance.now() - t0);
    }

    progress('the list in the browser');
    const { page } = await loggedIn(browser, ostia.url, { user: 'demo', password: ostia.cloud('ostia-demo').password });
    const renderMs: number[] = [];
    const interactMs: number[] = [];
    for (let i = 0; i < repeat; i++) {
      await page.evaluate(() => (location.hash = '#/elsewhere'));
      await page.getByRole('heading', { name: 'Not found' }).waitFor();
      const t0 = await page.evaluate(() => ((window as unknown as { __t0: number }).__t0 = performance.now(), (location.hash = '#/loadbalancers'), 0));
      await page.getByText(`${lbs} of ${lbs} load balancers`).waitFor();
      renderMs.push(await page.evaluate(() => performance.now() - (window as unknown as { __t0: number }).__t0) - t0);
      const search = page.getByRole('searchbox');
      await page.evaluate(() => ((window as unknown as { __t0: number }).__t0 = performance.now()));
      await search.fill(`lb-${String(Math.floor((lbs - 1) / 2)).padStart(5, '0')}`);
      await page.getByText(`1 of ${lbs} load balancers`).waitFor();
      interactMs.push(await page.evaluate(() => performance.now() - (window as unknown as { __t0: number }).__t0));
      await search.fill('');
    }

    progress(`${flips} status changes seen on the list and on the detail page`);
    const detail = (await loggedIn(browser, ostia.url, { user: 'demo', password: ostia.cloud('ostia-demo').password })).page;
    await detail.evaluate((id) => (location.hash = `#/loadbalancers/${id}`), lbId);
    await detail.getByRole('heading', { name: 'watched' }).waitFor();
    await page.evaluate(() => (location.hash = '#/loadbalancers'));
    await page.getByText(`${lbs} of ${lbs} load balancers`).waitFor();
    // The list draws its first rows only: the watched one is found as a user would, by searching (every refresh still reads all).
    await page.getByRole('searchbox').fill('watched');
    await page.getByText(`1 of ${lbs} load balancers`).waitFor();
    const listLag: number[] = [];
    const detailLag: number[] = [];
    let failing = false;
    for (let i = 0; i < flips; i++) {
      failing = !failing;
      const want = failing ? 'ERROR' : 'ONLINE';
      await armStamp(page, 'tbody tr', 'watched', want);
      await armStamp(detail, 'a.sg-node', 'watched-pool', want);
      backend.fail(failing);
      const apiSaw = await until(async () => ((await lbStatus()) === want ? Date.now() : null), `the API to answer ${want}`);
      listLag.push((await stamp(page)) - apiSaw);
      detailLag.push((await stamp(detail)) - apiSaw);
    }

    const figures = {
      lbs,
      load_average: loadavg(),
      list: { dashboard_render_ms: median(renderMs), dashboard_search_ms: median(interactMs), cli_ms: median(cliMs), api_get_ms: median(apiMs) },
      live: { list_lag_ms: { median: median(listLag), p90: percentile(listLag, 90), max: Math.max(...listLag) }, detail_lag_ms: { median: median(detailLag), p90: percentile(detailLag, 90), max: Math.max(...detailLag) } },
    };
    if (args.json) return void process.stdout.write(`${JSON.stringify(figures)}\n`);
    const f = figures.list;
    process.stdout.write(
      `The dashboard, ${lbs} load balancers, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n\n` +
        grid([
          ['list of all', 'median ms', 'vs dashboard'],
          ['dashboard: drawn', num(f.dashboard_render_ms, 0), '1.0×'],
          ['dashboard: search typed → drawn', num(f.dashboard_search_ms, 0), `${num(f.dashboard_search_ms / f.dashboard_render_ms, 2)}×`],
          ['openstack loadbalancer list', num(f.cli_ms, 0), `${num(f.cli_ms / f.dashboard_render_ms, 1)}×`],
          ['GET /v2/lbaas/loadbalancers', num(f.api_get_ms, 0), `${num(f.api_get_ms / f.dashboard_render_ms, 2)}×`],
        ]) +
        '\n\n' +
        grid([
          ['API answered → page showed', 'median ms', 'p90 ms', 'max ms'],
          ['list page', num(figures.live.list_lag_ms.median, 0), num(figures.live.list_lag_ms.p90, 0), num(figures.live.list_lag_ms.max, 0)],
          ['load balancer page', num(figures.live.detail_lag_ms.median, 0), num(figures.live.detail_lag_ms.p90, 0), num(figures.live.detail_lag_ms.max, 0)],
        ]) +
        '\n',
    );
  } finally {
    await browser.close();
    backend.close();
    // Amphorae outlive their controller by design; the bench must not leave them holding addresses.
    killAll(processesUnder(join(ostia.dataDir, 'amphorae')));
    await ostia.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();

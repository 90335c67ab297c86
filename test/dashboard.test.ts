/**
 * The dashboard in a real browser (Debian's Chromium, driven by playwright-core) against a real
 * `ostia up` with the amphora provider (local processes) and real HTTP backends: log in, create a
 * whole load balancer through the form and watch it go ACTIVE, add a member, stop a backend and
 * see its member turn ERROR and the pool DEGRADED on the open page, renew a certificate and see
 * its expiry change, and a reader who sees no write buttons and gets the API's 403 when trying.
 * Each page's screenshot is written (OSTIA_SCREENSHOT_DIR, else dist/screenshots/dashboard) once
 * the text it must show is on it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { killAll, processesUnder, startOstia, type OstiaProcess } from './support/ostia-process.js';
import { unmet } from './support/requirements.js';
import { writeAmphoraConfig } from './support/amphora-config.js';
import { collectBodies, eventually, memberSubnetAddress, randomPort, startBackend, type Backend } from './support/amphora-fixtures.js';
import { madeOnce } from './support/made-once.js';
import { PHONE, launchBrowser, loggedIn, screenshot, type Login } from './support/browser.js';
import { defaultConfig } from '../src/config.js';

type Obj = Record<string, unknown>;

describe('the dashboard in a real browser', { skip: unmet('chromium') || unmet('haproxy'), concurrency: 1, timeout: 600_000 }, () => {
  let ostia: OstiaProcess;
  let browser: Browser;
  let scratch: string;
  const backends: Backend[] = [];
  const listenerPort = randomPort();
  const pages: Page[] = [];

  const demo = (): Login => ({ user: 'demo', password: ostia.cloud('ostia-demo').password });
  const reader = (): Login => ({ user: 'demo-reader', password: ostia.cloud('ostia-reader').password });
  const admin = (): Login => ({ user: 'admin', password: ostia.cloud('ostia').password });

  async function open(login: Login, viewport?: { width: number; height: number }) {
    const session = await loggedIn(browser, ostia.url, login, viewport);
    pages.push(session.page);
    return session;
  }

  async function api(cloud: string, method: string, path: string, body?: unknown): Promise<Obj> {
    const res = await fetch(`${ostia.url}${path}`, { method, headers: { 'x-auth-token': await ostia.token(cloud), 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${text}`);
    return text ? (JSON.parse(text) as Obj) : {};
  }
  const lbOf = async (id: string) => (await api('ostia-demo', 'GET', `/v2/lbaas/loadbalancers/${id}`)).loadbalancer as Obj;
  const activeLb = (id: string) => eventually(async () => (await lbOf(id)).provisioning_status === 'ACTIVE', `load balancer ${id} ACTIVE`, 120_000, 250);

  /** A box of the status graph: its kind ("Pool") and name. */
  const graphNode = (page: Page, kind: string, name: string) => page.locator('a.sg-node').filter({ hasText: kind }).filter({ hasText: name });

  /** The whole load balancer, created through the form by the demo member, with two members; made once, by whichever test asks first. */
  const created = madeOnce(async () => {
    const { page } = await open(demo());
    await page.getByRole('link', { name: 'Create load balancer' }).click();
    await page.getByRole('heading', { name: 'Create load balancer' }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('dash-web');
    await page.getByLabel('Subnet', { exact: true }).selectOption(await ostia.subnetId('public-subnet'));
    await page.getByLabel('Port', { exact: true }).fill(String(listenerPort));
    await page.getByLabel('Pool name', { exact: true }).fill('dash-pool');
    await page.getByRole('button', { name: 'Add member' }).click();
    for (const [i, b] of backends.slice(0, 2).entries()) {
      const row = page.getByRole('group', { name: `Member ${i + 1}` });
      await row.getByLabel('Member address', { exact: true }).fill(b.address);
      await row.getByLabel('Member port', { exact: true }).fill(String(b.port));
    }
    const monitor = page.getByRole('checkbox', { name: 'Health monitor' });
    if (!(await monitor.isChecked())) await monitor.check();
    await page.getByLabel('Monitor type', { exact: true }).selectOption('HTTP');
    await page.getByLabel('Delay (s)', { exact: true }).fill('1');
    await page.getByLabel('Timeout (s)', { exact: true }).fill('1');
    await page.getByLabel('Max retries', { exact: true }).fill('1');
    await page.getByRole('button', { name: 'Create load balancer' }).click();
    await page.getByRole('heading', { name: 'dash-web' }).waitFor().catch(async (e: Error) => {
      throw new Error(`${e.message}\nthe page said: ${await page.locator('main').innerText()}`);
    });
    const id = decodeURIComponent(new URL(page.url()).hash.split('/')[2]!.split('?')[0]!);
    return { page, id };
  });

  /** The created load balancer ACTIVE with its members ONLINE, as the open page shows them. */
  const online = madeOnce(async () => {
    const { page, id } = await created();
    await activeLb(id);
    await eventually(async () => (await graphNode(page, 'Pool', 'dash-pool').innerText()).includes('ONLINE'), 'the pool ONLINE on the page', 90_000, 250);
    return { page, id };
  });

  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'ostia-dashboard-'));
    // The admin also reads project demo, to switch to it.
    const users = defaultConfig(scratch).identity.users.map((u) => (u.name === 'admin' ? { ...u, roles: { ...u.roles, demo: ['reader', 'load-balancer_observer'] } } : u));
    const config = await writeAmphoraConfig(scratch, { amphora: { heartbeatIntervalMs: 500, heartbeatTimeoutMs: 2000 }, identity: { users } });
    ostia = await startOstia({ extraArgs: ['--config', config] });
    for (const name of ['backend-a', 'backend-b', 'backend-c']) backends.push(await startBackend(name, memberSubnetAddress()));
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    for (const b of backends) await b.close();
    if (ostia) {
      // Amphorae outlive their controller by design; the run must not leave them holding addresses.
      killAll(processesUnder(join(ostia.dataDir, 'amphorae')));
      await ostia.stop();
    }
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('logs in at the embedded Keystone, lists the project, and calls nothing but its own origin', async () => {
    const { page, requests } = await open(demo());
    await screenshot(page, 'login-list', ['Load balancers', 'demo', 'Log out']);
    assert.deepEqual(
      requests.filter((u) => !u.startsWith(ostia.url)),
      [],
      'no request left the origin',
    );
    const asset = requests.find((u) => u.includes('/dashboard/assets/') && u.endsWith('.js'))!;
    const res = await fetch(asset);
    await res.arrayBuffer();
    assert.equal(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('button', { name: 'Log in' }).waitFor();
  });

  it('creates a whole load balancer through the form and shows it going ACTIVE with its members ONLINE, and its traffic', async () => {
    const { page, id } = await online();
    const lb = await lbOf(id);
    assert.equal(lb.name, 'dash-web');
    await graphNode(page, 'Load balancer', 'dash-web').filter({ hasText: 'ACTIVE' }).waitFor();
    const bodies = await collectBodies(String(lb.vip_address), listenerPort, 40);
    assert.deepEqual([...new Set(bodies)].sort(), ['backend-a', 'backend-b']);
    // The heartbeats carry the counters; the open page's next status tree shows them.
    const total = page.locator('td[data-label="Total connections"]').first();
    await eventually(async () => Number((await total.innerText()).replace(/\D/g, '')) >= 40, 'the 40 connections on the page', 60_000, 250);
    await screenshot(page, 'loadbalancer', ['dash-web', 'Status', 'Statistics', 'dash-pool', 'ONLINE']);
  });

  it("shows the API's validation message beside the field, and creates nothing", async () => {
    const { page } = await open(demo());
    const before = ((await api('ostia-demo', 'GET', '/v2/lbaas/loadbalancers')).loadbalancers as Obj[]).length;
    await page.getByRole('link', { name: 'Create load balancer' }).click();
    await page.getByLabel('Name', { exact: true }).fill('dash-bad');
    await page.getByLabel('Subnet', { exact: true }).selectOption(await ostia.subnetId('public-subnet'));
    await page.getByLabel('Port', { exact: true }).fill('99999');
    await page.getByRole('button', { name: 'Create load balancer' }).click();
    const message = page.locator('.field-error', { has: page.getByLabel('Port', { exact: true }) }).locator('.field-message');
    await message.waitFor();
    assert.match(await message.innerText(), /protocol_port/);
    await screenshot(page, 'create-refused', ['Create load balancer', 'protocol_port']);
    assert.equal(((await api('ostia-demo', 'GET', '/v2/lbaas/loadbalancers')).loadbalancers as Obj[]).length, before);
  });

  it('adds a member through the member form, and the open page shows it', async () => {
    const { page, id } = await online();
    await page.getByRole('link', { name: /Add member/ }).first().click();
    await page.getByRole('heading', { name: /member/i }).first().waitFor();
    const c = backends[2]!;
    await page.getByLabel('Name', { exact: true }).fill('member-c');
    await page.getByLabel('Address', { exact: true }).fill(c.address);
    await page.getByLabel('Port', { exact: true }).fill(String(c.port));
    await screenshot(page, 'member-form', ['Address']);
    await page.getByRole('button', { name: 'Create member' }).click();
    await page.getByRole('heading', { name: 'dash-web' }).waitFor();
    await graphNode(page, 'Member', 'member-c').waitFor({ timeout: 60_000 });
    await activeLb(id);
  });

  it("edits a listener's name and deletes a member through the page, each change shown when the API has it", async () => {
    const { id } = await online();
    const lb = await lbOf(id);
    const listenerId = String((lb.listeners as Obj[])[0]!.id);
    const poolId = String((lb.pools as Obj[])[0]!.id);
    const spare = (await api('ostia-demo', 'POST', `/v2/lbaas/pools/${poolId}/members`, { member: { name: 'spare', address: backends[0]!.address, protocol_port: backends[0]!.port + 1 } })).member as Obj;
    await activeLb(id);
    const { page } = await open(demo());
    await page.evaluate((lbId) => (location.hash = `#/loadbalancers/${lbId}`), id);
    await graphNode(page, 'Member', 'spare').waitFor();
    page.once('dialog', (d) => void d.accept());
    await page.getByRole('button', { name: 'Delete member spare' }).click();
    await eventually(async () => (await graphNode(page, 'Member', 'spare').count()) === 0, 'the deleted member gone from the page', 60_000, 250);
    const members = (await api('ostia-demo', 'GET', `/v2/lbaas/pools/${poolId}/members`)).members as Obj[];
    assert.equal(members.some((m) => m.id === spare.id), false);
    await activeLb(id);
    await page.getByRole('link', { name: /^Edit listener / }).first().click();
    await page.getByLabel('Name', { exact: true }).fill('web-renamed');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await graphNode(page, 'Listener', 'web-renamed').waitFor();
    assert.equal(((await api('ostia-demo', 'GET', `/v2/lbaas/listeners/${listenerId}`)).listener as Obj).name, 'web-renamed');
    await activeLb(id);
  });

  it('a stopped backend turns its member ERROR and the pool DEGRADED on the open page, without a reload and with one request per refresh', async () => {
    const { id } = await online();
    await activeLb(id);
    // A page of its own, settled (ACTIVE, its lists read) before the backend stops: earlier tests' changes are behind it.
    const { page } = await open(demo());
    await page.evaluate((lbId) => (location.hash = `#/loadbalancers/${lbId}`), id);
    await graphNode(page, 'Pool', 'dash-pool').filter({ hasText: 'ONLINE' }).waitFor();
    await page.getByRole('heading', { name: 'Pools' }).waitFor();
    await page.getByRole('cell', { name: backends[1]!.address, exact: false }).first().waitFor();
    await page.evaluate(() => ((window as unknown as { unreloaded: boolean }).unreloaded = true));
    const requests: string[] = [];
    const onRequest = (r: { url(): string }) => requests.push(new URL(r.url()).pathname);
    page.on('request', onRequest);
    await backends[1]!.close();
    await eventually(async () => (await graphNode(page, 'Pool', 'dash-pool').innerText()).includes('DEGRADED'), 'the pool DEGRADED on the page', 90_000, 250);
    const member = await eventually<Obj | null>(async () => {
      const members = (await api('ostia-demo', 'GET', `/v2/lbaas/pools/${(((await lbOf(id)).pools as Obj[])[0]!).id}/members`)).members as Obj[];
      return members.find((m) => m.address === backends[1]!.address && m.protocol_port === backends[1]!.port) ?? null;
    }, 'the stopped backend member');
    await eventually(async () => (await page.locator(`a.sg-node[href$="${String(member!.id)}"]`).innerText()).includes('ERROR'), 'the member ERROR on the page', 30_000, 250);
    page.off('request', onRequest);
    assert.equal(await page.evaluate(() => (window as unknown as { unreloaded?: boolean }).unreloaded), true, 'the page was not reloaded');
    const perPath = new Map<string, number>();
    for (const p of requests) perPath.set(p, (perPath.get(p) ?? 0) + 1);
    const statusPath = `/v2/lbaas/loadbalancers/${id}/status`;
    // The project's event stream says when a status changed; the tree is read again then (and at a slow pace for counters).
    assert.ok((perPath.get(statusPath) ?? 0) >= 1, `the status tree was read again after the change: ${JSON.stringify([...perPath])}`);
    // The lists below the graph are read again only when the tree shows a change, never polled per object.
    const polled = [...perPath].filter(([path, n]) => path !== statusPath && n > 1);
    assert.deepEqual(polled, [], 'nothing but the status tree is asked more than once');
    await screenshot(page, 'loadbalancer-degraded', ['DEGRADED', 'ERROR']);
  });

  it('a reader sees no write buttons, and a write tried anyway gets the API’s 403 shown', async () => {
    const { id } = await online();
    const { page } = await open(reader());
    await page.getByRole('link', { name: 'dash-web' }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'Create load balancer' }).count(), 0);
    await page.getByRole('link', { name: 'dash-web' }).click();
    await page.getByRole('heading', { name: 'dash-web' }).waitFor();
    await page.getByRole('heading', { name: 'Pools' }).waitFor();
    for (const name of [/^Delete/, /^Edit/, /^Failover/]) assert.equal(await page.getByRole('button', { name }).count() + (await page.getByRole('link', { name }).count()), 0, `no ${name} for a reader`);
    assert.equal(await page.getByRole('link', { name: /^Add / }).count(), 0);
    await screenshot(page, 'reader-loadbalancer', ['dash-web', 'Pools']);
    await page.evaluate((lb) => (location.hash = `#/edit/loadbalancer/${lb}`), id);
    await page.getByText('the API will refuse it').waitFor();
    await page.getByLabel('Name', { exact: true }).fill('renamed-by-a-reader');
    await page.getByRole('button', { name: 'Submit anyway' }).click();
    await page.getByText('Policy does not allow this request to be performed.').waitFor();
    assert.equal((await lbOf(id)).name, 'dash-web');
  });

  it('switches project: the admin, a reader in project demo, sees that project as a reader does', async () => {
    await online();
    const { page } = await open(admin());
    await page.getByRole('link', { name: 'Amphorae' }).waitFor();
    await page.getByRole('combobox', { name: 'Project' }).selectOption({ label: 'demo' });
    // No admin page in a project where the admin is a reader: the token was rescoped with that project's roles.
    await page.getByRole('link', { name: 'Amphorae' }).waitFor({ state: 'detached' });
    await page.getByRole('link', { name: 'dash-web' }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'Create load balancer' }).count(), 0);
    await page.getByRole('combobox', { name: 'Project' }).selectOption({ label: 'admin' });
    await page.getByRole('link', { name: 'Amphorae' }).waitFor();
  });

  it('is readable on a phone-width screen', async () => {
    const { id } = await online();
    const { page } = await open(demo(), PHONE);
    await screenshot(page, 'phone-list', ['Load balancers', 'dash-web']);
    await page.getByRole('link', { name: 'dash-web' }).click();
    await screenshot(page, 'phone-loadbalancer', ['dash-web', 'Status']);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow} px at ${PHONE.width} px`);
    assert.ok(id);
  });

  it('is keyboard navigable: Tab reaches the navigation and Enter follows a link', async () => {
    const { page } = await open(demo());
    let reached = '';
    for (let i = 0; i < 12 && reached !== 'Quotas'; i++) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate(() => document.activeElement?.textContent?.trim() ?? '');
    }
    assert.equal(reached, 'Quotas');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: /Quota/, level: 1 }).waitFor();
  });

  it('admin pages: amphorae with their last heartbeat, a failover with its reason and steps, quotas, capacity and advice', async () => {
    const { id } = await online();
    const amphorae = ((await api('ostia', 'GET', `/v2/octavia/amphorae?loadbalancer_id=${id}`)).amphorae as Obj[]).filter((a) => a.status !== 'DELETED');
    const { page } = await open(admin());
    await page.getByRole('link', { name: 'Amphorae' }).click();
    await page.getByRole('heading', { name: 'Amphorae', level: 1 }).waitFor();
    await screenshot(page, 'amphorae', ['Amphorae', String(amphorae[0]!.lb_network_ip), 'ago']);
    await api('ostia', 'PUT', `/v2/octavia/amphorae/${String(amphorae[0]!.id)}/failover`);
    await activeLb(id);
    await page.getByRole('link', { name: 'Failovers' }).click();
    await page.getByRole('heading', { name: 'Failovers', level: 1 }).waitFor();
    await screenshot(page, 'failovers', ['Failovers', 'requested']);
    await page.getByRole('link', { name: 'Quotas' }).click();
    await screenshot(page, 'quotas', ['Quotas', 'Load balancers', 'unlimited']);
    await page.getByRole('link', { name: 'Capacity & advice' }).click();
    await screenshot(page, 'operator', ['Capacity', 'amphora']);
  });

  it('renewing a certificate through the page changes the expiry it shows', async () => {
    const { id } = await online();
    const soon = selfSigned(scratch, 'www.example.com', 20);
    const stored = await api('ostia-demo', 'POST', '/key-manager/v1/secrets', { name: 'www-soon', payload: soon.p12.toString('base64'), payload_content_type: 'application/octet-stream', payload_content_encoding: 'base64', secret_type: 'opaque' });
    await api('ostia-demo', 'POST', '/v2/lbaas/listeners', { listener: { loadbalancer_id: id, name: 'tls', protocol: 'TERMINATED_HTTPS', protocol_port: randomPort(), default_tls_container_ref: stored.secret_ref } });
    await activeLb(id);
    const { page } = await open(demo());
    await page.getByRole('link', { name: 'Certificates' }).click();
    await page.getByRole('heading', { name: 'Certificates', level: 1 }).waitFor();
    await screenshot(page, 'certificates', ['www.example.com', soon.notAfter]);
    const later = selfSigned(scratch, 'www.example.com', 400);
    await page.getByRole('link', { name: /^Renew the default certificate www\.example\.com/ }).click();
    await page.getByRole('radio', { name: /PKCS#12 file/ }).check();
    await page.getByLabel('PKCS#12 file', { exact: true }).setInputFiles({ name: 'www.p12', mimeType: 'application/x-pkcs12', buffer: later.p12 });
    await page.getByRole('button', { name: 'Store and renew' }).click();
    await page.getByText(later.notAfter).waitFor({ timeout: 120_000 });
    await screenshot(page, 'certificates-renewed', ['www.example.com', later.notAfter]);
  });
});

/** A self-signed certificate for `cn` valid `days` days, as a PKCS#12 bundle (no password), and its not-after date (YYYY-MM-DD). */
function selfSigned(dir: string, cn: string, days: number): { p12: Buffer; notAfter: string } {
  const base = join(dir, `cert-${days}`);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${base}.key`, '-out', `${base}.pem`, '-days', String(days), '-subj', `/CN=${cn}`, '-addext', `subjectAltName=DNS:${cn}`], { stdio: 'ignore' });
  execFileSync('openssl', ['pkcs12', '-export', '-inkey', `${base}.key`, '-in', `${base}.pem`, '-out', `${base}.p12`, '-passout', 'pass:'], { stdio: 'ignore' });
  const end = execFileSync('openssl', ['x509', '-in', `${base}.pem`, '-noout', '-enddate'], { encoding: 'utf8' }).trim().replace('notAfter=', '');
  return { p12: readFileSync(`${base}.p12`), notAfter: new Date(end).toISOString().slice(0, 10) };
}

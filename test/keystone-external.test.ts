/**
 * identity.mode 'external' against Debian's real Keystone: the real `openstack` CLI logs in at
 * Keystone, finds Ostia through Keystone's catalog, and Ostia validates every token with
 * Keystone (as keystonemiddleware does) before applying Octavia's RBAC to the project and
 * roles Keystone reports. Ostia runs as CI pipelines run Octavia: no-op networking (any UUID is
 * a subnet) and no-op amphora machinery, with the default policy.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { KEYSTONE_REGION, startKeystone, type KeystoneAccount, type RealKeystone } from './support/keystone.js';
import { unmet } from './support/requirements.js';
import { startOstiaServer, type OstiaServer } from './support/ostia-process.js';
import { OpenstackCli, waitActive } from './support/openstack-cli.js';
import { launchBrowser, loggedIn } from './support/browser.js';

type Obj = Record<string, unknown>;

const FORBIDDEN = /Policy does not allow this request to be performed\. \(HTTP 403\)/;

describe('external identity: ostia up validating tokens of a real Keystone', { skip: unmet('keystone') || unmet('openstack-cli'), timeout: 240_000 }, () => {
  let keystone: RealKeystone;
  let ostia: OstiaServer;
  let cli: OpenstackCli;
  let scratch: string;

  /** One cloud per account, all password auth at the real Keystone; none names Ostia. */
  function writeCloudsYaml(accounts: Record<string, KeystoneAccount>): string {
    const clouds = Object.fromEntries(
      Object.entries(accounts).map(([name, { userId: _u, projectId: _p, ...auth }]) => [
        name,
        { auth_type: 'password', auth, identity_api_version: 3, region_name: KEYSTONE_REGION, interface: 'public' },
      ]),
    );
    const file = join(scratch, 'clouds.yaml');
    writeFileSync(file, stringify({ clouds }), { mode: 0o600 });
    return file;
  }

  function writeOstiaConfig(): string {
    const service = keystone.accounts.service;
    const file = join(scratch, 'ostia.yaml');
    const identity = {
      mode: 'external',
      region: KEYSTONE_REGION,
      external: {
        authUrl: keystone.authUrl,
        username: service.username,
        password: service.password,
        projectName: service.project_name,
        userDomainName: service.user_domain_name,
        projectDomainName: service.project_domain_name,
        cacheSeconds: 60,
      },
    };
    const testMode = { network: { driver: 'noop' }, compute: { driver: 'noop' }, api: { enabledProviders: ['noop', 'amphora'], defaultProvider: 'noop' } };
    writeFileSync(file, stringify({ identity, ...testMode, log: { level: 'warn' } }), { mode: 0o600 });
    return file;
  }

  const list = (cloud: string) => cli.json<Obj[]>(cloud, ['loadbalancer', 'list']);
  const ids = (lbs: Obj[]) => lbs.map((lb) => lb.id).sort();

  /** One load balancer per member project, created by whichever test needs them first. */
  let tenantLbs: Promise<{ lb1: Obj; lb2: Obj }> | undefined;
  const ensureTenantLbs = (): Promise<{ lb1: Obj; lb2: Obj }> =>
    (tenantLbs ??= (async () => {
      const create = (cloud: string, name: string) =>
        cli.json<Obj>(cloud, ['loadbalancer', 'create', '--name', name, '--vip-subnet-id', 'public-subnet', '--wait']);
      const [lb1, lb2] = await Promise.all([create('member1', 'ext-lb-1'), create('member2', 'ext-lb-2')]);
      return { lb1, lb2 };
    })());
  const lbIds = async () => {
    const { lb1, lb2 } = await ensureTenantLbs();
    return { tenant1: String(lb1.id), tenant2: String(lb2.id) };
  };

  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'ostia-external-'));
    const started = Date.now();
    keystone = await startKeystone();
    console.log(`# real Keystone up and provisioned in ${((Date.now() - started) / 1000).toFixed(1)} s at ${keystone.url}`);
    ostia = await startOstiaServer({ extraArgs: ['--config', writeOstiaConfig()] });
    await keystone.registerOstia(ostia.url);
    const { admin, member1, member2, reader1, plainMember1 } = keystone.accounts;
    cli = new OpenstackCli(writeCloudsYaml({ admin, member1, member2, reader1, plainMember1 }), { concurrency: 4, timeoutMs: 60_000 });
  });

  after(async () => {
    await ostia?.stop();
    await keystone?.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
    if (cli) console.log(`# ${cli.calls.length} openstack calls: ${cli.calls.map((c) => `${c.ms} ms ${c.command}`).join(' | ')}`);
  });

  it('serves no embedded Keystone and writes no clouds.yaml in external mode', async () => {
    const res = await fetch(`${ostia.url}/identity/v3`);
    await res.arrayBuffer();
    assert.equal(res.status, 404);
    assert.equal(existsSync(join(ostia.dataDir, 'clouds.yaml')), false);
  });

  it("the dashboard logs in at the real Keystone through this API process's relay, and shows the member's project only", { skip: unmet('chromium') }, async () => {
    const { lb1, lb2 } = await ensureTenantLbs();
    const config = (await (await fetch(`${ostia.url}/dashboard/config`)).json()) as Obj;
    assert.equal(config.identity, '/dashboard/identity/v3');
    const member1 = keystone.accounts.member1;
    const browser = await launchBrowser();
    try {
      const { page, requests } = await loggedIn(browser, ostia.url, { user: member1.username, password: member1.password, project: member1.project_name });
      await page.getByRole('link', { name: String(lb1.name) }).waitFor();
      assert.equal(await page.getByRole('link', { name: String(lb2.name) }).count(), 0);
      assert.deepEqual(requests.filter((u) => !u.startsWith(ostia.url)), [], 'the page called nothing but its own origin');
      const wrong = await browser.newPage();
      await wrong.goto(`${ostia.url}/dashboard`);
      await wrong.getByLabel('User').fill(member1.username);
      await wrong.getByLabel('Password').fill('not-the-password');
      await wrong.getByRole('button', { name: 'Log in' }).click();
      await wrong.getByText('Keystone refused the user name or password').waitFor();
    } finally {
      await browser.close();
    }
  });

  it('members create load balancers in their own projects, found through the real catalog', async () => {
    const { lb1, lb2 } = await ensureTenantLbs();
    for (const [lb, account, name] of [
      [lb1, keystone.accounts.member1, 'ext-lb-1'],
      [lb2, keystone.accounts.member2, 'ext-lb-2'],
    ] as const) {
      assert.equal(lb.name, name);
      assert.equal(lb.provisioning_status, 'ACTIVE');
      // The project id is Keystone's, taken from the validated token.
      assert.equal(lb.project_id, account.projectId);
      assert.match(String(lb.vip_address), /^127\.16\./);
    }
  });

  it("a member lists and shows its project's load balancer only", async () => {
    const { tenant1 } = await lbIds();
    const [mine, shown] = await Promise.all([list('member1'), cli.json<Obj>('member1', ['loadbalancer', 'show', 'ext-lb-1'])]);
    assert.deepEqual(ids(mine), [tenant1]);
    assert.equal(shown.id, tenant1);
    assert.equal(shown.project_id, keystone.accounts.member1.projectId);
    assert.equal(shown.provisioning_status, 'ACTIVE');
  });

  it('a member of another project neither lists nor shows it', async () => {
    const { tenant1, tenant2 } = await lbIds();
    const [theirs, byId, byName] = await Promise.all([
      list('member2'),
      cli.fails('member2', ['loadbalancer', 'show', tenant1, '-f', 'json']),
      cli.fails('member2', ['loadbalancer', 'show', 'ext-lb-1', '-f', 'json']),
    ]);
    assert.deepEqual(ids(theirs), [tenant2]);
    // By id the client GETs the object: Octavia refuses another project's with 403. By name it is simply not found.
    assert.match(byId, FORBIDDEN);
    assert.match(byName, /Unable to locate ext-lb-1 in loadbalancers/);
  });

  it('a reader lists its project but cannot create (403)', async () => {
    const { tenant1 } = await lbIds();
    const [seen, refused] = await Promise.all([
      list('reader1'),
      cli.fails('reader1', ['loadbalancer', 'create', '--name', 'ext-lb-reader', '--vip-subnet-id', 'public-subnet', '-f', 'json']),
    ]);
    assert.deepEqual(ids(seen), [tenant1]);
    assert.match(refused, FORBIDDEN);
  });

  it('the cloud admin sees both projects', async () => {
    const { tenant1, tenant2 } = await lbIds();
    const all = await list('admin');
    assert.deepEqual(ids(all), [tenant1, tenant2].sort());
  });

  it('an unknown or missing token gets 401 from Ostia', async () => {
    for (const headers of [{ 'x-auth-token': 'gAAAAABbogus-not-a-fernet-token' }, {} as Record<string, string>]) {
      const res = await fetch(`${ostia.url}/v2/lbaas/loadbalancers`, { headers });
      assert.equal(res.status, 401, JSON.stringify(headers));
      // keystonemiddleware's body, as Octavia answers it.
      assert.deepEqual(await res.json(), { error: { code: 401, title: 'Unauthorized', message: 'The request you have made requires authentication.' } });
    }
  });

  it("Keystone's plain member role is refused everything under the default policy, as in Octavia 11", async () => {
    const refusals = await Promise.all(
      [['loadbalancer', 'list'], ['loadbalancer', 'provider', 'list'], ['loadbalancer', 'flavor', 'list'],
        ['loadbalancer', 'create', '--name', 'plain', '--vip-subnet-id', randomUUID()]].map((args) => cli.fails('plainMember1', [...args, '-f', 'json'])),
    );
    for (const refused of refusals) assert.match(refused, FORBIDDEN);
  });

  /** What a tool written for Octavia's no-op drivers does: every resource type on random UUIDs. */
  async function randomUuidTree(provider: 'noop' | 'amphora'): Promise<void> {
    const cloud = 'member1';
    const show = (args: string[]) => cli.json<Obj>(cloud, [...args]);
    const lb = await show(['loadbalancer', 'create', '--name', `rand-${provider}`, '--vip-subnet-id', randomUUID(), '--provider', provider, '--wait']);
    assert.deepEqual([lb.provider, lb.provisioning_status, lb.operating_status], [provider, 'ACTIVE', 'OFFLINE']);
    const byNetwork = await show(['loadbalancer', 'create', '--name', `rand-${provider}-net`, '--vip-network-id', randomUUID(), '--vip-address', '2001:db8:77::7', '--provider', provider, '--wait']);
    assert.deepEqual([byNetwork.vip_address, byNetwork.provisioning_status], ['2001:db8:77::7', 'ACTIVE']);
    const listener = await show(['loadbalancer', 'listener', 'create', String(lb.id), '--name', `l-${provider}`, '--protocol', 'HTTP', '--protocol-port', '80', '--wait']);
    const pool = await show(['loadbalancer', 'pool', 'create', '--listener', String(listener.id), '--protocol', 'HTTP', '--lb-algorithm', 'ROUND_ROBIN', '--wait']);
    const member = (address: string, ...extra: string[]) =>
      show(['loadbalancer', 'member', 'create', String(pool.id), '--address', address, '--protocol-port', '8080', '--subnet-id', randomUUID(), ...extra, '--wait']);
    const members = [await member('192.0.2.10'), await member('2001:db8:78::10', '--disable')];
    const hm = await show(['loadbalancer', 'healthmonitor', 'create', String(pool.id), '--delay', '5', '--timeout', '3', '--max-retries', '3', '--type', 'HTTP', '--wait']);
    const policy = await show(['loadbalancer', 'l7policy', 'create', String(listener.id), '--action', 'REJECT', '--wait']);
    // octaviaclient's `l7rule create --wait` re-reads with the ids swapped (see cli-lifecycle): wait by hand.
    const rule = await show(['loadbalancer', 'l7rule', 'create', String(policy.id), '--type', 'PATH', '--compare-type', 'STARTS_WITH', '--value', '/x']);
    await waitActive(cli, cloud, String(lb.id));
    const tree = JSON.parse((await cli.ok(cloud, ['loadbalancer', 'status', 'show', String(lb.id)])).stdout) as { loadbalancer: Obj };
    const l = tree.loadbalancer as any;
    // Octavia 11 with no-op drivers: nothing reports health.
    assert.deepEqual([l.provisioning_status, l.operating_status], ['ACTIVE', 'OFFLINE']);
    assert.equal(l.listeners[0].operating_status, 'OFFLINE');
    assert.equal(l.listeners[0].pools[0].health_monitor.operating_status, 'ONLINE');
    // Members created before the monitor stay NO_MONITOR whatever their admin state, as in Octavia 11.
    const treeMembers = l.listeners[0].pools[0].members as Obj[];
    assert.deepEqual(treeMembers.map((m) => m.id).sort(), members.map((m) => m.id).sort());
    assert.deepEqual(treeMembers.map((m) => [m.provisioning_status, m.operating_status]), [['ACTIVE', 'NO_MONITOR'], ['ACTIVE', 'NO_MONITOR']]);
    assert.equal(l.listeners[0].pools[0].health_monitor.id, hm.id);
    const [shownPolicy, shownRule] = await Promise.all([
      show(['loadbalancer', 'l7policy', 'show', String(policy.id)]),
      show(['loadbalancer', 'l7rule', 'show', String(policy.id), String(rule.id)]),
    ]);
    assert.deepEqual([shownPolicy.provisioning_status, shownPolicy.operating_status, shownRule.provisioning_status], ['ACTIVE', 'ONLINE', 'ACTIVE']);
    if (provider === 'amphora') {
      const amphorae = await cli.json<Obj[]>('admin', ['loadbalancer', 'amphora', 'list', '--loadbalancer', String(lb.id)]);
      assert.deepEqual(amphorae.map((a) => [a.role, a.status]), [['STANDALONE', 'ALLOCATED']]);
    }
    for (const id of [lb.id, byNetwork.id]) await cli.ok(cloud, ['loadbalancer', 'delete', '--cascade', String(id), '--wait']);
  }

  it('with no-op networking every resource type is created on random UUIDs: noop provider', () => randomUuidTree('noop'));
  it('with no-op networking every resource type is created on random UUIDs: amphora provider under compute noop', () => randomUuidTree('amphora'));
});

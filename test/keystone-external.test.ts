/**
 * identity.mode 'external' against Debian's real Keystone: the real `openstack` CLI logs in at
 * Keystone, finds Ostia through Keystone's catalog, and Ostia validates every token with
 * Keystone (as keystonemiddleware does) before applying Octavia's RBAC to the project and
 * roles Keystone reports.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { KEYSTONE_REGION, startKeystone, type KeystoneAccount, type RealKeystone } from './support/keystone.js';
import { unmet } from './support/requirements.js';
import { startOstiaServer, type OstiaServer } from './support/ostia-process.js';
import { NOOP_PROVIDERS } from './support/harness.js';
import { OpenstackCli } from './support/openstack-cli.js';

type Obj = Record<string, unknown>;

const FORBIDDEN = /Policy does not allow this request to be performed\. \(HTTP 403\)/;

describe('external identity: ostia up validating tokens of a real Keystone', { skip: unmet('keystone') || unmet('openstack-cli'), timeout: 240_000 }, () => {
  let keystone: RealKeystone;
  let ostia: OstiaServer;
  let cli: OpenstackCli;
  let scratch: string;
  const lbIds: Record<'tenant1' | 'tenant2', string> = { tenant1: '', tenant2: '' };

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
    writeFileSync(file, stringify({ identity, ...NOOP_PROVIDERS, log: { level: 'warn' } }), { mode: 0o600 });
    return file;
  }

  const list = (cloud: string) => cli.json<Obj[]>(cloud, ['loadbalancer', 'list']);
  const ids = (lbs: Obj[]) => lbs.map((lb) => lb.id).sort();

  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'ostia-external-'));
    const started = Date.now();
    keystone = await startKeystone();
    console.log(`# real Keystone up and provisioned in ${((Date.now() - started) / 1000).toFixed(1)} s at ${keystone.url}`);
    ostia = await startOstiaServer({ extraArgs: ['--config', writeOstiaConfig()] });
    await keystone.registerOstia(ostia.url);
    const { admin, member1, member2, reader1 } = keystone.accounts;
    cli = new OpenstackCli(writeCloudsYaml({ admin, member1, member2, reader1 }), { concurrency: 4, timeoutMs: 60_000 });
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

  it('members create load balancers in their own projects, found through the real catalog', async () => {
    const create = (cloud: string, name: string) =>
      cli.json<Obj>(cloud, ['loadbalancer', 'create', '--name', name, '--vip-subnet-id', 'public-subnet', '--wait']);
    const [lb1, lb2] = await Promise.all([create('member1', 'ext-lb-1'), create('member2', 'ext-lb-2')]);
    for (const [lb, account, name] of [
      [lb1!, keystone.accounts.member1, 'ext-lb-1'],
      [lb2!, keystone.accounts.member2, 'ext-lb-2'],
    ] as const) {
      assert.equal(lb.name, name);
      assert.equal(lb.provisioning_status, 'ACTIVE');
      // The project id is Keystone's, taken from the validated token.
      assert.equal(lb.project_id, account.projectId);
      assert.match(String(lb.vip_address), /^127\.16\./);
    }
    lbIds.tenant1 = String(lb1!.id);
    lbIds.tenant2 = String(lb2!.id);
  });

  it("a member lists and shows its project's load balancer only", async () => {
    const [mine, shown] = await Promise.all([list('member1'), cli.json<Obj>('member1', ['loadbalancer', 'show', 'ext-lb-1'])]);
    assert.deepEqual(ids(mine), [lbIds.tenant1]);
    assert.equal(shown.id, lbIds.tenant1);
    assert.equal(shown.project_id, keystone.accounts.member1.projectId);
    assert.equal(shown.provisioning_status, 'ACTIVE');
  });

  it('a member of another project neither lists nor shows it', async () => {
    const [theirs, byId, byName] = await Promise.all([
      list('member2'),
      cli.fails('member2', ['loadbalancer', 'show', lbIds.tenant1, '-f', 'json']),
      cli.fails('member2', ['loadbalancer', 'show', 'ext-lb-1', '-f', 'json']),
    ]);
    assert.deepEqual(ids(theirs), [lbIds.tenant2]);
    // By id the client GETs the object: Octavia refuses another project's with 403. By name it is simply not found.
    assert.match(byId, FORBIDDEN);
    assert.match(byName, /Unable to locate ext-lb-1 in loadbalancers/);
  });

  it('a reader lists its project but cannot create (403)', async () => {
    const [seen, refused] = await Promise.all([
      list('reader1'),
      cli.fails('reader1', ['loadbalancer', 'create', '--name', 'ext-lb-reader', '--vip-subnet-id', 'public-subnet', '-f', 'json']),
    ]);
    assert.deepEqual(ids(seen), [lbIds.tenant1]);
    assert.match(refused, FORBIDDEN);
  });

  it('the cloud admin sees both projects', async () => {
    const all = await list('admin');
    assert.deepEqual(ids(all), [lbIds.tenant1, lbIds.tenant2].sort());
  });

  it('an unknown or missing token gets 401 from Ostia', async () => {
    for (const headers of [{ 'x-auth-token': 'gAAAAABbogus-not-a-fernet-token' }, {} as Record<string, string>]) {
      const res = await fetch(`${ostia.url}/v2/lbaas/loadbalancers`, { headers });
      assert.equal(res.status, 401, JSON.stringify(headers));
      // keystonemiddleware's body, as Octavia answers it.
      assert.deepEqual(await res.json(), { error: { code: 401, title: 'Unauthorized', message: 'The request you have made requires authentication.' } });
    }
  });
});

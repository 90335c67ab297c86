/**
 * compute.driver noop end to end: a real `ostia up` whose amphora provider runs its flows with
 * Octavia's no-op compute and amphora drivers, driven by the real `openstack` CLI. An
 * ACTIVE_STANDBY load balancer gets its MASTER and BACKUP rows; the amphora commands (list,
 * show, configure, failover, stats show) work on them; and no agent or HAProxy process is ever
 * started.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processesUnder, startOstia, type OstiaProcess } from './support/ostia-process.js';
import { unmet } from './support/requirements.js';
import { writeAmphoraConfig } from './support/amphora-config.js';
import { OpenstackCli, waitActive } from './support/openstack-cli.js';

const ADMIN = 'ostia';
const DEMO = 'ostia-demo';

type Obj = Record<string, unknown>;

/** The processes `ostia up` started itself. */
function childrenOf(pid: number): string[] {
  try {
    return execFileSync('pgrep', ['-a', '-P', String(pid)], { encoding: 'utf8' }).trim().split('\n');
  } catch {
    return [];
  }
}

describe('compute.driver noop through the openstack CLI', { skip: unmet('openstack-cli'), concurrency: 1 }, () => {
  let ostia: OstiaProcess;
  let cli: OpenstackCli;
  let configDir: string;

  /** The ACTIVE_STANDBY flavor and the load balancer built with it, made by whichever test needs them first. */
  let flavor: Promise<string> | undefined;
  const ensureFlavor = (): Promise<string> =>
    (flavor ??= (async () => {
      const profile = await cli.json(ADMIN, ['loadbalancer', 'flavorprofile', 'create', '--name', 'ha', '--provider', 'amphora', '--flavor-data', '{"loadbalancer_topology": "ACTIVE_STANDBY"}']);
      await cli.json(ADMIN, ['loadbalancer', 'flavor', 'create', '--name', 'ha', '--flavorprofile', String(profile.id), '--enable']);
      return 'ha';
    })());
  let haLb: Promise<Obj> | undefined;
  const ensureLb = (): Promise<Obj> =>
    (haLb ??= (async () => {
      const [name, subnet] = await Promise.all([ensureFlavor(), ostia.subnetId('public-subnet')]);
      return cli.json<Obj>(DEMO, ['loadbalancer', 'create', '--name', 'noop-ha', '--vip-subnet-id', subnet, '--flavor', name, '--wait']);
    })());

  const amphorae = async (lb: Obj) =>
    (await cli.json<Obj[]>(ADMIN, ['loadbalancer', 'amphora', 'list', '--loadbalancer', String(lb.id)])).sort((a, b) => String(a.role).localeCompare(String(b.role)));

  before(async () => {
    configDir = mkdtempSync(join(tmpdir(), 'ostia-amphora-noop-'));
    const configFile = await writeAmphoraConfig(configDir, { compute: { driver: 'noop' } });
    ostia = await startOstia({ extraArgs: ['--config', configFile] });
    cli = new OpenstackCli(ostia.cloudsYaml, { concurrency: 2 });
  });

  after(async () => {
    await ostia?.stop();
    if (configDir) rmSync(configDir, { recursive: true, force: true });
  });

  it('says at start and in the provider list that it is a test mode without a data plane', { timeout: 120_000 }, async () => {
    assert.match(ostia.logTail(), /compute\.driver noop is a test mode with no data plane/);
    const providers = await cli.json<Obj[]>(DEMO, ['loadbalancer', 'provider', 'list']);
    const amphora = providers.find((p) => p.name === 'amphora')!;
    assert.match(String(amphora.description), /\(test mode: no-op compute and amphora drivers; no data plane\)$/);
  });

  it('builds an ACTIVE_STANDBY load balancer as a MASTER and a BACKUP that stay OFFLINE', { timeout: 180_000 }, async () => {
    const lb = await ensureLb();
    assert.equal(lb.provisioning_status, 'ACTIVE');
    assert.equal(lb.operating_status, 'OFFLINE');
    const [backup, master, ...others] = await amphorae(lb);
    assert.equal(others.length, 0);
    assert.deepEqual([master!.role, master!.status, backup!.role, backup!.status], ['MASTER', 'ALLOCATED', 'BACKUP', 'ALLOCATED']);
    const shown = await cli.json(ADMIN, ['loadbalancer', 'amphora', 'show', String(master!.id)]);
    assert.deepEqual([shown.vrrp_priority, shown.vrrp_id, shown.vrrp_ip, shown.ha_ip, shown.ha_port_id], [100, 1, lb.vip_address, lb.vip_address, lb.vip_port_id]);
    assert.match(String(shown.compute_id), /^noop-/);
    assert.ok(shown.cert_expiration);
    const stats = await cli.json(DEMO, ['loadbalancer', 'stats', 'show', String(lb.id)]);
    assert.deepEqual(stats, { active_connections: 0, bytes_in: 0, bytes_out: 0, request_errors: 0, total_connections: 0 });
  });

  it('configures and fails over an amphora; its stats are not found, as in Octavia', { timeout: 180_000 }, async () => {
    const lb = await ensureLb();
    const [backup, master] = await amphorae(lb);
    await cli.ok(ADMIN, ['loadbalancer', 'amphora', 'configure', String(master!.id)]);
    const stats = await cli.run(ADMIN, ['loadbalancer', 'amphora', 'stats', 'show', String(master!.id)]);
    assert.notEqual(stats.code, 0);
    assert.match(stats.stderr, new RegExp(`Amphora stats for ${String(master!.id)} not found`));

    await cli.ok(ADMIN, ['loadbalancer', 'amphora', 'failover', String(master!.id)]);
    await waitActive(cli, ADMIN, String(lb.id));
    const [backup2, master2, ...others] = await amphorae(lb);
    assert.equal(others.length, 0);
    // The failed MASTER is rebuilt as a BACKUP; the survivor, which keepalived gives the VIP, is the MASTER.
    assert.equal(master2!.id, backup!.id);
    assert.ok(backup2!.id !== master!.id && backup2!.id !== backup!.id);
    assert.deepEqual([master2!.role, master2!.status, backup2!.role, backup2!.status], ['MASTER', 'ALLOCATED', 'BACKUP', 'ALLOCATED']);
  });

  it('started no agent and no HAProxy, and a cascade delete removes the amphorae', { timeout: 180_000 }, async () => {
    const lb = await ensureLb();
    assert.equal(existsSync(join(ostia.dataDir, 'amphorae')), false);
    assert.deepEqual(processesUnder(join(ostia.dataDir, 'amphorae')), []);
    assert.deepEqual(childrenOf(ostia.pid), []);
    await cli.ok(DEMO, ['loadbalancer', 'delete', '--cascade', '--wait', String(lb.id)]);
    // --loadbalancer needs the load balancer to exist: the whole list, then.
    const left = (await cli.json<Obj[]>(ADMIN, ['loadbalancer', 'amphora', 'list'])).filter((a) => a.loadbalancer_id === lb.id);
    assert.deepEqual(left, []);
  });
});

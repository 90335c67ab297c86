/**
 * `network.driver: noop` end to end: a real `ostia up` and the real `openstack` CLI, which looks
 * every --vip-subnet-id, --vip-network-id, --vip-port-id, --vip-qos-policy-id and member
 * --subnet-id up in Neutron before it creates: random UUIDs pass, as with Octavia's no-op
 * network driver, for IPv4 and IPv6 VIPs and members.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOstia, type OstiaProcess } from './support/ostia-process.js';
import { unmet } from './support/requirements.js';
import { OpenstackCli } from './support/openstack-cli.js';

const ADMIN = 'ostia';
type Obj = Record<string, unknown>;

describe('openstack CLI against ostia up with network.driver noop', { skip: unmet('openstack-cli'), concurrency: 3 }, () => {
  let ostia: OstiaProcess;
  let cli: OpenstackCli;
  let configDir: string;
  const show = (args: string[]) => cli.json<Obj>(ADMIN, args);

  before(async () => {
    configDir = mkdtempSync(join(tmpdir(), 'ostia-netnoop-'));
    const config = join(configDir, 'ostia.json');
    writeFileSync(config, JSON.stringify({ network: { driver: 'noop' }, api: { enabledProviders: ['noop'], defaultProvider: 'noop' } }));
    ostia = await startOstia({ extraArgs: ['--config', config] });
    cli = new OpenstackCli(ostia.cloudsYaml, { concurrency: 3 });
  });

  after(async () => {
    await ostia?.stop();
    if (configDir) rmSync(configDir, { recursive: true, force: true });
  });

  it('creates a load balancer, listener, pool and IPv4 and IPv6 members on random subnets', async () => {
    const subnet = randomUUID();
    const qos = randomUUID();
    const lb = await show(['loadbalancer', 'create', '--name', 'noop-net', '--vip-subnet-id', subnet, '--vip-qos-policy-id', qos, '--provider', 'noop', '--wait']);
    assert.equal(lb.provisioning_status, 'ACTIVE');
    assert.equal(lb.vip_subnet_id, subnet);
    assert.equal(lb.vip_qos_policy_id, qos);
    assert.equal(lb.vip_address, '198.51.100.1');
    const listener = await show(['loadbalancer', 'listener', 'create', 'noop-net', '--name', 'noop-web', '--protocol', 'HTTP', '--protocol-port', '80', '--wait']);
    assert.equal(listener.provisioning_status, 'ACTIVE');
    const pool = await show(['loadbalancer', 'pool', 'create', '--listener', 'noop-web', '--name', 'noop-pool', '--protocol', 'HTTP', '--lb-algorithm', 'ROUND_ROBIN', '--wait']);
    assert.equal(pool.provisioning_status, 'ACTIVE');
    const memberSubnet = randomUUID();
    const m4 = await show(['loadbalancer', 'member', 'create', 'noop-pool', '--address', '192.0.2.10', '--protocol-port', '8080', '--subnet-id', memberSubnet, '--wait']);
    assert.deepEqual([m4.address, m4.subnet_id, m4.provisioning_status], ['192.0.2.10', memberSubnet, 'ACTIVE']);
    const m6 = await show(['loadbalancer', 'member', 'create', 'noop-pool', '--address', '2001:db8:2::10', '--protocol-port', '8080', '--subnet-id', randomUUID(), '--wait']);
    assert.deepEqual([m6.address, m6.provisioning_status], ['2001:db8:2::10', 'ACTIVE']);
    await cli.ok(ADMIN, ['loadbalancer', 'delete', 'noop-net', '--cascade', '--wait']);
  });

  it('creates IPv6 VIPs: a given address on a random subnet, then one allocated there', async () => {
    const subnet = randomUUID();
    const given = await show(['loadbalancer', 'create', '--name', 'noop-v6', '--vip-subnet-id', subnet, '--vip-address', '2001:db8:5::5', '--wait']);
    assert.deepEqual([given.vip_address, given.provisioning_status], ['2001:db8:5::5', 'ACTIVE']);
    const allocated = await show(['loadbalancer', 'create', '--name', 'noop-v6b', '--vip-subnet-id', subnet, '--wait']);
    assert.equal(allocated.vip_address, '2001:db8::1');
  });

  it('creates from a random network alone and from a random port', async () => {
    const network = randomUUID();
    const byNetwork = await show(['loadbalancer', 'create', '--name', 'noop-bynet', '--vip-network-id', network, '--wait']);
    assert.deepEqual([byNetwork.vip_network_id, byNetwork.provisioning_status], [network, 'ACTIVE']);
    const port = randomUUID();
    const byPort = await show(['loadbalancer', 'create', '--name', 'noop-byport', '--vip-port-id', port, '--vip-subnet-id', randomUUID(), '--wait']);
    assert.deepEqual([byPort.vip_port_id, byPort.provisioning_status], [port, 'ACTIVE']);
  });
});

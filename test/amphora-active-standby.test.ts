/**
 * Issue 13's ACTIVE_STANDBY end to end: a flavor with `loadbalancer_topology: ACTIVE_STANDBY`, made and
 * used with the real `openstack` CLI against `ostia up` on netns + bridge, as root. Its two amphorae run
 * keepalived (VRRPv3, unicast between their base ports) and HAProxy; a client on this machine opens a new
 * connection every 20 ms while the MASTER's HAProxy is killed, its keepalived's VRRP child is killed, its
 * VIP-network link is cut, or the whole amphora dies. Each case prints the interruption it measured and
 * checks the VIP serves again from the other amphora, the configuration intact, and the pair back to two
 * amphorae in service without an API call.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { amphoraNamespace } from '../src/linux-net/ip.js';
import { unmet } from './support/requirements.js';
import { eventually, httpGet, randomPort } from './support/amphora-fixtures.js';
import { madeOnce } from './support/made-once.js';
import { startBridgeOstia, type BridgeOstia } from './support/bridge-ostia.js';
import { convergedPair, failuresDuring, FAULTS, holdsVip, interruption, type Fault } from './support/vip-takeover.js';

const ADMIN = 'ostia';
const DEMO = 'ostia-demo';
type Obj = Record<string, unknown>;

describe('ACTIVE_STANDBY load balancer on netns amphorae, through the openstack CLI', { skip: unmet('namespaces') || unmet('openstack-cli') || unmet('haproxy') || unmet('keepalived'), concurrency: 1 }, () => {
  let lab: BridgeOstia;
  const listenerPort = randomPort();
  const show = (cloud: string, args: string[]) => lab.cli.json<Obj>(cloud, args);

  const built = madeOnce(async () => {
    await show(ADMIN, ['loadbalancer', 'flavorprofile', 'create', '--name', 'ha', '--provider', 'amphora', '--flavor-data', '{"loadbalancer_topology": "ACTIVE_STANDBY"}']);
    await show(ADMIN, ['loadbalancer', 'flavor', 'create', '--name', 'ha', '--flavorprofile', 'ha', '--enable']);
    const members = ['ha-a', 'ha-b'].map((name, i) => ({ name, address: lab.address('private', 210 + i) }));
    for (const m of members) await lab.host(m.name, 'private', m.address, true);
    const lb = await show(DEMO, ['loadbalancer', 'create', '--name', 'ha', '--flavor', 'ha', '--vip-subnet-id', 'public-subnet', '--wait']);
    const listener = await show(DEMO, ['loadbalancer', 'listener', 'create', String(lb.id), '--name', 'web', '--protocol', 'HTTP', '--protocol-port', String(listenerPort), '--wait']);
    const pool = await show(DEMO, ['loadbalancer', 'pool', 'create', '--listener', String(listener.id), '--protocol', 'HTTP', '--lb-algorithm', 'ROUND_ROBIN', '--wait']);
    for (const m of members) await show(DEMO, ['loadbalancer', 'member', 'create', String(pool.id), '--subnet-id', 'private-subnet', '--address', m.address, '--protocol-port', '8000', '--wait']);
    return { lbId: String(lb.id), vip: String(lb.vip_address) };
  });

  const namespaceOf = (amphoraId: string) => amphoraNamespace(lab.net.fabric, amphoraId);
  const inService = async (lbId: string) => (await lab.cli.json<Obj[]>(ADMIN, ['loadbalancer', 'amphora', 'list', '--loadbalancer', lbId])).filter((a) => a.status === 'ALLOCATED').map((a) => String(a.id));

  /** Two amphorae in service, one holding the VIP, the load balancer ACTIVE and serving: the one holding it, and the other. */
  async function converged(): Promise<{ lbId: string; vip: string; active: string; standby: string }> {
    const { lbId, vip } = await built();
    const settled = async () => (await show(ADMIN, ['loadbalancer', 'show', lbId])).provisioning_status === 'ACTIVE';
    return { lbId, vip, ...(await convergedPair({ fabric: lab.net.fabric, vip, port: listenerPort, inService: () => inService(lbId), settled }, 180_000, 500)) };
  }

  /** The interruption `fault` of the MASTER causes, printed. */
  async function measured(vip: string, active: string, label: string, fault: Fault): Promise<void> {
    const ms = await interruption(vip, listenerPort, () => fault.inject(namespaceOf(active)));
    console.log(`# ACTIVE_STANDBY ${label} ${fault.name}: ${ms} ms without answers`);
  }

  /** After a fault: the VIP on the amphora that was standby, and the configuration it serves still the load balancer's. */
  async function tookOver(vip: string, standby: string): Promise<void> {
    await eventually(() => holdsVip(lab.net.fabric, standby, vip), 'the standby to hold the VIP', 10_000, 100);
    const bodies = new Set<string>();
    for (let i = 0; i < 8; i++) bodies.add((await httpGet(vip, listenerPort)).body);
    assert.deepEqual([...bodies].sort(), ['ha-a', 'ha-b'], 'both members served: no configuration lost');
  }

  before(async () => {
    lab = await startBridgeOstia({ amphora: { vrrpAdvertIntervalMs: 100 } });
  });
  after(async () => {
    await lab?.close();
  });

  it('builds a MASTER and a BACKUP with their VRRP fields, and serves the VIP from the MASTER', { timeout: 300_000 }, async () => {
    const { lbId, active, standby } = await converged();
    const pair = await inService(lbId);
    const shown = await Promise.all(pair.map((id) => show(ADMIN, ['loadbalancer', 'amphora', 'show', id])));
    assert.deepEqual(shown.map((a) => a.role).sort(), ['BACKUP', 'MASTER']);
    for (const a of shown) {
      assert.equal(a.vrrp_interface, 'eth1');
      assert.equal(a.vrrp_id, 1);
      assert.ok(a.vrrp_ip && a.vrrp_port_id && a.ha_port_id, JSON.stringify(a));
      assert.equal(a.vrrp_priority, a.role === 'MASTER' ? 100 : 90);
    }
    assert.notEqual(shown[0]!.vrrp_ip, shown[1]!.vrrp_ip);
    assert.ok(active !== standby);
  });

  it('(a) MASTER HAProxy killed: the BACKUP takes the VIP; the killed HAProxy comes back', { timeout: 300_000 }, async () => {
    const { vip, active, standby } = await converged();
    await measured(vip, active, '(a)', FAULTS.haproxy);
    await tookOver(vip, standby);
    await converged();
  });

  it("(b) MASTER keepalived's VRRP child killed: the BACKUP takes the VIP, and keeps it", { timeout: 300_000 }, async () => {
    const { vip, active, standby } = await converged();
    await measured(vip, active, '(b)', FAULTS.vrrpChild);
    await tookOver(vip, standby);
    await converged();
  });

  it("(c) MASTER's VIP-network link cut: the BACKUP takes the VIP", { timeout: 300_000 }, async () => {
    const { vip, active, standby } = await converged();
    await measured(vip, active, '(c)', FAULTS.link);
    await tookOver(vip, standby);
    await FAULTS.link.repair(namespaceOf(active));
    await converged();
  });

  it('(d) the whole MASTER amphora dies: the BACKUP takes the VIP, and a failover rebuilds the pair', { timeout: 300_000 }, async () => {
    const { lbId, vip, active, standby } = await converged();
    await measured(vip, active, '(d)', FAULTS.amphora);
    await tookOver(vip, standby);
    // Until the health manager misses its heartbeats the dead amphora is still in service and the pair looks converged.
    await eventually(async () => !(await inService(lbId)).includes(active), 'the health manager to fail the dead amphora over', 180_000, 500);
    const after = await converged();
    assert.equal(after.active, standby, 'the survivor keeps the VIP while its new peer is built');
    const pair = await inService(lbId);
    assert.ok(!pair.includes(active), 'the dead amphora is replaced');
    assert.equal((await show(ADMIN, ['loadbalancer', 'amphora', 'show', standby])).role, 'MASTER', 'the survivor is the MASTER');
  });

  it('(e) a load balancer failover replaces the standby, then the active: the VIP keeps answering', { timeout: 400_000 }, async () => {
    const { lbId, vip, active, standby } = await converged();
    const seen = await failuresDuring(vip, listenerPort, () => lab.cli.ok(ADMIN, ['loadbalancer', 'failover', '--wait', lbId]).then(() => undefined), 300_000);
    console.log(`# ACTIVE_STANDBY (e) load balancer failover: ${seen.failed} of ${seen.connections} connections failed, ${seen.interruptionMs} ms without answers`);
    const after = await converged();
    const pair = await inService(lbId);
    assert.ok(!pair.includes(active) && !pair.includes(standby), `both amphorae replaced: ${pair.join(', ')}`);
    assert.ok(seen.connections > 10, 'the client kept connecting through the failover');
    // The order (standby first) is asserted where the job's rounds can be read: src/providers/amphora/noop-compute.test.ts.
    const roles = await Promise.all(pair.map(async (id) => [(await show(ADMIN, ['loadbalancer', 'amphora', 'show', id])).role, id]));
    assert.equal(roles.find(([role]) => role === 'MASTER')?.[1], after.active, 'the MASTER holds the VIP');
    await tookOver(vip, after.active);
  });
});

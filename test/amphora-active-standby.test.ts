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
import { readFileSync } from 'node:fs';
import { IP, netnsPids } from '../src/linux-net/ip.js';
import { unmet } from './support/requirements.js';
import { eventually, httpGet, randomPort } from './support/amphora-fixtures.js';
import { madeOnce } from './support/made-once.js';
import { startBridgeOstia, type BridgeOstia } from './support/bridge-ostia.js';

const ADMIN = 'ostia';
const DEMO = 'ostia-demo';
type Obj = Record<string, unknown>;
/** How often the client opens a connection, and how long it waits for an answer. */
const PROBE_EVERY_MS = 20;
const PROBE_TIMEOUT_MS = 500;

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

  const namespaceOf = (amphora: Obj) => `${lab.net.fabric}-${String(amphora.id)}`;
  const holdsVip = async (amphora: Obj, vip: string) => (await lab.run(IP, ['-n', namespaceOf(amphora), '-o', '-4', 'address', 'show']).catch(() => '')).includes(`inet ${vip}/`);
  const inService = async (lbId: string) => (await lab.cli.json<Obj[]>(ADMIN, ['loadbalancer', 'amphora', 'list', '--loadbalancer', lbId])).filter((a) => a.status === 'ALLOCATED');

  /** Two amphorae in service, one holding the VIP, the load balancer ACTIVE and serving: the one holding it, and the other. */
  async function converged(): Promise<{ lbId: string; vip: string; active: Obj; standby: Obj }> {
    const { lbId, vip } = await built();
    const found = await eventually(
      async () => {
        const pair = await inService(lbId);
        if (pair.length !== 2) return undefined;
        const holding: Obj[] = [];
        for (const a of pair) if (await holdsVip(a, vip)) holding.push(a);
        const lb = await show(ADMIN, ['loadbalancer', 'show', lbId]);
        if (holding.length !== 1 || lb.provisioning_status !== 'ACTIVE' || (await httpGet(vip, listenerPort).catch(() => null))?.status !== 200) return undefined;
        return { lbId, vip, active: holding[0]!, standby: pair.find((a) => a !== holding[0])! };
      },
      'two amphorae in service, one holding the VIP',
      180_000,
      500,
    );
    return found!;
  }

  /**
   * Opens a new connection every 20 ms (each given 500 ms to answer) from `fault()` on, until the VIP has
   * answered for a second after the last failure, at most 20 s: the interruption is the span from the first
   * failed connection to the first that succeeded after the last failed one.
   */
  async function interruption(vip: string, fault: () => Promise<void>): Promise<number> {
    const outcomes: Array<{ at: number; ok: boolean }> = [];
    const pending: Array<Promise<void>> = [];
    const start = Date.now();
    await fault();
    while (Date.now() - start < 20_000) {
      const at = Date.now();
      pending.push(httpGet(vip, listenerPort, '/', PROBE_TIMEOUT_MS).then((r) => void outcomes.push({ at, ok: r.status === 200 })));
      const failures = outcomes.filter((o) => !o.ok);
      const lastFailure = failures.length ? Math.max(...failures.map((o) => o.at)) : null;
      if ((lastFailure !== null && at - lastFailure > 1_000 + PROBE_TIMEOUT_MS) || (lastFailure === null && at - start > 3_000)) break;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, PROBE_EVERY_MS - (Date.now() - at))));
    }
    await Promise.all(pending);
    outcomes.sort((a, b) => a.at - b.at);
    const firstFailure = outcomes.find((o) => !o.ok);
    if (!firstFailure) return 0;
    const lastFailure = Math.max(...outcomes.filter((o) => !o.ok).map((o) => o.at));
    const recovered = outcomes.find((o) => o.ok && o.at > lastFailure);
    assert.ok(recovered, `the VIP did not answer again within 20 s (${outcomes.length} connections)`);
    return recovered.at - firstFailure.at;
  }

  /** After a fault: the VIP on the amphora that was standby, and the configuration it serves still the load balancer's. */
  async function tookOver(vip: string, standby: Obj): Promise<void> {
    await eventually(() => holdsVip(standby, vip), 'the standby to hold the VIP', 10_000, 100);
    const bodies = new Set<string>();
    for (let i = 0; i < 8; i++) bodies.add((await httpGet(vip, listenerPort)).body);
    assert.deepEqual([...bodies].sort(), ['ha-a', 'ha-b'], 'both members served: no configuration lost');
  }

  const processesOf = (amphora: Obj, comm: string) => netnsPids(namespaceOf(amphora)).filter((pid) => readStat(pid, 'Name') === comm);

  before(async () => {
    lab = await startBridgeOstia({ amphora: { vrrpAdvertIntervalMs: 100 } });
  });
  after(async () => {
    await lab?.close();
  });

  it('builds a MASTER and a BACKUP with their VRRP fields, and serves the VIP from the MASTER', { timeout: 300_000 }, async () => {
    const { lbId, active, standby } = await converged();
    const pair = await inService(lbId);
    const shown = await Promise.all(pair.map((a) => show(ADMIN, ['loadbalancer', 'amphora', 'show', String(a.id)])));
    assert.deepEqual(shown.map((a) => a.role).sort(), ['BACKUP', 'MASTER']);
    for (const a of shown) {
      assert.equal(a.vrrp_interface, 'eth1');
      assert.equal(a.vrrp_id, 1);
      assert.ok(a.vrrp_ip && a.vrrp_port_id && a.ha_port_id, JSON.stringify(a));
      assert.equal(a.vrrp_priority, a.role === 'MASTER' ? 100 : 90);
    }
    assert.notEqual(shown[0]!.vrrp_ip, shown[1]!.vrrp_ip);
    assert.ok(active.id !== standby.id);
  });

  it('(a) MASTER HAProxy killed: the BACKUP takes the VIP; the killed HAProxy comes back', { timeout: 300_000 }, async () => {
    const { vip, active, standby } = await converged();
    const ms = await interruption(vip, async () => {
      for (const pid of processesOf(active, 'haproxy')) process.kill(pid, 'SIGKILL');
    });
    console.log(`# ACTIVE_STANDBY (a) MASTER's HAProxy killed: ${ms} ms without answers`);
    await tookOver(vip, standby);
    await converged();
  });

  it("(b) MASTER keepalived's VRRP child killed: the BACKUP takes the VIP, and keeps it", { timeout: 300_000 }, async () => {
    const { vip, active, standby } = await converged();
    const ms = await interruption(vip, async () => {
      const keepalived = processesOf(active, 'keepalived');
      const child = keepalived.find((pid) => keepalived.includes(Number(readStat(pid, 'PPid'))));
      assert.ok(child, `a VRRP child among keepalived ${keepalived.join(', ')}`);
      process.kill(child, 'SIGKILL');
    });
    console.log(`# ACTIVE_STANDBY (b) MASTER's keepalived VRRP child killed: ${ms} ms without answers`);
    await tookOver(vip, standby);
    await converged();
  });

  it("(c) MASTER's VIP-network link cut: the BACKUP takes the VIP", { timeout: 300_000 }, async () => {
    const { vip, active, standby } = await converged();
    const ms = await interruption(vip, () => lab.run(IP, ['-n', namespaceOf(active), 'link', 'set', 'eth1', 'down']).then(() => undefined));
    console.log(`# ACTIVE_STANDBY (c) MASTER's VIP-network link cut: ${ms} ms without answers`);
    await tookOver(vip, standby);
    await lab.run(IP, ['-n', namespaceOf(active), 'link', 'set', 'eth1', 'up']);
    await converged();
  });

  it('(d) the whole MASTER amphora dies: the BACKUP takes the VIP, and a failover rebuilds the pair', { timeout: 300_000 }, async () => {
    const { lbId, vip, active, standby } = await converged();
    const ms = await interruption(vip, async () => {
      for (const pid of netnsPids(namespaceOf(active))) process.kill(pid, 'SIGKILL');
    });
    console.log(`# ACTIVE_STANDBY (d) MASTER amphora killed: ${ms} ms without answers`);
    await tookOver(vip, standby);
    const after = await converged();
    assert.equal(after.active.id, standby.id, 'the survivor keeps the VIP while its new peer is built');
    const pair = await inService(lbId);
    assert.ok(!pair.some((a) => a.id === active.id), 'the dead amphora is replaced');
    assert.equal((await show(ADMIN, ['loadbalancer', 'amphora', 'show', String(standby.id)])).role, 'MASTER', 'the survivor is the MASTER');
  });
});

function readStat(pid: number, field: string): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`^${field}:\\s+(\\S+)`, 'm'))?.[1];
  } catch {
    return undefined; // exited meanwhile
  }
}

/**
 * Live moves of issue 17 (`PUT /v2/lbaas/loadbalancers/{id}/migrate`, an Ostia extension) on netns
 * amphorae with the bridge network, as root: a load balancer with an HTTP listener and two members
 * moves from SINGLE to ACTIVE_STANDBY, to another flavor, and back to SINGLE while a client on this
 * machine opens a new connection to the VIP every 20 ms. Each move prints the connections that failed
 * (none on an idle machine, a few at most beside CPU hogs); after each the VIP (the same address and port) serves both members from the amphorae
 * built for the new placement, and the old ones are gone.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { unmet } from './support/requirements.js';
import { httpGet, randomPort } from './support/amphora-fixtures.js';
import { madeOnce } from './support/made-once.js';
import { startBridgeOstia, type BridgeOstia } from './support/bridge-ostia.js';
import { failuresDuring, holdsVip } from './support/vip-takeover.js';

const ADMIN = 'ostia';
/** Connections a move may lose on a loaded machine (see \`moved\`). */
const MAX_LOST_UNDER_LOAD = 10;
const DEMO = 'ostia-demo';
type Obj = Record<string, any>;

describe('live moves between topologies and flavors on netns amphorae, with a client every 20 ms', { skip: unmet('namespaces') || unmet('haproxy') || unmet('keepalived'), concurrency: 1 }, () => {
  let lab: BridgeOstia;
  const listenerPort = randomPort();

  /** A call to the API as `cloud`'s project; fails the test on an unexpected status, with the body. */
  async function api(cloud: string, method: string, path: string, body?: unknown, expected = [200, 201, 202, 204]): Promise<Obj> {
    const res = await fetch(`${lab.ostia.url}${path}`, {
      method,
      headers: { 'x-auth-token': await lab.ostia.token(cloud), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    assert.ok(expected.includes(res.status), `${method} ${path}: ${res.status} ${text}`);
    return text ? (JSON.parse(text) as Obj) : {};
  }

  /** Waits for the load balancer to leave PENDING_* (held GETs, no polling); fails unless ACTIVE. */
  async function active(lbId: string): Promise<Obj> {
    const deadline = Date.now() + 240_000;
    for (;;) {
      const { loadbalancer } = await api(DEMO, 'GET', `/v2/lbaas/loadbalancers/${lbId}?wait=30`);
      if (!String(loadbalancer.provisioning_status).startsWith('PENDING_')) {
        assert.equal(loadbalancer.provisioning_status, 'ACTIVE', `${JSON.stringify(loadbalancer)}\n--- ostia log ---\n${lab.ostia.logTail()}`);
        return loadbalancer;
      }
      assert.ok(Date.now() < deadline, `load balancer ${lbId} still ${loadbalancer.provisioning_status}`);
    }
  }

  const amphorae = async (lbId: string) =>
    ((await api(ADMIN, 'GET', `/v2/octavia/amphorae?loadbalancer_id=${lbId}`)).amphorae as Obj[]).filter((a) => a.status !== 'DELETED');

  const flavorWith = async (name: string, data: Obj) => {
    const { flavorprofile } = await api(ADMIN, 'POST', '/v2/lbaas/flavorprofiles', { flavorprofile: { name, provider_name: 'amphora', flavor_data: JSON.stringify(data) } });
    return String((await api(ADMIN, 'POST', '/v2/lbaas/flavors', { flavor: { name, flavor_profile_id: flavorprofile.id } })).flavor.id);
  };

  const built = madeOnce(async () => {
    const members = ['mv-a', 'mv-b'].map((name, i) => ({ name, address: lab.address('private', 220 + i) }));
    for (const m of members) await lab.host(m.name, 'private', m.address, true);
    const subnets = (await api(DEMO, 'GET', '/v2.0/subnets')).subnets as Obj[];
    const subnetId = (name: string) => String(subnets.find((s) => s.name === name)!.id);
    const { loadbalancer } = await api(DEMO, 'POST', '/v2/lbaas/loadbalancers', {
      loadbalancer: {
        name: 'moving',
        vip_subnet_id: subnetId('public-subnet'),
        listeners: [{ name: 'web', protocol: 'HTTP', protocol_port: listenerPort, default_pool: { name: 'web-pool', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members: members.map((m) => ({ address: m.address, protocol_port: 8000, subnet_id: subnetId('private-subnet') })) } }],
      },
    });
    await active(loadbalancer.id);
    return { lbId: String(loadbalancer.id), vip: String(loadbalancer.vip_address), portId: String(loadbalancer.vip_port_id) };
  });

  /** Moves the load balancer under the client; prints and returns what the client saw. */
  async function moved(label: string, migration: Obj) {
    const { lbId, vip, portId } = await built();
    const before = (await amphorae(lbId)).map((a) => String(a.id));
    const seen = await failuresDuring(vip, listenerPort, async () => {
      const { loadbalancer } = await api(DEMO, 'PUT', `/v2/lbaas/loadbalancers/${lbId}/migrate`, { migration });
      assert.equal(loadbalancer.provisioning_status, 'PENDING_UPDATE');
      const after = await active(lbId);
      assert.deepEqual([after.vip_address, after.vip_port_id, after.status_reason ?? null], [vip, portId, null]);
    }, 300_000);
    console.log(`# migrate ${label}: ${seen.failed} of ${seen.connections} connections failed, ${seen.interruptionMs} ms without answers`);
    assert.ok(seen.connections > 10, 'the client kept connecting through the move');
    // Issue 17's target is none: that is what an idle machine measures. With two CPU hogs beside it a
    // move can lose a few (the VIP's last hand-over delayed by the load); a move that is not hitless
    // (a VIP nobody answers on for a second: 50 connections) fails here.
    assert.ok(seen.failed <= MAX_LOST_UNDER_LOAD, `${seen.failed} connections failed during the move`);
    const now = await amphorae(lbId);
    assert.ok(!now.some((a) => before.includes(String(a.id))), `every amphora replaced: ${JSON.stringify(now.map((a) => a.id))}`);
    const bodies = new Set<string>();
    for (let i = 0; i < 8; i++) bodies.add((await httpGet(vip, listenerPort)).body);
    assert.deepEqual([...bodies].sort(), ['mv-a', 'mv-b'], 'both members served after the move');
    return { lbId, vip, amphorae: now, seen };
  }

  before(async () => {
    lab = await startBridgeOstia({ amphora: { vrrpAdvertIntervalMs: 100 } });
  });
  after(async () => {
    await lab?.close();
  });

  it('SINGLE → ACTIVE_STANDBY: a MASTER and a BACKUP, one of them holding the VIP', { timeout: 400_000 }, async () => {
    const { vip, amphorae: pair } = await moved('SINGLE → ACTIVE_STANDBY', { topology: 'ACTIVE_STANDBY' });
    assert.deepEqual(pair.map((a) => a.role).sort(), ['BACKUP', 'MASTER']);
    // keepalived never preempts: the first of the two to time out its wait holds the VIP, whichever its role.
    const holders = await Promise.all(pair.map((a) => holdsVip(lab.net.fabric, String(a.id), vip)));
    assert.equal(holders.filter(Boolean).length, 1, 'one amphora of the pair holds the VIP');
  });

  it('to a flavor with another compute flavor, as a pair: standby first, then the active', { timeout: 400_000 }, async () => {
    const flavorId = await flavorWith('ha-large', { loadbalancer_topology: 'ACTIVE_STANDBY', compute_flavor: 'large' });
    const { lbId, amphorae: pair } = await moved('ACTIVE_STANDBY → flavor ha-large', { flavor_id: flavorId, topology: 'ACTIVE_STANDBY' });
    assert.deepEqual(pair.map((a) => a.role).sort(), ['BACKUP', 'MASTER']);
    assert.equal((await api(DEMO, 'GET', `/v2/lbaas/loadbalancers/${lbId}`)).loadbalancer.flavor_id, flavorId);
  });

  it('ACTIVE_STANDBY → SINGLE: one STANDALONE amphora holds the VIP', { timeout: 400_000 }, async () => {
    const { vip, amphorae: single } = await moved('ACTIVE_STANDBY → SINGLE', { topology: 'SINGLE' });
    assert.deepEqual(single.map((a) => a.role), ['STANDALONE']);
    assert.ok(await holdsVip(lab.net.fabric, String(single[0]!.id), vip), 'the STANDALONE amphora holds the VIP');
  });
});

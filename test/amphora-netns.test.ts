/**
 * Issue 13 end to end: the real `openstack` CLI against a real `ostia up` with compute.driver netns and
 * network.driver bridge, as root. Amphorae are namespaces on bridges: the VIP is an address of the
 * public bridge network that this machine reaches through its leg, members are servers in namespaces
 * of the test on the private bridge, which the amphora reaches through a port of its own there, behind
 * its security group.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { bridgeManagementNetwork, bridgeTenantNetworks, defaultConfig } from '../src/config.js';
import { IP, netnsExists, netnsPids } from '../src/linux-net/ip.js';
import { asAmphora } from './support/as-amphora.js';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { unmet } from './support/requirements.js';
import { collectBodies, eventually, httpGet, randomPort } from './support/amphora-fixtures.js';
import { madeOnce } from './support/made-once.js';
import { createTestPki } from './support/test-pki.js';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startBridgeOstia, type BridgeOstia } from './support/bridge-ostia.js';

const ADMIN = 'ostia';
const DEMO = 'ostia-demo';
type Obj = Record<string, unknown>;

describe('amphorae in namespaces on bridge networks, through the openstack CLI', { skip: unmet('namespaces') || unmet('openstack-cli') || unmet('haproxy'), concurrency: 1 }, () => {
  let lab: BridgeOstia;
  const listenerPort = randomPort();
  /** The port the configured security group `web-only` opens, to the public network's addresses .64 to .127. */
  const groupPort = randomPort();
  const WEB_ONLY = '7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d';
  const show = (cloud: string, args: string[]) => lab.cli.json<Obj>(cloud, args);
  const amphorae = async (lbId: string) => (await lab.cli.json<Obj[]>(ADMIN, ['loadbalancer', 'amphora', 'list', '--loadbalancer', lbId])).filter((a) => a.status === 'ALLOCATED');

  /** Two servers on the private network, each in a namespace of its own, and a load balancer over them with a listener allowing the public network's first half only. */
  const built = madeOnce(async () => {
    const members = ['web-a', 'web-b'].map((name, i) => ({ name, address: lab.address('private', 200 + i) }));
    for (const m of members) await lab.host(m.name, 'private', m.address, true);
    const lb = await show(DEMO, ['loadbalancer', 'create', '--name', 'netns-e2e', '--vip-subnet-id', 'public-subnet', '--wait']);
    const listener = await show(DEMO, ['loadbalancer', 'listener', 'create', String(lb.id), '--name', 'web', '--protocol', 'HTTP', '--protocol-port', String(listenerPort), '--allowed-cidr', `${lab.address('public', 0)}/25`, '--wait']);
    const pool = await show(DEMO, ['loadbalancer', 'pool', 'create', '--listener', String(listener.id), '--name', 'web-pool', '--protocol', 'HTTP', '--lb-algorithm', 'ROUND_ROBIN', '--wait']);
    for (const m of members) await show(DEMO, ['loadbalancer', 'member', 'create', String(pool.id), '--name', m.name, '--subnet-id', 'private-subnet', '--address', m.address, '--protocol-port', '8000', '--wait']);
    return { lbId: String(lb.id), vip: String(lb.vip_address), poolId: String(pool.id) };
  });

  before(async () => {
    lab = await startBridgeOstia((dataDir: string) => {
      const publicPrefix = bridgeTenantNetworks(dataDir)[0]!.subnets[0]!.cidr.replace(/\.0\/24$/, '');
      const rule = { direction: 'ingress', ethertype: 'IPv4', protocol: 'tcp', port_range_min: groupPort, port_range_max: groupPort, remote_ip_prefix: `${publicPrefix}.64/26` };
      return { network: { securityGroups: [...defaultConfig(dataDir).network.securityGroups, { id: WEB_ONLY, name: 'web-only', rules: [rule] }] } };
    });
  });
  after(async () => {
    await lab?.close();
  });

  it('serves the VIP on the public bridge to this machine and to a client namespace, from members on the private bridge', { timeout: 240_000 }, async () => {
    const { vip } = await built();
    assert.match(vip, /^198\.1[89]\./, 'the VIP is on the public bridge network');
    const bodies = await collectBodies(vip, listenerPort, 8);
    assert.deepEqual([...new Set(bodies)].sort(), ['web-a', 'web-b'], bodies.join(','));
    const client = await lab.host('client', 'public', lab.address('public', 100));
    assert.match(await lab.run(IP, ['netns', 'exec', client, 'curl', '-sS', '--max-time', '5', `http://${vip}:${listenerPort}/`]), /^web-[ab]$/);
  });

  it('drops a client outside the allowed CIDRs at the packet level, and every port but the listener', { timeout: 240_000 }, async () => {
    const { vip } = await built();
    const outside = await lab.host('outsider', 'public', lab.address('public', 230));
    const curl = (ns: string, port: number) => lab.run(IP, ['netns', 'exec', ns, 'curl', '-sS', '--connect-timeout', '2', `http://${vip}:${port}/`]);
    // A timeout, not HAProxy's refusal: the SYN never reached it.
    await assert.rejects(curl(outside, listenerPort), /Connection timed out|Timeout was reached/);
    const inside = await lab.host('insider', 'public', lab.address('public', 101));
    assert.match(await curl(inside, listenerPort), /^web-[ab]$/);
    await assert.rejects(curl(inside, 9443), /Connection timed out|Timeout was reached/, 'the agent port is closed on the VIP network');
  });

  it('carries TCP and TERMINATED_HTTPS listeners through the namespace amphora to the members', { timeout: 240_000 }, async () => {
    const { lbId, vip } = await built();
    const pki = createTestPki();
    try {
      const www = pki.leaf({ cn: 'www.example.com', dnsNames: ['www.example.com'] });
      const bundle = pki.pkcs12({ key: www, certs: [www, pki.intermediate], legacy: true });
      const secret = await show(DEMO, ['secret', 'store', '--name', 'netns-www', '--payload-content-type', 'application/octet-stream', '--payload-content-encoding', 'base64', '--payload', bundle.toString('base64')]);
      const [tcpPort, httpsPort] = [randomPort(), randomPort()];
      const tcp = await show(DEMO, ['loadbalancer', 'listener', 'create', lbId, '--protocol', 'TCP', '--protocol-port', String(tcpPort), '--wait']);
      const tcpPool = await show(DEMO, ['loadbalancer', 'pool', 'create', '--listener', String(tcp.id), '--protocol', 'TCP', '--lb-algorithm', 'ROUND_ROBIN', '--wait']);
      const https = await show(DEMO, ['loadbalancer', 'listener', 'create', lbId, '--protocol', 'TERMINATED_HTTPS', '--protocol-port', String(httpsPort), '--default-tls-container-ref', String(secret['Secret href']), '--wait']);
      const httpsPool = await show(DEMO, ['loadbalancer', 'pool', 'create', '--listener', String(https.id), '--protocol', 'HTTP', '--lb-algorithm', 'ROUND_ROBIN', '--wait']);
      for (const pool of [tcpPool, httpsPool])
        await show(DEMO, ['loadbalancer', 'member', 'create', String(pool.id), '--subnet-id', 'private-subnet', '--address', lab.address('private', 200), '--protocol-port', '8000', '--wait']);
      assert.equal((await httpGet(vip, tcpPort)).body, 'web-a', 'TCP');
      const rootCa = join(pki.dir, 'trusted-root.pem');
      writeFileSync(rootCa, pki.root.certPem);
      const curl = await lab.run('curl', ['-sS', '--max-time', '5', '--cacert', rootCa, '--resolve', `www.example.com:${httpsPort}:${vip}`, `https://www.example.com:${httpsPort}/`]);
      assert.equal(curl, 'web-a', 'TERMINATED_HTTPS, verified against the test CA');
    } finally {
      pki.remove();
    }
  });

  it('fills the amphora API with the base port on the VIP network', { timeout: 240_000 }, async () => {
    const { lbId, vip } = await built();
    const [amphora] = await amphorae(lbId);
    const shown = await show(ADMIN, ['loadbalancer', 'amphora', 'show', String(amphora!.id)]);
    assert.equal(shown.role, 'STANDALONE');
    assert.equal(shown.ha_ip, vip);
    assert.equal(shown.vrrp_interface, 'eth1');
    assert.match(String(shown.vrrp_ip), /^198\.1[89]\./);
    assert.notEqual(shown.vrrp_ip, vip);
    assert.ok(shown.vrrp_port_id, 'a base port id');
    assert.ok(netnsExists(`${lab.net.fabric}-${String(amphora!.id)}`), 'the amphora is a namespace of the fabric');
  });

  it("refuses members on the controller's own legs and on the management network", { timeout: 240_000 }, async () => {
    const { poolId } = await built();
    const networks = bridgeTenantNetworks(lab.ostia.dataDir);
    for (const address of [networks[1]!.subnets[0]!.gateway_ip!, bridgeManagementNetwork(lab.ostia.dataDir).controllerAddress]) {
      const res = await lab.cli.run(DEMO, ['loadbalancer', 'member', 'create', poolId, '--address', address, '--protocol-port', '80']);
      assert.notEqual(res.code, 0, `member ${address} refused`);
      assert.match(res.stderr, /is not allowed/);
    }
  });

  it("applies the load balancer's own security groups (vip_sg_ids) instead of its listeners' rules, and its listeners' again when they are removed", { timeout: 240_000 }, async () => {
    const token = await lab.ostia.token(DEMO);
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${lab.ostia.url}${path}`, { method, headers: { 'x-auth-token': token, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      assert.ok(res.ok, `${method} ${path}: ${res.status} ${text}`);
      return text ? (JSON.parse(text) as Record<string, Obj>) : {};
    };
    const shown = (id: string) => show(DEMO, ['loadbalancer', 'show', id]);
    const settled = async (id: string) => eventually(async () => ((await shown(id)).provisioning_status === 'ACTIVE' ? true : undefined), 'the load balancer ACTIVE', 120_000, 300);
    const subnet = await lab.ostia.subnetId('public-subnet');
    const member = lab.address('private', 202);
    await lab.host('sg-web', 'private', member, true);
    const lb = (await api('POST', '/v2/lbaas/loadbalancers', { loadbalancer: { name: 'sg', vip_subnet_id: subnet, vip_sg_ids: [WEB_ONLY] } })).loadbalancer!;
    const lbId = String(lb.id);
    await settled(lbId);
    const listener = await show(DEMO, ['loadbalancer', 'listener', 'create', lbId, '--protocol', 'HTTP', '--protocol-port', String(groupPort), '--wait']);
    const pool = await show(DEMO, ['loadbalancer', 'pool', 'create', '--listener', String(listener.id), '--protocol', 'HTTP', '--lb-algorithm', 'ROUND_ROBIN', '--wait']);
    await show(DEMO, ['loadbalancer', 'member', 'create', String(pool.id), '--subnet-id', 'private-subnet', '--address', member, '--protocol-port', '8000', '--wait']);
    assert.deepEqual((await api('GET', `/v2/lbaas/loadbalancers/${lbId}`)).loadbalancer!.vip_sg_ids, [WEB_ONLY]);
    const curl = (ns: string) => lab.run(IP, ['netns', 'exec', ns, 'curl', '-sS', '--connect-timeout', '2', `http://${String(lb.vip_address)}:${groupPort}/`]);
    const inGroup = await lab.host('sg-in', 'public', lab.address('public', 70));
    const outOfGroup = await lab.host('sg-out', 'public', lab.address('public', 140));
    assert.equal(await curl(inGroup), 'sg-web', 'the group admits its prefix');
    await assert.rejects(curl(outOfGroup), /Connection timed out|Timeout was reached/, "the listener's own rule (any source) is not written beside the group's");
    await api('PUT', `/v2/lbaas/loadbalancers/${lbId}`, { loadbalancer: { vip_sg_ids: [] } });
    await settled(lbId);
    assert.equal(await curl(outOfGroup), 'sg-web', "without groups of its own, the listener's rule admits everyone");
    await lab.cli.ok(DEMO, ['loadbalancer', 'delete', '--cascade', '--wait', lbId]);
  });

  it("from inside a running amphora: no controller port, no other amphora's agent, no data directory, no other load balancer's VIP", { timeout: 240_000 }, async () => {
    const { lbId, vip } = await built();
    const [amphora] = await amphorae(lbId);
    const id = String(amphora!.id);
    const agentPid = netnsPids(`${lab.net.fabric}-${id}`)[0]!;
    const inAmphora = (...argv: string[]) => asAmphora(id, agentPid, ...argv);
    /** 'open', 'refused' or 'dropped': what a TCP connection from inside the amphora meets. */
    const connect = async (host: string, port: number) => {
      try {
        await inAmphora('timeout', '3', 'bash', '-c', `exec 3<>/dev/tcp/${host}/${port}`);
        return 'open';
      } catch (e) {
        return (e as { code?: number }).code === 124 ? 'dropped' : 'refused';
      }
    };

    assert.equal(await connect(lab.address('private', 200), 8000), 'open', 'a member answers: the probe itself works');

    // A service of the controller's (an API, Keystone, a database) on every address of this machine.
    const service = createServer((socket) => socket.end('controller'));
    service.listen(0, '0.0.0.0');
    await once(service, 'listening');
    const servicePort = (service.address() as { port: number }).port;
    try {
      const controllerAddresses = [bridgeManagementNetwork(lab.ostia.dataDir).controllerAddress, ...bridgeTenantNetworks(lab.ostia.dataDir).map((n) => n.subnets[0]!.gateway_ip!)];
      const client = await lab.host('probe', 'public', lab.address('public', 102));
      assert.match(await lab.run(IP, ['netns', 'exec', client, 'bash', '-c', `exec 3<>/dev/tcp/${controllerAddresses[1]}/${servicePort} && cat <&3`]), /controller/, 'the service answers a client: what the amphora meets is its security group');
      for (const address of controllerAddresses) assert.equal(await connect(address, servicePort), 'dropped', `the controller's ${address}:${servicePort}`);
    } finally {
      service.close();
    }

    // Another load balancer's amphora: its agent, on the management network and on the VIP network.
    const other = await show(DEMO, ['loadbalancer', 'create', '--name', 'neighbour', '--vip-subnet-id', 'public-subnet', '--wait']);
    const otherPort = randomPort();
    await show(DEMO, ['loadbalancer', 'listener', 'create', String(other.id), '--protocol', 'HTTP', '--protocol-port', String(otherPort), '--wait']);
    const [neighbour] = await amphorae(String(other.id));
    const shownNeighbour = await show(ADMIN, ['loadbalancer', 'amphora', 'show', String(neighbour!.id)]);
    assert.equal(await connect(String(shownNeighbour.lb_network_ip), 9443), 'dropped', "another amphora's agent on the management network");
    assert.equal(await connect(String(shownNeighbour.vrrp_ip), 9443), 'dropped', "another amphora's agent port on the VIP network");

    // The controller's data directory is not there at all.
    await assert.rejects(inAmphora('ls', join(lab.ostia.dataDir, 'pki')), /No such file or directory/);
    await assert.rejects(inAmphora('cat', join(lab.ostia.dataDir, 'heartbeat-secret')), /No such file or directory/);

    // The neighbour's VIP put on this amphora (what its agent, holding CAP_NET_ADMIN, could do): port security keeps it the neighbour's.
    const neighbourVip = String(other.vip_address);
    await lab.run(IP, ['-n', `${lab.net.fabric}-${id}`, 'address', 'add', `${neighbourVip}/32`, 'dev', 'eth1']);
    try {
      const client = `${lab.net.fabric}-probe`;
      await lab.run(IP, ['-n', client, 'neigh', 'flush', 'all']);
      for (let i = 0; i < 3; i++) assert.equal((await httpGet(neighbourVip, otherPort)).status, 503, "the neighbour's HAProxy answers (no pool: 503)");
      const out = await lab.run(IP, ['netns', 'exec', client, 'curl', '-sS', '-o', '/dev/null', '-w', '%{http_code}', '--max-time', '5', `http://${neighbourVip}:${otherPort}/`]);
      assert.equal(out, '503', 'a client on the VIP network resolves the VIP to the neighbour');
    } finally {
      await lab.run(IP, ['-n', `${lab.net.fabric}-${id}`, 'address', 'del', `${neighbourVip}/32`, 'dev', 'eth1']).catch(() => undefined);
    }
    assert.equal((await httpGet(vip, listenerPort)).status, 200, 'this load balancer still serves');
    await lab.cli.ok(DEMO, ['loadbalancer', 'delete', '--cascade', '--wait', String(other.id)]);
  });

  it('replaces a SINGLE amphora whose processes died, and the VIP serves again from the new one', { timeout: 240_000 }, async () => {
    const { lbId, vip } = await built();
    const [old] = await amphorae(lbId);
    const oldNs = `${lab.net.fabric}-${String(old!.id)}`;
    const started = Date.now();
    for (const pid of netnsPids(oldNs)) process.kill(pid, 'SIGKILL');
    const back = await eventually(
      async () => {
        const res = await httpGet(vip, listenerPort).catch(() => null);
        return res?.status === 200 && (await amphorae(lbId)).some((a) => a.id !== old!.id) ? Date.now() : undefined;
      },
      'a new amphora serving the VIP',
      120_000,
      200,
    );
    console.log(`# netns SINGLE failover: VIP served by a new amphora ${back! - started} ms after its processes were killed`);
    await eventually(() => !netnsExists(oldNs), 'the old amphora namespace removed', 60_000, 500);
  });

  it('cascade-deletes the load balancer: no amphora namespace or port left', { timeout: 240_000 }, async () => {
    const { lbId } = await built();
    const ids = (await lab.cli.json<Obj[]>(ADMIN, ['loadbalancer', 'amphora', 'list', '--loadbalancer', lbId])).map((a) => String(a.id));
    assert.ok(ids.length > 0);
    await lab.cli.ok(DEMO, ['loadbalancer', 'delete', '--cascade', '--wait', lbId]);
    for (const id of ids) {
      const ns = `${lab.net.fabric}-${id}`;
      assert.ok(!netnsExists(ns), `namespace ${ns} removed`);
    }
    for (const id of ids) assert.deepEqual(await lab.cli.json<Obj[]>(ADMIN, ['port', 'list', '--device-id', id]), [], `no port of amphora ${id}`);
  });
});

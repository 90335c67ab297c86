/** `network.driver: noop` through the API: random UUIDs for every network id a create takes, as Octavia's no-op network driver allows. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startHarness, admin, type Harness } from '../../test/support/harness.js';
import { VIP_SUBNET_ID } from '../config.js';
import { derivedId } from '../network/noop-network/noop-network.js';

let h: Harness;
before(async () => {
  h = await startHarness({ network: { driver: 'noop' } });
});
after(() => h.close());

type Obj = Record<string, any>;

async function createLb(body: Obj): Promise<Obj> {
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: body }, as: admin });
  assert.equal(r.statusCode, 201, r.body);
  const lb = r.json().loadbalancer;
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  return lb;
}

async function create(lbId: string, path: string, body: Obj): Promise<Obj> {
  const r = await h.request('POST', `/v2/lbaas/${path}`, { body, as: admin });
  assert.equal(r.statusCode, 201, r.body);
  assert.equal(await h.settled(lbId), 'ACTIVE');
  return Object.values(r.json())[0] as Obj;
}

const lookup = async (what: string, query: string) => (await h.request('GET', `/v2.0/${what}?${query}`, { as: admin })).json();

test('a random vip_subnet_id is a subnet: its VIPs get 198.51.100.1, .2, … and the subnet a stable network', async () => {
  const subnet = randomUUID();
  const [subnetSeen] = (await lookup('subnets', `id=${subnet}`)).subnets;
  assert.deepEqual([subnetSeen.id, subnetSeen.ip_version, subnetSeen.network_id], [subnet, 4, derivedId('network', subnet)]);
  const a = await createLb({ vip_subnet_id: subnet });
  const b = await createLb({ vip_subnet_id: subnet });
  assert.deepEqual([a.vip_address, b.vip_address], ['198.51.100.1', '198.51.100.2']);
  assert.equal(a.vip_subnet_id, subnet);
  assert.equal(a.vip_network_id, derivedId('network', subnet));
  // The look-ups agree with what the load balancer says.
  const [net] = (await lookup('networks', `id=${a.vip_network_id}`)).networks;
  assert.deepEqual(net.subnets, [subnet]);
  const [port] = (await lookup('ports', `id=${a.vip_port_id}`)).ports;
  assert.deepEqual(port.fixed_ips, [{ subnet_id: subnet, ip_address: '198.51.100.1' }]);
  // Another subnet starts its own range.
  assert.equal((await createLb({ vip_subnet_id: randomUUID() })).vip_address, '198.51.100.1');
});

test('a given vip_address is used as is, IPv4 or IPv6, and stays unique on its subnet', async () => {
  const subnet = randomUUID();
  const lb = await createLb({ vip_subnet_id: subnet, vip_address: '10.11.12.13' });
  assert.equal(lb.vip_address, '10.11.12.13');
  const v6subnet = randomUUID();
  const v6 = await createLb({ vip_subnet_id: v6subnet, vip_address: '2001:db8:77::5' });
  assert.equal(v6.vip_address, '2001:db8:77::5');
  // The subnet is IPv6 now: its look-up says so, and an allocation there is IPv6.
  assert.equal((await lookup('subnets', `id=${v6subnet}`)).subnets[0].ip_version, 6);
  assert.equal((await createLb({ vip_subnet_id: v6subnet })).vip_address, '2001:db8::1');
  const again = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: subnet, vip_address: '10.11.12.13' } }, as: admin });
  assert.equal(again.statusCode, 409);
  assert.equal(again.json().faultstring, 'The VIP IP address is already in use: 10.11.12.13');
});

test('vip_network_id alone works, an IPv6 vip_address picks an IPv6 subnet of it; vip_network_id with a subnet places the subnet', async () => {
  const network = randomUUID();
  const v4 = await createLb({ vip_network_id: network });
  assert.deepEqual([v4.vip_network_id, v4.vip_subnet_id, v4.vip_address], [network, derivedId('subnet-v4', network), '198.51.100.1']);
  const v6 = await createLb({ vip_network_id: network, vip_address: 'fd12::1' });
  assert.deepEqual([v6.vip_network_id, v6.vip_subnet_id, v6.vip_address], [network, derivedId('subnet-v6', network), 'fd12::1']);
  const subnet = randomUUID();
  const both = await createLb({ vip_network_id: network, vip_subnet_id: subnet });
  assert.deepEqual([both.vip_network_id, both.vip_subnet_id], [network, subnet]);
  assert.equal((await lookup('subnets', `id=${subnet}`)).subnets[0].network_id, network);
  // Once the subnet is on a network, naming another network with it is the mismatch Neutron would report.
  const other = randomUUID();
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_network_id: other, vip_subnet_id: subnet } }, as: admin });
  assert.equal(r.statusCode, 400);
  assert.equal(r.json().faultstring, `Validation failure: Subnet ${subnet} is not in network ${other}.`);
});

test('a random vip_port_id becomes the VIP port, with the address given or one allocated', async () => {
  const portId = randomUUID();
  const [before] = (await lookup('ports', `id=${portId}`)).ports;
  assert.deepEqual([before.id, before.fixed_ips, before.device_id], [portId, [], '']);
  // As in Octavia 11: a port with no address needs the subnet or the address from the request.
  for (const alone of [{ vip_port_id: portId }, { vip_port_id: portId, vip_network_id: randomUUID() }]) {
    const refused = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: alone }, as: admin });
    assert.equal(refused.statusCode, 400);
    assert.equal(refused.json().faultstring, "Validation failure: VIP port's subnet could not be determined. Please specify either a VIP subnet or address.");
  }
  const lb = await createLb({ vip_port_id: portId, vip_subnet_id: randomUUID() });
  assert.equal(lb.vip_port_id, portId);
  assert.equal(lb.vip_address, '198.51.100.1');
  const [after] = (await lookup('ports', `id=${portId}`)).ports;
  assert.equal(after.device_id, lb.id);
  const taken = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_port_id: portId, vip_subnet_id: randomUUID() } }, as: admin });
  assert.equal(taken.statusCode, 400);
  assert.equal(taken.json().faultstring, `Validation failure: Port ${portId} is already in use by ${lb.id}.`);
  const withAddress = await createLb({ vip_port_id: randomUUID(), vip_address: '2001:db8:9::9' });
  assert.equal(withAddress.vip_address, '2001:db8:9::9');
  // A subnet named with the port places it, on the network named with it.
  const subnet = randomUUID();
  const network = randomUUID();
  const placed = await createLb({ vip_port_id: randomUUID(), vip_subnet_id: subnet, vip_network_id: network });
  assert.deepEqual([placed.vip_subnet_id, placed.vip_network_id, placed.vip_address], [subnet, network, '198.51.100.1']);
});

test('random QoS policies and security groups are accepted on create and update, and looked up', async () => {
  const qos = randomUUID();
  const sg = randomUUID();
  const lb = await createLb({ vip_subnet_id: randomUUID(), vip_qos_policy_id: qos, vip_sg_ids: [sg] });
  assert.equal(lb.vip_qos_policy_id, qos);
  assert.deepEqual(lb.vip_sg_ids, [sg]);
  const qos2 = randomUUID();
  const r = await h.request('PUT', `/v2/lbaas/loadbalancers/${lb.id}`, { body: { loadbalancer: { vip_qos_policy_id: qos2, vip_sg_ids: [randomUUID()] } }, as: admin });
  assert.equal(r.statusCode, 200, r.body);
  assert.equal(r.json().loadbalancer.vip_qos_policy_id, qos2);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  assert.deepEqual((await lookup('qos/policies', `id=${qos}`)).policies.map((p: Obj) => p.id), [qos]);
  assert.deepEqual((await lookup('security-groups', `id=${sg}`)).security_groups.map((g: Obj) => g.id), [sg]);
  // Only well-formed ids are pretended.
  assert.deepEqual((await lookup('subnets', 'id=not-a-uuid')).subnets, []);
});

test('additional VIPs on random subnets share the primary network; their addresses are given or allocated', async () => {
  const a = randomUUID();
  const b = randomUUID();
  const lb = await createLb({ vip_subnet_id: randomUUID(), additional_vips: [{ subnet_id: a }, { subnet_id: b, ip_address: '2001:db8:a::1' }] });
  assert.deepEqual(
    lb.additional_vips.map((v: Obj) => [v.subnet_id, v.ip_address]),
    [[a, '198.51.100.1'], [b, '2001:db8:a::1']],
  );
  assert.equal((await lookup('subnets', `id=${b}`)).subnets[0].network_id, lb.vip_network_id);
  const dup = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: a, additional_vips: [{ subnet_id: a }] } }, as: admin });
  assert.equal(dup.json().faultstring, 'Validation failure: Duplicate VIP subnet(s) specified. Only one IP can be bound per subnet.');
});

test('listeners, pools and IPv4 and IPv6 members on random subnets', async () => {
  const lb = await createLb({ vip_subnet_id: randomUUID(), vip_address: '2001:db8:1::10' });
  const listener = await create(lb.id, 'listeners', { listener: { loadbalancer_id: lb.id, protocol: 'HTTP', protocol_port: 80 } });
  const pool = await create(lb.id, 'pools', { pool: { listener_id: listener.id, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' } });
  const m4 = await create(lb.id, `pools/${pool.id}/members`, { member: { address: '192.0.2.10', protocol_port: 8080, subnet_id: randomUUID() } });
  const subnet6 = randomUUID();
  const m6 = await create(lb.id, `pools/${pool.id}/members`, { member: { address: '2001:db8:2::20', protocol_port: 8080, subnet_id: subnet6 } });
  assert.deepEqual([m4.address, m6.address, m6.subnet_id], ['192.0.2.10', '2001:db8:2::20', subnet6]);
  const batch = await h.request('PUT', `/v2/lbaas/pools/${pool.id}/members`, {
    body: { members: [{ address: '2001:db8:2::21', protocol_port: 80, subnet_id: randomUUID() }] },
    as: admin,
  });
  assert.equal(batch.statusCode, 202, batch.body);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
});

test('the configured networks keep their ranges and the network and broadcast address refusal', async () => {
  const lb = await createLb({ vip_subnet_id: VIP_SUBNET_ID });
  assert.match(lb.vip_address, /^127\.16\./);
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, vip_address: '127.16.255.255' } }, as: admin });
  assert.equal(r.statusCode, 400);
  assert.match(r.json().faultstring, /^IP address 127\.16\.255\.255 is not a valid IP for the specified subnet: it is the broadcast address/);
});

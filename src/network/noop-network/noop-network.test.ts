import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { defaultConfig, VIP_SUBNET_ID, VIP_NETWORK_ID, DEMO_PROJECT_ID } from '../../config.js';
import type { Db } from '../../db/database.js';
import { testDatabase as database } from '../../../test/support/postgres.js';
import { isUuid } from '../../domain/net.js';
import { isApiError } from '../../domain/errors.js';
import { NetworkCatalog } from '../catalog.js';
import type { NetworkService, PortRequest } from '../service.js';
import { networkService } from '../from-config.js';
import { derivedId } from './noop-network.js';

function noop(): NetworkService {
  const config = { ...defaultConfig('/tmp/x').network, driver: 'noop' as const };
  return networkService(config, new NetworkCatalog(config));
}

const allocate = (db: Db, net: NetworkService, req: Omit<PortRequest, 'projectId' | 'deviceId' | 'owner' | 'name'>) =>
  db.kysely.transaction().execute((trx) => net.allocatePort(trx, { ...req, projectId: DEMO_PROJECT_ID, deviceId: randomUUID(), owner: 'Octavia', name: 'vip' }));

async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (isApiError(e)) return `${e.status} ${e.message}`;
    throw e;
  }
  return 'accepted';
}

test('derived ids are UUIDs, stable, and differ by kind and by origin', () => {
  const s = randomUUID();
  assert.ok(isUuid(derivedId('network', s)));
  assert.equal(derivedId('network', s), derivedId('network', s));
  assert.notEqual(derivedId('network', s), derivedId('subnet-v4', s));
  assert.notEqual(derivedId('network', s), derivedId('network', randomUUID()));
});

test('any UUID is a shared subnet on a stable network; its ports decide network and family afterwards', async (t) => {
  const db = await database(t);
  const net = noop();
  const s = randomUUID();
  const first = await net.subnet(db.kysely, s);
  assert.deepEqual({ id: first!.id, network: first!.network_id, v: first!.ip_version, cidr: first!.cidr }, { id: s, network: derivedId('network', s), v: 4, cidr: '198.51.100.0/24' });
  assert.deepEqual((await net.network(db.kysely, first!.network_id))!.projects, []);
  // The request's network places a subnet nothing else places…
  const n = randomUUID();
  assert.equal((await net.subnet(db.kysely, s, n))!.network_id, n);
  await allocate(db, net, { subnet: (await net.subnet(db.kysely, s, n))!, address: '2001:db8:5::7' });
  // …and once a port is on it, the port's network and family are the subnet's.
  const after = (await net.subnet(db.kysely, s, randomUUID()))!;
  assert.deepEqual({ network: after.network_id, v: after.ip_version, cidr: after.cidr }, { network: n, v: 6, cidr: '2001:db8::/64' });
  assert.deepEqual((await net.network(db.kysely, n))!.subnetIds, [s]);
});

test('addresses without a given one are the lowest free of the synthetic range, unique per subnet; given ones are used as is', async (t) => {
  const db = await database(t);
  const net = noop();
  const s1 = (await net.subnet(db.kysely, randomUUID()))!;
  const s2 = (await net.subnet(db.kysely, randomUUID()))!;
  assert.equal((await allocate(db, net, { subnet: s1 })).ip_address, '198.51.100.1');
  assert.equal((await allocate(db, net, { subnet: s1 })).ip_address, '198.51.100.2');
  assert.equal((await allocate(db, net, { subnet: s2 })).ip_address, '198.51.100.1');
  assert.equal((await allocate(db, net, { subnet: s1, address: '10.9.8.7' })).ip_address, '10.9.8.7');
  assert.equal(await refusal(allocate(db, net, { subnet: s1, address: '198.51.100.2' })), '409 The VIP IP address is already in use: 198.51.100.2');
  // A subnet known to be IPv6 hands out IPv6 addresses.
  const s6 = (await net.subnet(db.kysely, randomUUID()))!;
  await allocate(db, net, { subnet: s6, address: 'fd00::10' });
  const v6 = (await net.subnet(db.kysely, s6.id))!;
  assert.equal((await allocate(db, net, { subnet: v6 })).ip_address, '2001:db8::1');
  // A port the request names keeps its id.
  const portId = randomUUID();
  assert.equal((await allocate(db, net, { subnet: s2, portId })).id, portId);
});

test('a network without subnets gets one per family, IPv4 unless the address is IPv6; known subnets come first', async (t) => {
  const db = await database(t);
  const net = noop();
  const n = randomUUID();
  const v4 = (await net.pickSubnet(db.kysely, n))!;
  const v6 = (await net.pickSubnet(db.kysely, n, 6))!;
  assert.deepEqual([v4.id, v4.ip_version, v4.network_id], [derivedId('subnet-v4', n), 4, n]);
  assert.deepEqual([v6.id, v6.ip_version, v6.network_id], [derivedId('subnet-v6', n), 6, n]);
  const named = randomUUID();
  await allocate(db, net, { subnet: (await net.subnet(db.kysely, named, n))! });
  assert.equal((await net.pickSubnet(db.kysely, n))!.id, named);
});

test('configured networks keep the catalog behaviour, and the rest is pretended: ports, QoS policies, security groups', async (t) => {
  const db = await database(t);
  const net = noop();
  assert.equal((await net.subnet(db.kysely, VIP_SUBNET_ID))!.cidr, '127.16.0.0/16');
  assert.equal(await refusal(allocate(db, net, { subnet: (await net.subnet(db.kysely, VIP_SUBNET_ID))!, address: '10.0.0.1' })), `400 Validation failure: VIP address 10.0.0.1 is not in subnet ${VIP_SUBNET_ID} (127.16.0.0/16).`);
  assert.equal((await net.pickSubnet(db.kysely, VIP_NETWORK_ID))!.id, VIP_SUBNET_ID);
  const q = randomUUID();
  assert.deepEqual(net.qosPolicy(q), { id: q, name: '' });
  assert.deepEqual(net.securityGroup(q), { id: q, name: '' });
  assert.equal(net.listQosPolicies([q, 'not-a-uuid']).filter((p) => p.id === q || p.id === 'not-a-uuid').length, 1);
  const p = randomUUID();
  const port = (await net.port(db.kysely, p))!;
  assert.deepEqual([port.id, port.ip_address, port.device_id], [p, null, '']);
  assert.equal(port.subnet_id, derivedId('port-subnet', p));
  assert.equal((await net.unstoredPorts(db.kysely, [p, 'x'])).length, 1);
  await allocate(db, net, { subnet: (await net.subnet(db.kysely, port.subnet_id))!, portId: p });
  assert.equal((await net.port(db.kysely, p))!.ip_address, '198.51.100.1');
  assert.deepEqual(await net.unstoredPorts(db.kysely, [p]), []);
});

test('the catalog refuses a VIP at a subnet network, broadcast or subnet-router anycast address', async (t) => {
  const db = await database(t);
  const config = defaultConfig('/tmp/x').network;
  config.networks[0]!.subnets.push({ id: randomUUID(), name: 'v6', cidr: 'fd00:1::/64', gateway_ip: null, allocation_pools: [{ start: 'fd00:1::10', end: 'fd00:1::20' }] });
  const net = networkService(config, new NetworkCatalog(config));
  const v4 = (await net.subnet(db.kysely, VIP_SUBNET_ID))!;
  const v6 = (await net.subnet(db.kysely, config.networks[0]!.subnets[1]!.id))!;
  assert.equal(await refusal(allocate(db, net, { subnet: v4, address: '127.16.0.0' })), `400 IP address 127.16.0.0 is not a valid IP for the specified subnet: it is the network address of subnet ${VIP_SUBNET_ID} (127.16.0.0/16).`);
  assert.equal(await refusal(allocate(db, net, { subnet: v4, address: '127.16.255.255' })), `400 IP address 127.16.255.255 is not a valid IP for the specified subnet: it is the broadcast address of subnet ${VIP_SUBNET_ID} (127.16.0.0/16).`);
  assert.match(await refusal(allocate(db, net, { subnet: v6, address: 'fd00:1::' })), /it is the subnet-router anycast address of subnet/);
  assert.equal((await allocate(db, net, { subnet: v4, address: '127.16.255.254' })).ip_address, '127.16.255.254');
  assert.equal((await allocate(db, net, { subnet: v6, address: 'fd00:1::ffff:ffff:ffff:ffff' })).ip_address, 'fd00:1::ffff:ffff:ffff:ffff');
});

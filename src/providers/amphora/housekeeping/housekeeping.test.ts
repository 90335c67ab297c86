import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { X509Certificate } from 'node:crypto';
import pino from 'pino';
import { startHarness, type Harness } from '../../../../test/support/harness.js';
import { activeLoadBalancer, seedListener } from '../../../../test/support/seed-rows.js';
import { amphoraRow, insertAmphora } from '../../../../test/support/health-rows.js';
import type { ComputeDriver } from '../../../compute/compute-driver.js';
import { CertificateAuthority } from '../../../pki/ca.js';
import { tempDir } from '../../../../test/support/amphora-fixtures.js';
import { timestamp } from '../../../domain/time.js';
import { writeStats } from '../health/stats.js';
import { LoopbackNetwork } from '../../../network/loopback-network/loopback-network.js';
import { MANAGEMENT_DEVICE_OWNER } from '../../../network/management-ports.js';
import { certificatePush, Housekeeper } from './index.js';
import { agentClients } from '../deps.js';
import { DELETED_RETENTION_MS } from './orphans.js';

const silent = pino({ level: 'silent' });

/** The driver's view of what runs: list() and delete() as the local driver has them. */
function fakeCompute(amphoraIds: string[]): ComputeDriver & { running: Map<string, string> } {
  const running = new Map(amphoraIds.map((id) => [`local:${id}`, id]));
  return {
    running,
    boot: async () => { throw new Error('not used'); },
    started: async () => { throw new Error('not used'); },
    status: async (computeId) => (running.has(computeId) ? 'running' : 'stopped'),
    delete: async (computeId) => void running.delete(computeId),
    list: async () => [...running].map(([computeId, amphoraId]) => ({ computeId, amphoraId })),
  };
}

const loopback = (h: Harness) => new LoopbackNetwork(h.config.amphora.managementNetwork);

async function withHarness(t: { after(fn: () => Promise<void> | void): void }): Promise<{ h: Harness; ca: CertificateAuthority }> {
  const h = await startHarness();
  const dir = tempDir('housekeeping');
  t.after(async () => {
    await h.close();
    dir.remove();
  });
  return { h, ca: await CertificateAuthority.open(dir.path) };
}

test('orphan reaper: instances no live amphora claims are deleted on the second sighting; DELETED rows go after an hour', async (t) => {
  const { h, ca } = await withHarness(t);
  const lb = await activeLoadBalancer(h);
  const live = await insertAmphora(h, lb.id);
  live.compute_id = `local:${live.id}`;
  await h.runtime.db.kysely.updateTable('amphora').set({ compute_id: live.compute_id }).where('id', '=', live.id).execute();
  const booting = await insertAmphora(h, lb.id, { status: 'BOOTING', compute_id: null });
  const deletedLongAgo = await insertAmphora(h, null, { status: 'DELETED', updated_at: timestamp(new Date(Date.now() - DELETED_RETENTION_MS - 1000)) });
  const deletedRecently = await insertAmphora(h, null, { status: 'DELETED', updated_at: timestamp() });
  const stranger = randomUUID();
  const compute = fakeCompute([live.id, booting.id, deletedLongAgo.id, deletedRecently.id, stranger]);
  const keeper = new Housekeeper({ db: h.runtime.db, config: h.config, log: silent, compute, network: loopback(h), ca, push: certificatePush(agentClients(ca)) });

  const first = await keeper.reaper.run();
  assert.deepEqual(first.computeDeleted, [], 'first sighting: only suspected');
  assert.deepEqual(first.rowsRemoved, [deletedLongAgo.id]);
  assert.equal(await amphoraRow(h, deletedRecently.id).then((r) => r?.status), 'DELETED');

  const second = await keeper.reaper.run();
  assert.deepEqual(second.computeDeleted.sort(), [`local:${deletedLongAgo.id}`, `local:${deletedRecently.id}`, `local:${stranger}`].sort());
  assert.deepEqual([...compute.running.values()].sort(), [live.id, booting.id].sort());
});

test('orphan reaper: management addresses of amphorae that are gone or DELETED are released on the second sighting', async (t) => {
  const { h, ca } = await withHarness(t);
  const lb = await activeLoadBalancer(h);
  const network = loopback(h);
  const live = await insertAmphora(h, lb.id);
  const deleted = await insertAmphora(h, null, { status: 'DELETED', updated_at: timestamp() });
  const vanished = randomUUID();
  await h.runtime.db.kysely.transaction().execute(async (trx) => {
    for (const id of [live.id, deleted.id, vanished]) await network.allocateManagementAddress(trx, id);
  });
  const keeper = new Housekeeper({ db: h.runtime.db, config: h.config, log: silent, compute: fakeCompute([]), network, ca, push: certificatePush(agentClients(ca)) });
  assert.deepEqual((await keeper.reaper.run()).portsReleased, []);
  assert.deepEqual((await keeper.reaper.run()).portsReleased.sort(), [deleted.id, vanished].sort());
  const held = await h.runtime.db.kysely.selectFrom('port').select('device_id').where('device_owner', '=', MANAGEMENT_DEVICE_OWNER).execute();
  assert.deepEqual(held.map((p) => p.device_id), [live.id]);
});

test('orphan reaper: statistics of deleted listeners go; gone amphorae keep their counters but no connections', async (t) => {
  const { h, ca } = await withHarness(t);
  const lb = await activeLoadBalancer(h);
  const kept = await seedListener(h, lb, 'HTTP', 80);
  const gone = randomUUID();
  const alive = await insertAmphora(h, lb.id);
  const dead = await insertAmphora(h, lb.id, { status: 'DELETED', updated_at: timestamp() });
  const d = { bytesIn: 10, bytesOut: 20, activeConnections: 3, totalConnections: 4, requestErrors: 0 };
  await writeStats(h.runtime.db.kysely, [
    { listenerId: kept, amphoraId: alive.id, delta: d },
    { listenerId: kept, amphoraId: dead.id, delta: d },
    { listenerId: gone, amphoraId: alive.id, delta: d },
  ], Date.now());
  await new Housekeeper({ db: h.runtime.db, config: h.config, log: silent, compute: fakeCompute([]), network: loopback(h), ca, push: certificatePush(agentClients(ca)) }).reaper.run();
  const rows = await h.runtime.db.kysely.selectFrom('listener_statistics').select(['listener_id', 'amphora_id', 'bytes_in', 'active_connections']).orderBy('amphora_id').execute();
  assert.deepEqual(
    rows.sort((a, b) => (a.amphora_id === alive.id ? -1 : b.amphora_id === alive.id ? 1 : 0)),
    [{ listener_id: kept, amphora_id: alive.id, bytes_in: 10, active_connections: 3 }, { listener_id: kept, amphora_id: dead.id, bytes_in: 10, active_connections: 0 }],
  );
  const stats = (await h.request('GET', `/v2/lbaas/listeners/${kept}/stats`)).json().stats;
  assert.deepEqual([stats.bytes_in, stats.active_connections], [20, 3]);
});

test('certificate rotation: a certificate near expiry is replaced over mutual TLS and recorded', async (t) => {
  const { h, ca } = await withHarness(t);
  const lb = await activeLoadBalancer(h);
  const address = '127.0.0.1';
  const amphoraId = randomUUID();
  // A stand-in agent: the real TLS identity from the CA, trusting only the controllers' client CA.
  const identity = await ca.issueAmphoraCert(amphoraId, address, 1);
  const received: string[] = [];
  const agent = createServer({ cert: identity.certPem, key: identity.keyPem, ca: ca.clientCaPem, requestCert: true, rejectUnauthorized: true }, (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.method === 'PUT' && req.url === '/1.0/certificate') received.push((JSON.parse(body) as { pem: string }).pem);
      res.setHeader('content-type', 'application/json');
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => agent.listen(0, address, resolve));
  t.after(() => new Promise<void>((resolve) => agent.close(() => resolve())));
  const url = `https://${address}:${(agent.address() as AddressInfo).port}`;

  const soon = timestamp(new Date(Date.now() + 2 * 86_400_000));
  const due = await insertAmphora(h, lb.id, { id: amphoraId, lb_network_ip: address, agent_url: url, cert_expiration: soon, cert_serial: identity.serial });
  const later = await insertAmphora(h, lb.id, { lb_network_ip: address, agent_url: url, cert_expiration: timestamp(new Date(Date.now() + 20 * 86_400_000)) });
  const unreachable = await insertAmphora(h, lb.id, { lb_network_ip: address, agent_url: 'https://127.0.0.1:1', cert_expiration: soon });

  const keeper = new Housekeeper({ db: h.runtime.db, config: h.config, log: silent, compute: fakeCompute([]), network: loopback(h), ca, push: certificatePush(agentClients(ca)) });
  const outcome = await keeper.rotator.run();
  assert.deepEqual(outcome, { rotated: [due.id], failed: [unreachable.id] });

  assert.equal(received.length, 1);
  const pushed = new X509Certificate(received[0]!);
  assert.match(received[0]!, /-----BEGIN PRIVATE KEY-----/);
  assert.equal(pushed.subject, `CN=${amphoraId}`);
  assert.ok(pushed.checkIP(address));
  assert.ok(pushed.verify(new X509Certificate(ca.serverCaPem).publicKey));
  const row = (await amphoraRow(h, due.id))!;
  assert.equal(row.cert_busy, 0);
  assert.equal(row.cert_expiration, timestamp(new Date(pushed.validTo)));
  assert.ok(Date.parse(`${row.cert_expiration}Z`) > Date.now() + (h.config.amphora.certValidityDays - 1) * 86_400_000);
  assert.notEqual(row.cert_serial, identity.serial);
  assert.equal(row.cert_serial!.toLowerCase(), pushed.serialNumber.toLowerCase());
  assert.equal((await amphoraRow(h, later.id))!.cert_expiration, later.cert_expiration);
  const failed = (await amphoraRow(h, unreachable.id))!;
  assert.deepEqual([failed.cert_busy, failed.cert_expiration], [0, soon], 'a failed rotation releases its claim and changes nothing');
});

test('certificate rotation skips an amphora another housekeeper has claimed', async (t) => {
  const { h, ca } = await withHarness(t);
  const lb = await activeLoadBalancer(h);
  const pushes: string[] = [];
  await insertAmphora(h, lb.id, { agent_url: 'https://127.0.0.1:1', cert_busy: 1, updated_at: timestamp(), cert_expiration: timestamp() });
  const keeper = new Housekeeper({ db: h.runtime.db, config: h.config, log: silent, compute: fakeCompute([]), network: loopback(h), ca, push: async (amp) => void pushes.push(amp.id) });
  assert.deepEqual(await keeper.rotator.run(), { rotated: [], failed: [] });
  assert.deepEqual(pushes, []);
});

/**
 * Waiting and streams across processes, as in production: two `ostia api` and an `ostia worker`
 * on PostgreSQL. A client streams from one API and waits on it while the change goes through the
 * other: only the database's NOTIFY can tell the first.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deepMerge, VIP_SUBNET_ID } from '../src/config.js';
import { EventStreamClient } from '../src/tools/event-stream-client.js';
import { tempDir } from './support/amphora-fixtures.js';
import { NOOP_COMPUTE_AMPHORA } from './support/harness.js';
import { keystoneToken } from './support/ostia-process.js';
import { freshPostgresDatabase } from './support/postgres.js';
import { postgresPassOnly } from './support/requirements.js';
import { startRole, stopRole, type Role } from './support/role-process.js';

const EVENT_TIMEOUT_MS = 30_000;

test('a stream and a held GET on one ostia api see a change made through another', { skip: postgresPassOnly(), timeout: 180_000 }, async (t) => {
  const database = await freshPostgresDatabase(process.env.OSTIA_TEST_DATABASE_URL!);
  const work = tempDir('events');
  const roles: Role[] = [];
  t.after(async () => {
    await Promise.all(roles.map(stopRole));
    work.remove();
    await database.drop();
  });
  const config = join(work.path, 'ostia.json');
  // Every API process validates the tokens the others issue.
  writeFileSync(config, JSON.stringify(deepMerge(NOOP_COMPUTE_AMPHORA, { api: { defaultProvider: 'amphora' }, identity: { tokenSecret: randomBytes(32).toString('hex') } })));
  const common = (name: string) => ['--config', config, '--data-dir', join(work.path, name), '--database-url', database.url];
  // One after the other: the first runs the schema's migrations.
  for (const name of ['api-1', 'api-2']) roles.push(await startRole(['api', ...common(name), '--port', '0']));
  roles.push(await startRole(['worker', ...common('worker')]));
  const [one, two] = roles.map((r) => r.announced.url!);
  const token = await keystoneToken({ auth_url: `${one}/identity/v3`, username: 'demo', password: 'secret', project_name: 'demo' });
  const headers = { 'x-auth-token': token, 'content-type': 'application/json' };

  const created = await fetch(`${two}/v2/lbaas/loadbalancers`, { method: 'POST', headers, body: JSON.stringify({ loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } }) });
  assert.equal(created.status, 201, await created.clone().text());
  const id = ((await created.json()) as { loadbalancer: { id: string } }).loadbalancer.id;
  const active = await fetch(`${one}/v2/lbaas/loadbalancers/${id}?wait=50`, { headers });
  assert.equal(((await active.json()) as { loadbalancer: { provisioning_status: string } }).loadbalancer.provisioning_status, 'ACTIVE');

  const stream = await EventStreamClient.open(`${one}/v2/lbaas/loadbalancers/${id}/events`, { 'x-auth-token': token });
  t.after(() => stream.close());
  assert.equal((await stream.next(EVENT_TIMEOUT_MS)).event, 'status');
  const listener = await fetch(`${two}/v2/lbaas/listeners`, { method: 'POST', headers, body: JSON.stringify({ listener: { loadbalancer_id: id, protocol: 'TCP', protocol_port: 80 } }) });
  assert.equal(listener.status, 201, await listener.clone().text());
  const listenerId = ((await listener.json()) as { listener: { id: string } }).listener.id;
  const held = await fetch(`${one}/v2/lbaas/listeners/${listenerId}?wait=50`, { headers });
  assert.equal(((await held.json()) as { listener: { provisioning_status: string } }).listener.provisioning_status, 'ACTIVE');
  type Tree = { statuses: { loadbalancer: { provisioning_status: string; listeners: Array<{ id: string; provisioning_status: string }> } } };
  const settled = await stream.until((e) => {
    const lb = (e.data as Tree).statuses.loadbalancer;
    return lb.provisioning_status === 'ACTIVE' && lb.listeners.some((l) => l.id === listenerId && l.provisioning_status === 'ACTIVE');
  }, EVENT_TIMEOUT_MS);
  assert.equal(settled.event, 'status');
});

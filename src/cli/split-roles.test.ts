/**
 * The production shape: `ostia api` and `ostia worker` as separate processes sharing one
 * PostgreSQL database. Runs only when OSTIA_TEST_DATABASE_URL names a server (scripts/test.sh's
 * PostgreSQL pass, which .ci/run enables).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { keystoneToken, repoRoot } from '../../test/support/ostia-process.js';
import { NOOP_PROVIDERS } from '../../test/support/harness.js';
import { freshPostgresDatabase } from '../../test/support/postgres.js';
import { VIP_SUBNET_ID } from '../config.js';
import { postgresPassOnly } from '../../test/support/requirements.js';
import { createSocket } from 'node:dgram';
import { ROLE_ENV as CHILD_ENV, startRole, stopRole } from '../../test/support/role-process.js';
import { eventually, freeTcpPort, freeUdpPort } from '../../test/support/amphora-fixtures.js';

const SERVER_URL = process.env.OSTIA_TEST_DATABASE_URL;
const BIN = join(repoRoot(), 'bin', 'ostia.js');

async function provisioningStatus(databaseUrl: string, lbId: string): Promise<string> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const { rows } = await client.query<{ provisioning_status: string }>('SELECT provisioning_status FROM load_balancer WHERE id = $1', [lbId]);
      const status = rows[0]!.provisioning_status;
      if (!status.startsWith('PENDING_') || Date.now() > deadline) return status;
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await client.end();
  }
}

test('ostia api and ostia worker, two processes over PostgreSQL, provision a load balancer', { skip: postgresPassOnly() }, async (t) => {
  const database = await freshPostgresDatabase(SERVER_URL!);
  const dataDir = mkdtempSync(join(tmpdir(), 'ostia-split-'));
  t.after(async () => {
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  // The control-plane hand-over is what is tested: the noop provider, no amphora.
  const noopOnly = join(dataDir, 'noop.json');
  writeFileSync(noopOnly, JSON.stringify(NOOP_PROVIDERS));
  const api = await startRole(['api', '--config', noopOnly, '--port', '0', '--data-dir', dataDir, '--database-url', database.url]);
  const worker = await startRole(['worker', '--config', noopOnly, '--database-url', database.url]);
  let lbId: string;
  try {
    assert.match(api.announced.url!, /^http:\/\/127\.0\.0\.1:[1-9]\d*$/);
    assert.equal(api.announced.clouds_yaml, join(dataDir, 'clouds.yaml'));
    assert.deepEqual(worker.announced, { url: null, clouds_yaml: null, pid: worker.child.pid });

    const token = await keystoneToken({ auth_url: `${api.announced.url}/identity/v3`, username: 'demo', password: 'secret', project_name: 'demo' });
    const created = await fetch(`${api.announced.url}/v2/lbaas/loadbalancers`, {
      method: 'POST',
      headers: { 'x-auth-token': token, 'content-type': 'application/json' },
      body: JSON.stringify({ loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } }),
    });
    assert.equal(created.status, 201, await created.clone().text());
    lbId = ((await created.json()) as { loadbalancer: { id: string } }).loadbalancer.id;
    // Only the worker process runs jobs: ACTIVE proves it was woken through the database.
    assert.equal(await provisioningStatus(database.url, lbId), 'ACTIVE');
  } finally {
    const [apiCode, workerCode] = await Promise.all([stopRole(api), stopRole(worker)]);
    assert.equal(apiCode, 0, api.stderr());
    assert.equal(workerCode, 0, worker.stderr());
  }

  const traced = await new Promise<string>((resolve) => {
    const child = spawn(process.execPath, [BIN, 'trace', lbId, '--database-url', database.url, '--json'], { env: CHILD_ENV, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('close', () => resolve(out));
  });
  const { steps } = JSON.parse(traced) as { steps: Array<{ operation: string; error: string | null }> };
  assert.ok(steps.length > 0);
  assert.ok(steps.every((s) => s.operation === 'loadbalancer.create' && s.error === null));
});

test('ostia health run apart counts what it refuses and serves the counters at amphora.healthMetricsListen', { skip: postgresPassOnly() }, async (t) => {
  const database = await freshPostgresDatabase(SERVER_URL!);
  const dir = mkdtempSync(join(tmpdir(), 'ostia-split-health-'));
  t.after(async () => {
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  });
  const [udp, metricsPort] = [await freeUdpPort(), await freeTcpPort()];
  const config = join(dir, 'health.json');
  // Loopback amphorae: as root the default would be netns + bridge, whose fabric outlives the process by design.
  writeFileSync(
    config,
    JSON.stringify({ compute: { driver: 'local' }, network: { driver: 'catalog' }, amphora: { healthListen: `127.0.0.1:${udp}`, healthMetricsListen: `127.0.0.1:${metricsPort}`, heartbeatSecret: 'h'.repeat(64) } }),
  );
  const health = await startRole(['health', '--config', config, '--data-dir', join(dir, 'data'), '--database-url', database.url]);
  try {
    const socket = createSocket('udp4');
    const forged = Buffer.alloc(4096, 0x41);
    for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => socket.send(forged, udp, '127.0.0.1', () => resolve()));
    socket.close();
    const refused = async () => {
      const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      return [...text.matchAll(/^ostia_heartbeats_refused_total\{[^}]*\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
    };
    assert.equal(await eventually(async () => ((await refused()) >= 5 ? refused() : undefined), 'the forged datagrams to be counted', 20_000, 100), 5);
  } finally {
    assert.equal(await stopRole(health), 0, health.stderr());
  }
});

/**
 * Under compute.driver noop nothing sends heartbeats, so the health manager must not fail the
 * amphorae over for their silence (Octavia's no-op setup runs no health manager). The same
 * silent amphora with local compute is failed over: the control that shows the check can fail.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { startHarness } from '../../test/support/harness.js';
import { activeLoadBalancer } from '../../test/support/seed-rows.js';
import { insertAmphora } from '../../test/support/health-rows.js';
import type { Config } from '../config.js';
import { HealthManager } from './index.js';

const TIMEOUT_MS = 200;

async function failoversOfSilentAmphora(t: { after(fn: () => Promise<void>): void }, driver: Config['compute']['driver'], waitMs: number): Promise<number> {
  const h = await startHarness({ compute: { driver } });
  t.after(() => h.close());
  const lb = await activeLoadBalancer(h);
  await h.runtime.worker!.close();
  await insertAmphora(h, lb.id, { last_heartbeat_at: null, created_at: '2025-01-01T00:00:00' });
  const config: Config = { ...h.config, amphora: { ...h.config.amphora, healthListen: '127.0.0.1:0', heartbeatTimeoutMs: TIMEOUT_MS } };
  const manager = new HealthManager({ db: h.runtime.db, config, jobs: h.runtime.deps.jobs, providers: h.runtime.deps.providers, log: pino({ level: 'silent' }) });
  await manager.start();
  t.after(() => manager.close());
  const jobs = async () => (await h.runtime.db.kysely.selectFrom('job').select('id').where('operation', '=', 'amphora.failover').execute()).length;
  // Stops early once a failover is there; else gives the manager many check periods past its grace.
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline && (await jobs()) === 0) await sleep(20);
  return jobs();
}

test('compute.driver local: an amphora that never sent a heartbeat is failed over', async (t) => {
  assert.equal(await failoversOfSilentAmphora(t, 'local', 30_000), 1);
});

test('compute.driver noop: the same amphora is left alone, however long it stays silent', async (t) => {
  assert.equal(await failoversOfSilentAmphora(t, 'noop', 10 * TIMEOUT_MS), 0);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Registry } from 'prom-client';
import { serveProcessMetrics } from './process-metrics.js';

test("a process without the API serves its own registry at /metrics, and nothing else", async (t) => {
  const registry = new Registry();
  new Counter({ name: 'ostia_heartbeats_refused_total', help: 'x', labelNames: ['reason'] as const, registers: [registry] }).inc({ reason: 'badMac' }, 3);
  const served = await serveProcessMetrics(registry, '127.0.0.1:0');
  t.after(() => served.close());
  const res = await fetch(`http://${served.listen}/metrics`);
  assert.equal(res.status, 200);
  assert.match(await res.text(), /ostia_heartbeats_refused_total\{reason="badMac"\} 3/);
  assert.equal((await fetch(`http://${served.listen}/other`)).status, 404);
});

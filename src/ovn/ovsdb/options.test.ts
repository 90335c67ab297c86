import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OVSDB_CLIENT_DEFAULTS, OvsdbOptionsError, backoffDelay, resolveOptions } from './options.js';

test('defaults fill what is not given; undefined does not erase a default', () => {
  const o = resolveOptions({ probeIntervalMs: undefined, backoffMaxMs: 20_000 });
  assert.equal(o.probeIntervalMs, OVSDB_CLIENT_DEFAULTS.probeIntervalMs);
  assert.equal(o.backoffMaxMs, 20_000);
  assert.equal(o.connectTimeoutMs, 180_000);
});

test('invalid options are refused with the option named', () => {
  assert.throws(() => resolveOptions({ probeIntervalMs: 50 }), /probeIntervalMs/);
  assert.throws(() => resolveOptions({ backoffInitialMs: 5_000, backoffMaxMs: 1_000 }), /backoffMaxMs/);
  assert.throws(() => resolveOptions({ connectTimeoutMs: 1.5 }), OvsdbOptionsError);
  assert.throws(() => resolveOptions({ tls: { key: 'k', cert: '', ca: 'c' } }), /tls/);
  assert.equal(resolveOptions({ probeIntervalMs: 0 }).probeIntervalMs, 0);
});

test('back-off doubles from the first delay and stays at the cap', () => {
  const o = { backoffInitialMs: 100, backoffMaxMs: 1_000 };
  assert.deepEqual([0, 1, 2, 3, 4, 5, 100].map((n) => backoffDelay(o, n)), [100, 200, 400, 800, 1_000, 1_000, 1_000]);
});

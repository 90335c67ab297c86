import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LocalJobSignal, PostgresJobSignal } from './signal.js';

test('a local notify wakes a waiter before its timeout', async () => {
  const s = new LocalJobSignal();
  const t0 = Date.now();
  const waiting = s.wait(5000);
  s.notify();
  await waiting;
  assert.ok(Date.now() - t0 < 4000);
  await s.close();
});

test('an abort ends a wait', async () => {
  const s = new LocalJobSignal();
  const ac = new AbortController();
  const waiting = s.wait(5000, ac.signal);
  ac.abort();
  await waiting;
  await s.close();
});

const pgUrl = process.env.OSTIA_TEST_DATABASE_URL;
test('a notify in one process reaches a worker of another through PostgreSQL', { skip: pgUrl ? false : 'OSTIA_TEST_DATABASE_URL is not set (PostgreSQL runs in CI)' }, async () => {
  const api = await PostgresJobSignal.connect(pgUrl!);
  const worker = await PostgresJobSignal.connect(pgUrl!);
  try {
    let woke = false;
    const waiting = worker.wait(10000).then(() => {
      woke = true;
    });
    // LISTEN is registered by connect(): the NOTIFY cannot be missed.
    api.notify();
    await Promise.race([waiting, new Promise((r) => setTimeout(r, 8000))]);
    assert.ok(woke, 'the worker was not woken within 8 s');
  } finally {
    await api.close();
    await worker.close();
  }
});

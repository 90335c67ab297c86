import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LocalJobSignal, PostgresJobSignal } from './signal.js';

// The waits below would end by themselves only after an hour: the test's own timeout fails
// them if the notify or the abort did not end them.
const HOUR = 3_600_000;

test('a local notify wakes a waiter', { timeout: 10_000 }, async () => {
  const s = new LocalJobSignal();
  const waiting = s.wait(HOUR);
  s.notify();
  await waiting;
  await s.close();
});

test('an abort ends a wait', { timeout: 10_000 }, async () => {
  const s = new LocalJobSignal();
  const ac = new AbortController();
  const waiting = s.wait(HOUR, ac.signal);
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
    const waiting = worker.wait(HOUR).then(() => {
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

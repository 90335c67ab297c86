import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { LocalJobSignal, PostgresJobSignal } from './signal.js';
import { openDatabase } from '../db/database.js';
import { freshPostgresDatabase } from '../../test/support/postgres.js';
import { postgresPassOnly } from '../../test/support/requirements.js';

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
test('a notify in one process reaches a worker of another through PostgreSQL', { skip: postgresPassOnly() }, async () => {
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

test('a LISTEN connection the server drops is opened again: the waiter is woken, later notifies arrive, and no idle connection lost crashes the process', { skip: postgresPassOnly(), timeout: 60_000 }, async () => {
  const database = await freshPostgresDatabase(pgUrl!);
  const name = new URL(database.url).pathname.slice(1);
  const api = await PostgresJobSignal.connect(database.url);
  const worker = await PostgresJobSignal.connect(database.url);
  const admin = await openDatabase(pgUrl!);
  try {
    api.notify(); // the sender's connection exists and is idle when the server ends it
    await worker.wait(HOUR);
    const rescan = worker.wait(HOUR);
    const { rows } = await sql<{ n: number }>`SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = ${name} AND pid <> pg_backend_pid()`.execute(admin.kysely);
    assert.ok(rows[0]!.n >= 2, `the server ended ${rows[0]!.n} connections, expected the sender's and both listeners`);
    await rescan; // woken when its LISTEN is back: notifies sent meanwhile were lost, so it re-scans
    const woken = worker.wait(HOUR);
    api.notify();
    await woken;
  } finally {
    await api.close();
    await worker.close();
    await admin.close();
    await database.drop();
  }
});

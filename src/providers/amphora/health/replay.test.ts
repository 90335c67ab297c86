import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { REPLAY_WINDOW, ReplayGuard } from './replay.js';

const NOW = 1_700_000_000_000;
const SKEW = 3000;
const EPOCH = NOW - 3_600_000; // booted an hour ago: up to 36 000 heartbeats at the fastest interval

function guard() {
  const replay = new ReplayGuard(SKEW);
  const id = randomUUID();
  const admit = (seq: number, epoch = EPOCH, sentAt = NOW, now = NOW) => replay.admit({ amphoraId: id, epoch, seq, sentAt }, now);
  return { admit, replay };
}

test('a hostile sequence number (2^53-1) is refused and does not block the genuine ones after it', () => {
  const { admit } = guard();
  assert.equal(admit(100), null);
  assert.equal(admit(Number.MAX_SAFE_INTEGER), 'replay', 'no boot of an hour can have got that far');
  assert.equal(admit(36_000 + 17), 'replay', 'nor just past the bound');
  for (let seq = 101; seq <= 110; seq++) assert.equal(admit(seq), null, `genuine ${seq}`);
});

test('a replayed datagram is refused; out-of-order ones within the window are accepted once', () => {
  const { admit } = guard();
  assert.equal(admit(10), null);
  assert.equal(admit(10), 'replay');
  assert.equal(admit(12), null);
  assert.equal(admit(11), null, 'late but new');
  assert.equal(admit(11), 'replay');
  assert.equal(admit(12), 'replay');
  assert.equal(admit(10 + 2 * REPLAY_WINDOW), null, 'a jump (lost heartbeats)');
  assert.equal(admit(10 + REPLAY_WINDOW), null, 'the oldest the window still holds, never seen');
  assert.equal(admit(10 + REPLAY_WINDOW - 1), 'replay', 'below the window: cannot tell, refused');
  assert.equal(admit(12), 'replay');
});

test('the window slides by exactly its width: nothing seen is forgotten while inside it', () => {
  const { admit } = guard();
  for (let seq = 1; seq <= 3 * REPLAY_WINDOW; seq++) assert.equal(admit(seq), null);
  for (let back = 0; back < REPLAY_WINDOW + 2; back++) assert.equal(admit(3 * REPLAY_WINDOW - back), 'replay', `seq ${3 * REPLAY_WINDOW - back}`);
  assert.equal(admit(4 * REPLAY_WINDOW), null, 'a jump of exactly the width');
  assert.equal(admit(3 * REPLAY_WINDOW), 'replay', 'the old top is still remembered');
  assert.equal(admit(3 * REPLAY_WINDOW + 1), null);
});

test('an agent restart (newer epoch) is accepted from seq 1; the old boot is then a replay; a future epoch is refused', () => {
  const { admit } = guard();
  assert.equal(admit(500), null);
  assert.equal(admit(1, NOW - 1000), null, 'the new boot');
  assert.equal(admit(2, NOW - 1000), null);
  assert.equal(admit(501), 'replay', 'the old boot is over');
  assert.equal(admit(1, NOW + SKEW + 1, NOW + 100), 'stale', 'an epoch beyond the skew allowance');
  assert.equal(admit(3, NOW - 1000), null, 'which changed nothing');
});

test('stale and future-dated heartbeats are refused; a controller restart accepts the first fresh one', () => {
  const { admit } = guard();
  assert.equal(admit(1, EPOCH, NOW - SKEW - 1), 'stale');
  assert.equal(admit(1, EPOCH, NOW + SKEW + 1), 'stale');
  const restarted = new ReplayGuard(SKEW);
  assert.equal(restarted.admit({ amphoraId: randomUUID(), epoch: EPOCH, seq: 30_000, sentAt: NOW }, NOW), null, 'no state: the first fresh one counts');
});

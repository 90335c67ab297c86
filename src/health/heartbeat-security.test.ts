/** Runs the security suite's heartbeat cases (test/security/heartbeats.ts) on their own. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { heartbeatCases } from '../../test/security/heartbeats.js';
import { Tally } from '../../test/security/tally.js';

test('the heartbeat security cases pass and record what they tried', async (t) => {
  const tally = new Tally();
  await heartbeatCases(tally);
  const summary = tally.summary();
  t.diagnostic(summary);
  for (const outcome of ['forged refused', 'replay refused', 'hostile sequence or time refused', 'new boot accepted', 'genuine accepted during flood', 'forged refused during flood'])
    assert.match(summary, new RegExp(`\\d ${outcome}`), summary);
  assert.ok(tally.attempts('heartbeats') > 1000, summary);
});

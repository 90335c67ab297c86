/**
 * The security regression suite: configuration injection through the API, isolation between
 * projects, the modes of private files, and forged heartbeats. Each area is its own test and
 * records its attempts in one tally, printed as one line at the end so a CI log shows how much
 * was tried and what became of it. An area lists everything that went wrong before failing,
 * so one run names every broken case.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { unmet } from './support/requirements.js';
import { Tally } from './security/tally.js';
import { injectionCases } from './security/injection.js';
import { crossProjectCases } from './security/cross-project.js';
import { fileModeCases } from './security/file-modes.js';
import { heartbeatCases } from './security/heartbeats.js';

const tally = new Tally();

after(() => {
  // On stdout: the spec reporter passes a test file's output through, and it reaches npm test's log.
  console.log(tally.summary());
});

const noFailures = (area: string, failures: readonly string[]) =>
  assert.ok(failures.length === 0, `${area}: ${failures.length} of ${tally.attempts(area).toLocaleString('en-US')} attempts went wrong:\n${failures.join('\n')}`);

test('injection: every field × hostile values is refused with a 400 naming the field, or rendered as data that haproxy -c accepts', { skip: unmet('haproxy'), timeout: 600_000 }, async () => {
  noFailures('injection', await injectionCases(tally));
});

test('cross-project: another project (and a reader) can neither read, list, change, build under nor refer to a project’s objects and secrets', { timeout: 300_000 }, async () => {
  noFailures('cross-project', await crossProjectCases(tally));
});

test('file modes: ostia up keeps every directory of its data directory 0700, every file 0600 and every socket owner-only, fixing what an earlier run left open', { skip: unmet('haproxy'), timeout: 300_000 }, async () => {
  noFailures('file modes', await fileModeCases(tally));
});

test('heartbeats: forged, replayed, hostile-sequence and flooding datagrams are refused and counted; genuine ones keep being accepted', { timeout: 120_000 }, async () => {
  await heartbeatCases(tally);
});

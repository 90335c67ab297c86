import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../config.js';
import { prepareDataDir } from './settings.js';

const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
/** A uid nobody on this machine has: what compute.driver netns gives an amphora. */
const OTHER_UID = 1_895_375_099;

test('the data directory is made owner-only, and what another user owns is refused with what to do', { skip: !asRoot && 'needs root to give a file to another user' }, (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ostia-datadir-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const config = defaultConfig(dir);
  writeFileSync(join(dir, 'clouds.yaml'), 'x', { mode: 0o644 });
  const fixed = prepareDataDir(config);
  assert.ok(fixed.some((l) => l.includes('clouds.yaml was mode 0644, made 0600')), fixed.join('\n'));
  assert.equal(statSync(join(dir, 'clouds.yaml')).mode & 0o777, 0o600);
  writeFileSync(join(dir, 'stray'), 'x', { mode: 0o600 });
  chownSync(join(dir, 'stray'), OTHER_UID, OTHER_UID);
  assert.throws(() => prepareDataDir(config), /stray belongs to user 1895375099, not to this process's user 0/);
});

test("an amphora's own directory under DATA_DIR/amphorae, owned by the amphora's uid, does not stop a restart", { skip: !asRoot && 'needs root to give a file to another user' }, (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ostia-datadir-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const config = defaultConfig(dir);
  const amphora = join(dir, 'amphorae', 'a1b2c3');
  mkdirSync(amphora, { recursive: true, mode: 0o700 });
  writeFileSync(join(amphora, 'agent.json'), '{}', { mode: 0o600 });
  chownSync(amphora, OTHER_UID, OTHER_UID);
  chownSync(join(amphora, 'agent.json'), OTHER_UID, OTHER_UID);
  assert.doesNotThrow(() => prepareDataDir(config));
  assert.equal(statSync(join(amphora, 'agent.json')).uid, OTHER_UID);
});

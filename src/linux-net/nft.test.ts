/** nft's complaints as Ostia reports them, then a script applied, refused and left unapplied in a namespace of the test's own. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { unmet } from '../../test/support/requirements.js';
import { deleteNetns, ensureNetns, IP } from './ip.js';
import { describeNftError, nftApply } from './nft.js';

const run = promisify(execFile);

test('an nft error keeps nft\'s complaint and names the script line it points at', () => {
  const script = 'table inet t {\n\tchain c { foo }\n}\n';
  const stderr = "/dev/stdin:2:16-16: Error: syntax error, unexpected '}'\n\tchain c { foo }\n\t          ^\n";
  assert.equal(describeNftError(stderr, script), "/dev/stdin:2:16-16: Error: syntax error, unexpected '}' (script line 2: chain c { foo })");
  assert.equal(describeNftError('netlink: Error: cache initialization failed: Operation not permitted\n', script), 'netlink: Error: cache initialization failed: Operation not permitted');
});

test('a script applies as one transaction: a bad line leaves nothing of the lines before it', { skip: unmet('namespaces'), timeout: 30_000 }, async (t) => {
  const netns = `ostia-nft-${process.pid.toString(36)}${randomBytes(2).toString('hex')}`;
  t.after(() => deleteNetns(netns));
  await ensureNetns(netns);
  await assert.rejects(
    nftApply(netns, 'add table inet kept\nadd chain inet kept c\nadd rule inet kept c tcp dport 80 bogus\n'),
    (e: Error) => e.message.startsWith(`nft -f - in network namespace ${netns} failed: /dev/stdin:3:`) && e.message.endsWith('(script line 3: add rule inet kept c tcp dport 80 bogus)'),
  );
  const listed = async () => (await run(IP, ['netns', 'exec', netns, 'nft', 'list', 'tables'], { timeout: 10_000 })).stdout.trim();
  assert.equal(await listed(), '');
  await nftApply(netns, 'add table inet kept\nadd chain inet kept c\nadd rule inet kept c tcp dport 80 accept\n');
  assert.equal(await listed(), 'table inet kept');
});

/**
 * `ostia server` as users run it (bin/ostia.js): its help, its usage mistakes, and the refusal when the
 * Ostia named is not on network.driver bridge. The servers themselves: src/network/bridge-network/servers.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runOstia } from '../../test/support/ostia-process.js';
import { unmet } from '../../test/support/requirements.js';

test('ostia server lists its commands; each answers --help; mistakes exit 2 naming the help to read', async () => {
  const [group, createHelp, overview, unknown, noName] = await Promise.all([
    runOstia('server', '--help'),
    runOstia('server', 'create', '--help'),
    runOstia('--help'),
    runOstia('server', 'frob'),
    runOstia('server', 'create', '--network', 'private'),
  ]);
  assert.equal(group.code, 0);
  for (const name of ['create', 'list', 'delete']) assert.match(group.stdout, new RegExp(`^  server ${name} `, 'm'));
  assert.equal(createHelp.code, 0);
  assert.match(createHelp.stdout, /^Usage: ostia server create \[options\] \[-- COMMAND\.\.\.\]/);
  assert.match(createHelp.stdout, /--network NETWORK/);
  assert.match(createHelp.stdout, /OSTIA_SERVER_ADDRESS/);
  assert.match(overview.stdout, /^ {2}server {2,}Create, list and delete servers/m);
  assert.deepEqual(unknown, { code: 2, stdout: '', stderr: "ostia server: unknown command 'frob'. Run 'ostia server --help' for the list.\n" });
  assert.deepEqual(noName, { code: 2, stdout: '', stderr: "ostia server create: --name is required. See 'ostia server create --help'.\n" });
});

test('ostia server refuses an Ostia whose network.driver is not bridge, saying how to start one', { skip: unmet('namespaces') }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ostia-server-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const config = join(dir, 'config.yaml');
  writeFileSync(config, 'compute:\n  driver: local\nnetwork:\n  driver: catalog\n');
  const r = await runOstia('server', 'list', '--config', config, '--data-dir', join(dir, 'data'));
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^ostia server list: servers live on the bridges of network\.driver bridge, but this Ostia's network\.driver is catalog\. Start 'ostia up' as root with network\.driver bridge/);
});

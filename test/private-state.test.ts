/**
 * Private state on disk, checked on a real `ostia up` with the amphora provider: the data
 * directory is owner-only with every file in it (SQLite with its -wal/-shm, secrets, clouds.yaml,
 * PKI, amphora directories), whatever the umask and whatever an earlier version left there.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killAll, processesUnder, startOstia } from './support/ostia-process.js';
import { writeAmphoraConfig } from './support/amphora-config.js';

/** Every path under `root` (itself included) that group or others may use, with its mode. */
function openToOthers(root: string): string[] {
  const found: string[] = [];
  const walk = (path: string) => {
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) return;
    if (stat.mode & 0o077) found.push(`${path} ${(stat.mode & 0o777).toString(8)}`);
    if (stat.isDirectory()) for (const entry of readdirSync(path)) walk(join(path, entry));
  };
  walk(root);
  return found;
}

test('ostia up keeps its data directory owner-only, fixing what an earlier run left open', async (t) => {
  const configDir = mkdtempSync(join(tmpdir(), 'ostia-private-'));
  const dataDir = join(configDir, 'data');
  // What an older version (or a loose umask) left: an open directory and open files.
  mkdirSync(join(dataDir, 'pki'), { recursive: true });
  chmodSync(dataDir, 0o755);
  writeFileSync(join(dataDir, 'token-secret'), 'a'.repeat(64) + '\n', { mode: 0o644 });
  chmodSync(join(dataDir, 'token-secret'), 0o644);
  const configFile = await writeAmphoraConfig(configDir);
  const previousUmask = process.umask(0o022);
  t.after(() => process.umask(previousUmask));
  const ostia = await startOstia({ extraArgs: ['--config', configFile], dataDir });
  t.after(async () => {
    killAll(processesUnder(join(dataDir, 'amphorae')));
    await ostia.stop();
    rmSync(configDir, { recursive: true, force: true });
  });

  const token = await ostia.token('ostia');
  const subnet = await ostia.subnetId('public-subnet');
  const created = await fetch(`${ostia.url}/v2/lbaas/loadbalancers`, {
    method: 'POST',
    headers: { 'x-auth-token': token, 'content-type': 'application/json' },
    body: JSON.stringify({ loadbalancer: { name: 'private', provider: 'amphora', vip_subnet_id: subnet } }),
  });
  assert.equal(created.status, 201, await created.clone().text());
  const { loadbalancer } = (await created.json()) as { loadbalancer: { id: string } };
  const deadline = Date.now() + 120_000;
  for (;;) {
    const res = await fetch(`${ostia.url}/v2/lbaas/loadbalancers/${loadbalancer.id}`, { headers: { 'x-auth-token': token } });
    const status = ((await res.json()) as { loadbalancer: { provisioning_status: string } }).loadbalancer.provisioning_status;
    if (status === 'ACTIVE') break;
    assert.notEqual(status, 'ERROR', ostia.logTail());
    assert.ok(Date.now() < deadline, `load balancer still ${status}`);
    await new Promise((r) => setTimeout(r, 200));
  }

  const present = readdirSync(dataDir);
  for (const name of ['ostia.db', 'ostia.db-wal', 'ostia.db-shm', 'token-secret', 'key-manager-key', 'heartbeat-secret', 'clouds.yaml', 'pki', 'amphorae'])
    assert.ok(present.includes(name), `${name} is not in the data directory (${present.join(', ')})`);
  assert.ok(readdirSync(join(dataDir, 'amphorae')).length > 0, 'no amphora directory');
  assert.ok(readdirSync(join(dataDir, 'pki')).length > 0, 'no PKI files');
  assert.deepEqual(openToOthers(dataDir), []);
  assert.match(ostia.logTail(), /token-secret was mode 0644, made 0600/);
});

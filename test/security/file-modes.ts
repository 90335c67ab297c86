/**
 * Private state on disk, on a real `ostia up` with the amphora provider and one load balancer:
 * every directory under the data directory is 0700, every file (SQLite with its -wal/-shm,
 * secrets, clouds.yaml, PKI, amphora files) 0600 and every socket owner-only, whatever the umask and whatever an
 * earlier version left there.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { killAll, processesUnder, startOstia, type OstiaProcess } from '../support/ostia-process.js';
import { writeAmphoraConfig } from '../support/amphora-config.js';
import { pathModes, type PathMode } from '../support/private-state.js';
import type { Tally } from './tally.js';

const AREA = 'file modes';
/** Directories 0700 and files 0600 exactly; a socket (HAProxy's master socket) owner-only. */
function notPrivate({ kind, mode }: PathMode): string | null {
  if (kind === 'directory') return mode === 0o700 ? null : 'not 0700';
  if (kind === 'file') return mode === 0o600 ? null : 'not 0600';
  return mode & 0o077 ? 'open to group or others' : null;
}

async function activeLoadBalancer(ostia: OstiaProcess): Promise<void> {
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
    if (status === 'ACTIVE') return;
    assert.notEqual(status, 'ERROR', ostia.logTail());
    assert.ok(Date.now() < deadline, `load balancer still ${status}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Returns the paths whose mode is not the wanted one, `path mode`. */
export async function fileModeCases(tally: Tally): Promise<string[]> {
  const configDir = mkdtempSync(join(tmpdir(), 'ostia-private-'));
  const dataDir = join(configDir, 'data');
  // What an older version (or a loose umask) left: an open directory and open files.
  mkdirSync(join(dataDir, 'pki'), { recursive: true });
  chmodSync(dataDir, 0o755);
  writeFileSync(join(dataDir, 'token-secret'), 'a'.repeat(64) + '\n', { mode: 0o644 });
  chmodSync(join(dataDir, 'token-secret'), 0o644);
  const configFile = await writeAmphoraConfig(configDir);
  const previousUmask = process.umask(0o022);
  let ostia: OstiaProcess | undefined;
  try {
    ostia = await startOstia({ extraArgs: ['--config', configFile], dataDir });
    await activeLoadBalancer(ostia);

    const present = readdirSync(dataDir);
    for (const name of ['ostia.db', 'ostia.db-wal', 'ostia.db-shm', 'token-secret', 'key-manager-key', 'heartbeat-secret', 'clouds.yaml', 'pki', 'amphorae'])
      assert.ok(present.includes(name), `${name} is not in the data directory (${present.join(', ')})`);
    assert.ok(readdirSync(join(dataDir, 'amphorae')).length > 0, 'no amphora directory');
    assert.ok(readdirSync(join(dataDir, 'pki')).length > 0, 'no PKI files');
    assert.match(ostia.logTail(), /token-secret was mode 0644, made 0600/);

    const wrong: string[] = [];
    for (const entry of pathModes(dataDir)) {
      const octal = entry.mode.toString(8).padStart(4, '0');
      tally.record(AREA, `${entry.kind} ${octal}`);
      const why = notPrivate(entry);
      if (why) wrong.push(`${relative(configDir, entry.path)} (${entry.kind}) ${octal}: ${why}`);
    }
    return wrong;
  } finally {
    process.umask(previousUmask);
    killAll(processesUnder(join(dataDir, 'amphorae')));
    await ostia?.stop();
    rmSync(configDir, { recursive: true, force: true });
  }
}

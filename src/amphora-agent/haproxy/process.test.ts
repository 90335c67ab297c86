import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HaproxyError, HaproxyProcess, type HaproxyFiles } from './process.js';
import { HaproxyRuntime } from './runtime.js';
import { collectBodies, eventually, httpGet, loopbackAddress, randomPort, startBackend, tempDir, type Backend } from '../../../test/support/amphora-fixtures.js';

const HAPROXY = '/usr/sbin/haproxy';
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

function filesIn(dir: string): HaproxyFiles {
  return {
    config: join(dir, 'haproxy.cfg'),
    masterSocket: join(dir, 'master.sock'),
    statsSocket: join(dir, 'stats.sock'),
    pidFile: join(dir, 'haproxy.pid'),
    stateFile: join(dir, 'haproxy.state'),
  };
}

function config(files: HaproxyFiles, vip: string, port: number, backends: Backend[]): string {
  return [
    'global',
    '    nbthread 1',
    '    maxconn 500',
    `    stats socket ${files.statsSocket} mode 600 level admin`,
    `    server-state-file ${files.stateFile}`,
    `    pidfile ${files.pidFile}`,
    'defaults',
    '    mode http',
    '    timeout connect 2s',
    '    timeout client 10s',
    '    timeout server 10s',
    '    load-server-state-from-file global',
    'frontend fe',
    `    bind ${vip}:${port}`,
    '    default_backend be',
    'backend be',
    '    balance roundrobin',
    ...backends.map((b) => `    server ${b.name} ${b.address}:${b.port}`),
    '',
  ].join('\n');
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function setUp(t: { after(fn: () => Promise<void> | void): void }) {
  const dir = tempDir('haproxy');
  const files = filesIn(dir.path);
  const vip = loopbackAddress();
  const port = randomPort();
  const a = await startBackend('a');
  const b = await startBackend('b');
  const haproxy = new HaproxyProcess({ binary: HAPROXY, files, log: quiet, readyTimeoutMs: 10_000, stopTimeoutMs: 2000, restartBackoff: { initialMs: 50, maxMs: 500 } });
  t.after(async () => {
    await haproxy.stop();
    await a.close();
    await b.close();
    dir.remove();
  });
  return { dir, files, vip, port, a, b, haproxy };
}

test('validate returns null for a good config and haproxy -c output for a bad one', async (t) => {
  const { files, vip, port, a, haproxy } = await setUp(t);
  assert.equal(await haproxy.validate(config(files, vip, port, [a])), null);
  const output = await haproxy.validate(config(files, vip, port, [a]).replace('balance roundrobin', 'balance roundrobin\n    sideways on'));
  assert.match(output ?? '', /unknown keyword 'sideways'/);
  assert.match(output ?? '', /haproxy\.cfg/, 'the temporary file is named as the real one');
});

test('start serves, reload is hitless and keeps the master, a failed reload keeps the old worker', async (t) => {
  const { files, vip, port, a, b, haproxy } = await setUp(t);
  writeFileSync(files.config, config(files, vip, port, [a]));
  await haproxy.start();
  const master = haproxy.status().masterPid;
  assert.ok(master && alive(master));
  assert.deepEqual(new Set(await collectBodies(vip, port, 4)), new Set(['a']));

  writeFileSync(files.config, config(files, vip, port, [a, b]));
  await haproxy.reload();
  assert.equal(haproxy.status().masterPid, master);
  assert.deepEqual(new Set(await collectBodies(vip, port, 6)), new Set(['a', 'b']));
  assert.ok(existsSync(files.stateFile), 'server state is dumped before the reload');

  writeFileSync(files.config, 'global\n    bogus_keyword\n');
  await assert.rejects(haproxy.reload(), (e: unknown) => e instanceof HaproxyError && /Loading failure/.test(e.message) && /bogus_keyword/.test(e.output));
  assert.equal(haproxy.status().running, true);
  assert.deepEqual(new Set(await collectBodies(vip, port, 6)), new Set(['a', 'b']));
});

test('a crashed haproxy is reported down, then restarted', async (t) => {
  const { files, vip, port, a, haproxy } = await setUp(t);
  writeFileSync(files.config, config(files, vip, port, [a]));
  await haproxy.start();
  const first = haproxy.status().masterPid!;
  process.kill(first, 'SIGKILL');
  await eventually(() => !haproxy.status().running, 'haproxy to be seen down', 2000, 5);
  assert.equal(haproxy.status().lastExit?.signal, 'SIGKILL');
  await eventually(() => haproxy.status().running, 'haproxy to be restarted', 10_000);
  assert.equal(haproxy.status().restarts, 1);
  assert.notEqual(haproxy.status().masterPid, first);
  assert.equal((await httpGet(vip, port)).body, 'a');
});

test('stop ends the master and its worker; start after stop works', async (t) => {
  const { files, vip, port, a, haproxy } = await setUp(t);
  writeFileSync(files.config, config(files, vip, port, [a]));
  await haproxy.start();
  const master = haproxy.status().masterPid!;
  await haproxy.stop();
  assert.equal(alive(master), false);
  assert.equal(haproxy.status().running, false);
  assert.equal((await httpGet(vip, port)).status, 0);
  await haproxy.start();
  assert.equal((await httpGet(vip, port)).body, 'a');
});

test('an haproxy left running by a previous agent is taken over without a gap', async (t) => {
  const { files, vip, port, a, haproxy } = await setUp(t);
  writeFileSync(files.config, config(files, vip, port, [a]));
  const orphan = spawn(HAPROXY, ['-W', '-S', files.masterSocket, '-f', files.config], { stdio: 'ignore', detached: true });
  t.after(() => {
    if (alive(orphan.pid!)) process.kill(orphan.pid!, 'SIGKILL');
  });
  await eventually(async () => (await httpGet(vip, port)).body === 'a', 'the orphan to serve');
  // Until its CLI listens, a fresh master loses signals, and -sf signals it; an orphan is never that young.
  const orphanCli = new HaproxyRuntime(files.masterSocket);
  await eventually(() => orphanCli.execute('show proc').then((reply) => reply.includes('master'), () => false), "the orphan's master CLI");
  assert.equal(Number(readFileSync(files.pidFile, 'utf8')), orphan.pid);

  await haproxy.start();
  assert.notEqual(haproxy.status().masterPid, orphan.pid);
  await eventually(() => orphan.exitCode !== null, 'the orphan to finish', 10_000);
  assert.equal((await httpGet(vip, port)).body, 'a');
});

test("the heartbeat's show stat keeps one CLI connection, asks the new worker after a reload and reopens a closed one", async (t) => {
  const { files, vip, port, a, b, haproxy } = await setUp(t);
  const withTimeout = (backends: Backend[]) => config(files, vip, port, backends).replace('    nbthread 1', '    nbthread 1\n    stats timeout 1s');
  writeFileSync(files.config, withTimeout([a]));
  await haproxy.start();
  const servers = async () => (await haproxy.runtime.showStat()).filter((r) => r.type === 'server').map((r) => r.svname);
  assert.deepEqual(await servers(), ['a']);
  assert.deepEqual(await servers(), ['a']);
  // Ours and the one asking: a connection per read would leave only the asker.
  const sessions = (await haproxy.runtime.execute('show sess')).split('\n').filter((line) => /fe=GLOBAL/.test(line));
  assert.equal(sessions.length, 2, sessions.join('\n'));

  writeFileSync(files.config, withTimeout([a, b]));
  await haproxy.reload();
  assert.deepEqual(await servers(), ['a', 'b'], "the new worker's servers, not the old one's");

  await new Promise((resolve) => setTimeout(resolve, 1500));
  assert.deepEqual(await servers(), ['a', 'b'], 'read again after HAProxy closed the idle connection');
});

/**
 * LocalCompute with real detached processes: a small Node script stands in for `ostia agent`
 * and starts a child of its own in the same group, as the agent starts HAProxy.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { LocalCompute } from './local-compute.js';
import { amphoraPath, defaultAgentCommand, findAmphoraProgram } from '../process-compute.js';
import { leaderRunning } from '../process-group.js';
import type { AgentBootConfig, AmphoraSpec } from '../compute-driver.js';

const AMPHORA_ID = '0b6f7c4e-2b1a-4c3d-9e8f-0a1b2c3d4e5f';
const OTHER_ID = '9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a';

/**
 * Records how it was started, starts a "haproxy" child in its group, then idles; with
 * `--ignore-term FILE` both are deaf to SIGTERM, and the agent notes in FILE that it got one.
 * It writes its files whole (a rename), so a reader never sees half of one.
 */
const FAKE_AGENT = `
const { spawn } = require('node:child_process');
const { renameSync, writeFileSync } = require('node:fs');
const writeWhole = (file, text) => {
  writeFileSync(file + '.tmp', text);
  renameSync(file + '.tmp', file);
};
const deafAt = process.argv.indexOf('--ignore-term');
if (deafAt > 0) process.on('SIGTERM', () => writeWhole(process.argv[deafAt + 1], 'SIGTERM'));
const child = spawn(process.execPath, ['-e', (deafAt > 0 ? "process.on('SIGTERM', () => {});" : '') + 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
writeWhole('started.json', JSON.stringify({ argv: process.argv.slice(2), cwd: process.cwd(), env: Object.keys(process.env), child: child.pid }));
console.log('fake agent up');
const readyFd = process.argv.indexOf('--ready-fd');
if (readyFd > 0) require('node:fs').writeSync(Number(process.argv[readyFd + 1]), 'ready\\n');
setInterval(() => {}, 1000);
`;

interface Started {
  argv: string[];
  cwd: string;
  env: string[];
  child: number;
}

function setup(t: { after(fn: () => Promise<void> | void): void }, extraArgs: string[] = [], stopGraceMs = 2_000) {
  const root = mkdtempSync(join(tmpdir(), 'ostia-local-compute-'));
  const script = join(root, 'fake-agent.cjs');
  writeFileSync(script, FAKE_AGENT);
  const compute = new LocalCompute(join(root, 'amphorae'), { command: (dir) => ({ file: process.execPath, args: [script, '--dir', dir, '--ready-fd', '3', ...extraArgs] }), stopGraceMs });
  t.after(async () => {
    for (const { computeId } of await compute.list()) await compute.delete(computeId);
    rmSync(root, { recursive: true, force: true });
  });
  return { root, compute };
}

function spec(compute: LocalCompute, amphoraId = AMPHORA_ID): AmphoraSpec {
  return {
    amphoraId,
    dir: compute.amphoraDir(amphoraId),
    managementAddress: '127.80.0.10',
    agentPort: 9443,
    certPem: 'CERT PEM\n',
    keyPem: 'KEY PEM\n',
    clientCaPem: 'CLIENT CA PEM\n',
    heartbeat: { key: 'secret-heartbeat-key', targets: ['127.0.0.1:5555'], intervalMs: 1000 },
    haproxyBinary: '/usr/sbin/haproxy',
    maxconn: 8000,
  };
}

/** What the fake agent recorded: it writes started.json (and its log line) before its ready line, which `started()` awaits. */
async function started(compute: LocalCompute, computeId: string): Promise<Started> {
  await compute.started(computeId, AbortSignal.timeout(30_000));
  return JSON.parse(readFileSync(join(compute.amphoraDir(compute.parseComputeId(computeId)), 'started.json'), 'utf8')) as Started;
}

const alive = (pid: number) => leaderRunning({ pid, startTime: null });
const pidRecord = (dir: string) => JSON.parse(readFileSync(join(dir, 'agent.pid'), 'utf8')) as { pid: number; startTime: string | null };
const pgrpOf = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[2]);
const mode = (file: string) => statSync(file).mode & 0o777;

test('boot writes agent.json and the 0600 secrets, and starts the agent detached in its own group', async (t) => {
  const { compute } = setup(t);
  const s = spec(compute);
  const computeId = await compute.boot(s, AbortSignal.timeout(10_000));
  assert.equal(computeId, `local:${AMPHORA_ID}`);
  const dir = s.dir;
  const config = JSON.parse(readFileSync(join(dir, 'agent.json'), 'utf8')) as AgentBootConfig;
  assert.deepEqual(config, {
    amphoraId: AMPHORA_ID,
    managementAddress: '127.80.0.10',
    agentPort: 9443,
    certFile: join(dir, 'server.pem'),
    keyFile: join(dir, 'server.key'),
    clientCaFile: join(dir, 'client-ca.pem'),
    heartbeat: { key: 'secret-heartbeat-key', targets: ['127.0.0.1:5555'], intervalMs: 1000 },
    haproxyBinary: '/usr/sbin/haproxy',
    maxconn: 8000,
  });
  assert.equal(readFileSync(config.certFile, 'utf8'), 'CERT PEM\n');
  assert.equal(readFileSync(config.keyFile, 'utf8'), 'KEY PEM\n');
  assert.equal(readFileSync(config.clientCaFile, 'utf8'), 'CLIENT CA PEM\n');
  for (const f of ['agent.json', 'server.pem', 'server.key', 'client-ca.pem']) assert.equal(mode(join(dir, f)), 0o600, f);
  assert.equal(mode(dir), 0o700);

  const run = await started(compute, computeId);
  assert.deepEqual(run.argv, ['--dir', dir, '--ready-fd', '3']);
  assert.equal(run.cwd, dir);
  assert.deepEqual(run.env, ['PATH'], 'none of the controller environment leaks into the amphora');
  const { pid } = pidRecord(dir);
  assert.equal(pgrpOf(pid), pid, 'the agent leads its own process group');
  assert.notEqual(pgrpOf(pid), pgrpOf(process.pid));
  assert.equal(pgrpOf(run.child), pid, "its HAProxy stand-in is in the agent's group");
  assert.equal(await compute.status(computeId), 'running');
  assert.deepEqual(await compute.list(), [{ computeId, amphoraId: AMPHORA_ID }]);
  // Printed before the ready line, to a file (which Node writes synchronously).
  assert.match(readFileSync(join(dir, 'agent.log'), 'utf8'), /fake agent up/);
});

test('delete stops the whole group and removes the directory', async (t) => {
  const { compute } = setup(t);
  const s = spec(compute);
  const computeId = await compute.boot(s, AbortSignal.timeout(10_000));
  const run = await started(compute, computeId);
  const { pid } = pidRecord(s.dir);
  await compute.delete(computeId);
  assert.ok(!alive(pid), 'agent stopped');
  assert.ok(!alive(run.child), 'its child stopped');
  assert.ok(!existsSync(s.dir));
  assert.equal(await compute.status(computeId), 'stopped');
  assert.deepEqual(await compute.list(), []);
  await compute.delete(computeId); // again: nothing left, still fine
});

test('amphorae outlive the driver instance: a new one (a restarted controller) finds and deletes them', async (t) => {
  const { root, compute } = setup(t);
  const s = spec(compute);
  const computeId = await compute.boot(s, AbortSignal.timeout(10_000));
  await started(compute, computeId);
  const restarted = new LocalCompute(join(root, 'amphorae'));
  assert.equal(await restarted.status(computeId), 'running');
  assert.deepEqual(await restarted.list(), [{ computeId, amphoraId: AMPHORA_ID }]);
  await restarted.delete(computeId);
  assert.equal(await compute.status(computeId), 'stopped');
});

test('processes that ignore SIGTERM are killed after the grace period', async (t) => {
  const termNoted = join(mkdtempSync(join(tmpdir(), 'ostia-term-')), 'term');
  t.after(() => rmSync(dirname(termNoted), { recursive: true, force: true }));
  // The grace is the agent's time to note the SIGTERM (outliving it) before the SIGKILL, however loaded the machine.
  const { compute } = setup(t, ['--ignore-term', termNoted], 2_000);
  const s = spec(compute);
  const computeId = await compute.boot(s, AbortSignal.timeout(10_000));
  const run = await started(compute, computeId);
  const { pid } = pidRecord(s.dir);
  await compute.delete(computeId);
  assert.equal(readFileSync(termNoted, 'utf8'), 'SIGTERM', 'asked to stop first, and outlived it');
  assert.ok(!alive(pid) && !alive(run.child));
});

test('booting a running amphora again returns its id without starting a second one', async (t) => {
  const { compute } = setup(t);
  const s = spec(compute);
  const computeId = await compute.boot(s, AbortSignal.timeout(10_000));
  await started(compute, computeId);
  const first = pidRecord(s.dir);
  assert.equal(await compute.boot(s, AbortSignal.timeout(10_000)), `local:${AMPHORA_ID}`);
  assert.deepEqual(pidRecord(s.dir), first);
});

test('a crashed agent: stopped, and its orphaned child is cleaned up by delete (and by a re-boot)', async (t) => {
  const { compute } = setup(t);
  const s = spec(compute);
  const computeId = await compute.boot(s, AbortSignal.timeout(10_000));
  const run = await started(compute, computeId);
  process.kill(pidRecord(s.dir).pid, 'SIGKILL');
  for (const deadline = Date.now() + 5_000; alive(pidRecord(s.dir).pid) && Date.now() < deadline; ) await sleep(20);
  assert.equal(await compute.status(computeId), 'stopped');
  assert.ok(alive(run.child), 'the HAProxy stand-in survived the agent');
  rmSync(join(s.dir, 'started.json'));
  await compute.boot(s, AbortSignal.timeout(10_000));
  assert.ok(!alive(run.child), 're-boot cleared the old group first');
  const second = await started(compute, computeId);
  await compute.delete(computeId);
  assert.ok(!alive(second.child));
});

test('a group spawned but never recorded (the controller died in between) is found by its directory and stopped', async (t) => {
  const { compute } = setup(t);
  const s = spec(compute);
  const computeId = await compute.boot(s, AbortSignal.timeout(10_000));
  const run = await started(compute, computeId);
  const { pid } = pidRecord(s.dir);
  rmSync(join(s.dir, 'agent.pid'));
  // A re-boot must not leave the unrecorded group beside the new one.
  await compute.boot(s, AbortSignal.timeout(10_000));
  assert.ok(!alive(pid) && !alive(run.child), 'the unrecorded group was stopped');
  const again = pidRecord(s.dir).pid;
  assert.notEqual(again, pid);
  rmSync(join(s.dir, 'agent.pid'));
  await compute.delete(computeId);
  assert.ok(!alive(again), 'delete stops a group it has no pid file for');
  assert.ok(!existsSync(s.dir));
});

test('a pid file whose pid now belongs to another process is not signalled', async (t) => {
  const { compute } = setup(t);
  const dir = compute.amphoraDir(OTHER_ID);
  const computeId = await compute.boot(spec(compute, OTHER_ID), AbortSignal.timeout(10_000));
  await started(compute, computeId);
  await compute.delete(`local:${OTHER_ID}`);
  // Pretend the machine rebooted and our own (test) process got the recorded pid.
  await compute.boot(spec(compute, OTHER_ID), AbortSignal.timeout(10_000));
  await started(compute, computeId);
  const real = pidRecord(dir);
  t.after(() => {
    try {
      process.kill(-real.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  writeFileSync(join(dir, 'agent.pid'), JSON.stringify({ pid: process.pid, startTime: 'not-our-start-time' }));
  assert.equal(await compute.status(`local:${OTHER_ID}`), 'stopped');
  await compute.delete(`local:${OTHER_ID}`);
  assert.ok(alive(process.pid), 'the test process was not signalled');
  assert.ok(!existsSync(dir));
});

test('boot refuses ids that are not UUIDs, directories outside the root, and an aborted signal', async (t) => {
  const { root, compute } = setup(t);
  await assert.rejects(compute.boot({ ...spec(compute), amphoraId: '../etc' }, AbortSignal.timeout(1000)), /cannot boot amphora '\.\.\/etc': the id must be a UUID/);
  await assert.rejects(
    compute.boot({ ...spec(compute), dir: join(root, 'elsewhere') }, AbortSignal.timeout(1000)),
    new RegExp(`cannot boot amphora ${AMPHORA_ID} in ${join(root, 'elsewhere')}: the local compute driver keeps amphorae in ${compute.amphoraDir(AMPHORA_ID)}`),
  );
  const aborted = AbortSignal.abort(new Error('worker stopping'));
  await assert.rejects(compute.boot(spec(compute), aborted), /worker stopping/);
  assert.deepEqual(await compute.list(), []);
});

test('started() awaits the line the agent writes on its ready pipe', async (t) => {
  const { compute } = setup(t);
  const computeId = await compute.boot(spec(compute), AbortSignal.timeout(10_000));
  await compute.started(computeId, AbortSignal.timeout(10_000));
  // The fake writes its ready line after started.json: awaiting it means the agent got that far.
  assert.ok(existsSync(join(spec(compute).dir, 'started.json')));
});

test('started() rejects, naming the log, when the processes exit before saying they serve', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'ostia-local-compute-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const compute = new LocalCompute(root, { command: () => ({ file: process.execPath, args: ['-e', 'process.exit(3)'] }) });
  const computeId = await compute.boot(spec(compute), AbortSignal.timeout(10_000));
  await assert.rejects(compute.started(computeId, AbortSignal.timeout(10_000)), /exited \(code 3\) before its agent listened; see .*agent\.log/);
});

test('started() resolves at once for an amphora another driver instance booted, and ends on abort', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'ostia-local-compute-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const silent = new LocalCompute(root, { command: () => ({ file: process.execPath, args: ['-e', 'setTimeout(() => {}, 30000)'] }), stopGraceMs: 100 });
  const computeId = await silent.boot(spec(silent), AbortSignal.timeout(10_000));
  t.after(() => silent.delete(computeId));
  await new LocalCompute(root).started(computeId, AbortSignal.timeout(10_000));
  await assert.rejects(silent.started(computeId, AbortSignal.timeout(200)), (e: Error) => e.name === 'TimeoutError');
});

test('a program that cannot be started fails boot with the reason', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'ostia-local-compute-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const compute = new LocalCompute(root, { command: () => ({ file: join(root, 'no-such-program'), args: [] }) });
  await assert.rejects(compute.boot(spec(compute), AbortSignal.timeout(1000)), /ENOENT/);
});

test('unknown compute ids are stopped and deletable; ids of other drivers are refused', async (t) => {
  const { compute } = setup(t);
  assert.equal(await compute.status(`local:${OTHER_ID}`), 'stopped');
  await compute.delete(`local:${OTHER_ID}`);
  await assert.rejects(compute.status('nova:1234'), /'nova:1234' is not a compute id of the local driver \(local:<amphora id>\)/);
  assert.throws(() => compute.parseComputeId('local:../../x'), /is not a compute id of the local driver/);
});

test('list ignores entries that are not amphora directories', async (t) => {
  const { compute } = setup(t);
  assert.deepEqual(await compute.list(), [], 'missing root: empty');
  await compute.boot(spec(compute), AbortSignal.timeout(10_000));
  writeFileSync(join(compute.rootDir, 'notes.txt'), 'x');
  assert.deepEqual((await compute.list()).map((a) => a.amphoraId), [AMPHORA_ID]);
});

test('amphorae find programs in sbin directories too, where Debian puts haproxy', (t) => {
  const saved = process.env.PATH;
  t.after(() => {
    process.env.PATH = saved;
  });
  process.env.PATH = '/usr/bin:/bin';
  assert.deepEqual(amphoraPath().split(':'), ['/usr/bin', '/bin', '/usr/local/sbin', '/usr/sbin', '/sbin']);
  assert.equal(findAmphoraProgram('sh'), '/usr/bin/sh');
  assert.equal(findAmphoraProgram('/bin/sh'), '/bin/sh');
  assert.equal(findAmphoraProgram('no-such-program-anywhere'), null);
  const plain = join(mkdtempSync(join(tmpdir(), 'ostia-path-')), 'haproxy');
  writeFileSync(plain, '#!/bin/sh\n', { mode: 0o644 });
  t.after(() => rmSync(dirname(plain), { recursive: true, force: true }));
  assert.equal(findAmphoraProgram(plain), null, 'not executable');
  assert.equal(findAmphoraProgram('/usr'), null, 'a directory');
});

test('the default command runs this checkout\'s bundled agent under the current Node', () => {
  const { file, args } = defaultAgentCommand('/data/amphorae/x');
  assert.equal(file, process.execPath);
  assert.match(args[0]!, /\/dist\/ostia-agent\.mjs$/);
  assert.ok(existsSync(args[0]!));
  assert.deepEqual(args.slice(1), ['--dir', '/data/amphorae/x', '--ready-fd', '3']);
});

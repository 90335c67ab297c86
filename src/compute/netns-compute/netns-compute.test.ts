/**
 * NetnsCompute with the real agent bundle, HAProxy and a BridgeNetwork fabric, as root: an amphora
 * boots into its own namespaces, the controller reaches its agent over mutual TLS on the management
 * bridge and gets its heartbeats there, HAProxy serves a VIP on a tenant bridge the test builds to a
 * client namespace, the controller's data directory stays out of its sight, and a fresh driver (a
 * restarted controller) finds it and deletes every trace of it.
 */
import { asAmphora } from '../../../test/support/as-amphora.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { IP, netnsExists, netnsPids, plugPort } from '../../linux-net/ip.js';
import { leaderRunning } from '../process-group.js';
import { defaultAgentCommand } from '../process-compute.js';
import type { AmphoraSpec } from '../compute-driver.js';
import { amphoraUid, NetnsCompute } from './netns-compute.js';
import { unmet } from '../../../test/support/requirements.js';
import { ids, listener, loadBalancer, member, pool } from '../../../test/support/render-fixtures.js';
import { agentClient, netnsLab, pidRecord, processesNamed, statusField, tenantNetwork, until, type NetnsLab } from '../../../test/support/netns-lab.js';

/** The amphora the render fixtures' configurations are for. */
const AMPHORA_ID = ids.amphora(1);
const TENANT = { cidr: 24, vip: '10.77.0.50', member: '10.77.0.21', client: '10.77.0.100' };
const skip = unmet('namespaces') || unmet('haproxy');
/** Every test ends, passing or not, within this; each wait inside it is bounded more tightly. */
const options = { skip, timeout: 60_000 };
const run = promisify(execFile);

interface Lab extends NetnsLab {
  spec: AmphoraSpec;
}

/** The netns lab and the spec of the one amphora these tests boot. */
async function lab(t: { after(fn: () => Promise<void> | void): void }): Promise<Lab> {
  const l = await netnsLab(t);
  return { ...l, spec: await l.specFor(AMPHORA_ID) };
}

test('an amphora boots into its own namespaces on the management bridge, under its own uid (its boot time printed)', options, async (t) => {
  const l = await lab(t);
  const started = performance.now();
  const computeId = await l.compute.boot(l.spec, AbortSignal.timeout(10_000));
  await l.compute.started(computeId, AbortSignal.timeout(10_000));
  const bootMs = performance.now() - started;
  t.diagnostic(`netns amphora boot to agent listening: ${bootMs.toFixed(0)} ms`);
  assert.equal(computeId, `netns:${AMPHORA_ID}`);

  const netns = l.compute.namespaceOf(AMPHORA_ID);
  const { pid } = pidRecord(l.spec.dir);
  assert.equal(execFileSync(IP, ['netns', 'identify', String(pid)], { encoding: 'utf8' }).trim(), netns, 'the agent runs in the amphora namespace');
  assert.equal(statusField(pid, 'Uid'), String(amphoraUid(AMPHORA_ID)));
  assert.equal(statusField(pid, 'Gid'), String(amphoraUid(AMPHORA_ID)));
  assert.equal(statusField(pid, 'NoNewPrivs'), '1');
  // CAP_NET_ADMIN (12) and CAP_NET_RAW (13), of its own network namespace, and nothing else.
  for (const set of ['CapAmb', 'CapEff', 'CapBnd']) assert.equal(statusField(pid, set), '0000000000003000', set);
  assert.match(execFileSync(IP, ['-n', netns, '-o', '-4', 'address', 'show', 'dev', 'eth0'], { encoding: 'utf8' }), new RegExp(`inet ${l.spec.managementAddress}/24 `));

  const client = await agentClient(l, l.spec);
  t.after(() => client.close());
  const info = await client.info();
  assert.equal(info.amphoraId, AMPHORA_ID, 'the controller reaches the agent over mutual TLS on the management address');

  const from = await until('a heartbeat on the management network', () => l.datagrams[0]);
  assert.equal(from.address, l.spec.managementAddress, 'sent from the management address');
  const accepted = await until("the health manager's receiver accepting a heartbeat", () => l.accepted[0]);
  assert.equal(accepted.heartbeat.amphoraId, AMPHORA_ID);
});

test("the amphora sees its own directory but not the controller's data directory, /run or other amphorae", options, async (t) => {
  const l = await lab(t);
  writeFileSync(join(l.dataDir, 'controller-secret'), 'not for amphorae', { mode: 0o644 });
  const computeId = await l.compute.boot(l.spec, AbortSignal.timeout(10_000));
  await l.compute.started(computeId, AbortSignal.timeout(10_000));
  const { pid } = pidRecord(l.spec.dir);
  await assert.rejects(asAmphora(AMPHORA_ID, pid, 'cat', join(l.dataDir, 'controller-secret')), /No such file or directory/);
  await assert.rejects(asAmphora(AMPHORA_ID, pid, 'ls', join(l.dataDir, 'pki')), /No such file or directory/);
  assert.equal((await asAmphora(AMPHORA_ID, pid, 'ls', l.dataDir)).stdout, 'amphorae\n');
  assert.equal((await asAmphora(AMPHORA_ID, pid, 'ls', join(l.dataDir, 'amphorae'))).stdout, `${AMPHORA_ID}\n`);
  assert.match((await asAmphora(AMPHORA_ID, pid, 'cat', join(l.spec.dir, 'agent.json'))).stdout, new RegExp(AMPHORA_ID));
  assert.equal((await asAmphora(AMPHORA_ID, pid, 'ls', '-A', '/run')).stdout, '', "none of the machine's sockets and namespaces");
  // The controller's own record of the amphora stays the controller's: the sticky directory keeps the agent from replacing it.
  await assert.rejects(asAmphora(AMPHORA_ID, pid, 'mv', '-f', join(l.spec.dir, 'agent.json'), join(l.spec.dir, 'agent.pid')), /Operation not permitted|Permission denied/);
});

test('an agent installed under /tmp, which amphorae get privately, runs from its own directory bound back read-only', options, async (t) => {
  const l = await lab(t);
  const installed = mkdtempSync('/tmp/ostia-nc-install-');
  t.after(() => rmSync(installed, { recursive: true, force: true }));
  chmodSync(installed, 0o755); // as an installed program's directory is, and mkdtemp's is not
  const bundled = defaultAgentCommand(l.spec.dir);
  const copy = join(installed, basename(bundled.args[0]!));
  copyFileSync(bundled.args[0]!, copy);
  writeFileSync(join(installed, 'beside-the-agent'), 'visible');
  const compute = new NetnsCompute(join(l.dataDir, 'amphorae'), {
    management: l.net.management,
    dataDir: l.dataDir,
    stopGraceMs: 2_000,
    command: (dir) => ({ file: bundled.file, args: [copy, ...defaultAgentCommand(dir).args.slice(1)] }),
  });
  const computeId = await compute.boot(l.spec, AbortSignal.timeout(10_000));
  await compute.started(computeId, AbortSignal.timeout(10_000));
  const { pid } = pidRecord(l.spec.dir);
  assert.deepEqual((await asAmphora(AMPHORA_ID, pid, 'ls', '/tmp')).stdout.split('\n').filter(Boolean), [basename(l.dataDir), basename(installed)].sort(), 'of all /tmp, only the data directory (empty but for the amphora) and the directory the agent needs');
  assert.equal((await asAmphora(AMPHORA_ID, pid, 'cat', join(installed, 'beside-the-agent'))).stdout, 'visible');
  await assert.rejects(asAmphora(AMPHORA_ID, pid, 'touch', join(installed, 'written')), /Read-only file system/);
});

test('HAProxy serves the VIP inside the amphora to a client namespace on a tenant bridge', options, async (t) => {
  const l = await lab(t);
  const computeId = await l.compute.boot(l.spec, AbortSignal.timeout(10_000));
  await l.compute.started(computeId, AbortSignal.timeout(10_000));
  const tenant = await tenantNetwork(t, l, { prefixLength: TENANT.cidr, member: TENANT.member, client: TENANT.client });
  await plugPort(tenant.attachment, 'vip', l.compute.namespaceOf(AMPHORA_ID), TENANT.vip, 'eth1');

  const client = await agentClient(l, l.spec);
  t.after(() => client.close());
  const config = loadBalancer(1, {
    vip: { address: TENANT.vip, additional: [] },
    listeners: [listener(1, { port: 80, defaultPoolId: ids.pool(1) })],
    pools: [pool(1, { members: [member(1, { address: TENANT.member, port: 8080 })] })],
  });
  assert.deepEqual(await client.putConfig(config), { version: 1, applied: 'reload' });
  const curl = await run(IP, ['netns', 'exec', tenant.ns.client, 'curl', '-sS', '--max-time', '5', `http://${TENANT.vip}/`], { timeout: 10_000 });
  assert.equal(curl.stdout, 'member');
  const haproxy = processesNamed(l.compute.namespaceOf(AMPHORA_ID), 'haproxy');
  assert.ok(haproxy.length > 0, 'HAProxy runs in the amphora namespace');
  for (const pid of haproxy) {
    assert.equal(statusField(pid, 'Uid'), String(amphoraUid(AMPHORA_ID)), 'as the amphora uid');
    // The agent's network capabilities stay the agent's: HAProxy handles tenant traffic.
    for (const set of ['CapEff', 'CapPrm', 'CapInh', 'CapAmb']) assert.equal(statusField(pid, set), '0000000000000000', `HAProxy ${pid} ${set}`);
  }
});

test('a restarted controller finds the amphora running and deletes its processes, namespace and veth', options, async (t) => {
  const l = await lab(t);
  const computeId = await l.compute.boot(l.spec, AbortSignal.timeout(10_000));
  await l.compute.started(computeId, AbortSignal.timeout(10_000));
  const netns = l.compute.namespaceOf(AMPHORA_ID);
  const pids = netnsPids(netns);
  assert.ok(pids.length > 0);

  const fresh = new NetnsCompute(join(l.dataDir, 'amphorae'), { management: l.net.management, dataDir: l.dataDir, stopGraceMs: 2_000 });
  assert.equal(await fresh.status(computeId), 'running');
  assert.deepEqual(await fresh.list(), [{ computeId, amphoraId: AMPHORA_ID }]);
  assert.equal(await fresh.boot(l.spec, AbortSignal.timeout(10_000)), computeId, 'booting a running amphora again changes nothing');
  assert.deepEqual(netnsPids(netns), pids);

  await fresh.delete(computeId);
  assert.ok(!netnsExists(netns), 'namespace gone');
  assert.equal(execFileSync(IP, ['-n', l.net.fabric, '-o', 'link', 'show'], { encoding: 'utf8' }).includes(`a${AMPHORA_ID.replace(/-/g, '').slice(0, 12)}`), false, 'its management veth gone');
  for (const pid of pids) assert.ok(!leaderRunning({ pid, startTime: null }), `process ${pid} gone`);
  assert.ok(!existsSync(l.spec.dir));
  assert.equal(await fresh.status(computeId), 'stopped');
  assert.deepEqual(await fresh.list(), []);
});

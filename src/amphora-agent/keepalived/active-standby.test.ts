/**
 * ACTIVE_STANDBY between two real netns amphorae, as root: each agent gets the VIP and its half of the
 * pair, keepalived puts the VIP on the MASTER, and the BACKUP takes it when the MASTER's HAProxy dies,
 * its keepalived's VRRP child dies, its tenant link goes down, or the whole amphora is deleted. A client
 * namespace opens a new connection to the VIP every 20 ms meanwhile; the interruption is printed (timings
 * are never pass/fail), what is asserted is that the VIP is served again, by the BACKUP.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { IP, ip, plugPort } from '../../linux-net/ip.js';
import type { AmphoraConfig } from '../../domain/amphora-config.js';
import { amphoraUid } from '../../compute/netns-compute/netns-compute.js';
import { HaproxyRuntime } from '../haproxy/runtime.js';
import { backendName } from '../haproxy/names.js';
import { unmet } from '../../../test/support/requirements.js';
import { ids, listener, loadBalancer, member, pool } from '../../../test/support/render-fixtures.js';
import { agentClient, netnsLab, processesNamed, statusField, tenantNetwork, until, type NetnsLab } from '../../../test/support/netns-lab.js';

const run = promisify(execFile);
const NET = { prefixLength: 24, vip: '10.78.0.50', member: '10.78.0.21', client: '10.78.0.100' };
// Random: the compute driver names an amphora's port and uid after the first hex digits of its id.
const PAIR = [
  { id: randomUUID(), base: '10.78.0.11', role: 'MASTER' as const, priority: 100 },
  { id: randomUUID(), base: '10.78.0.12', role: 'BACKUP' as const, priority: 90 },
];
const ADVERT_MS = 100;
/** The VIP must be served again within this after the fault (measured: well under a second). */
const SERVED_AGAIN_WITHIN_MS = 10_000;
const options = { skip: unmet('namespaces') || unmet('haproxy') || unmet('keepalived'), timeout: 120_000 };

interface Pair {
  l: NetnsLab;
  clientNs: string;
  /** Network namespace of amphora i. */
  ns: (i: number) => string;
  dir: (i: number) => string;
  computeId: (i: number) => string;
}

function configFor(i: number): AmphoraConfig {
  const self = PAIR[i]!;
  const config = loadBalancer(1, {
    amphoraId: self.id,
    vip: { address: NET.vip, additional: [] },
    listeners: [listener(1, { port: 80, defaultPoolId: ids.pool(1) })],
    pools: [pool(1, { sessionPersistence: { type: 'SOURCE_IP', cookieName: null }, members: [member(1, { address: NET.member, port: 8080 })] })],
  });
  return {
    ...config,
    vrrp: {
      role: self.role,
      priority: self.priority,
      virtualRouterId: 51,
      interface: 'eth1',
      address: self.base,
      peers: PAIR.filter((p) => p !== self).map((p) => p.base),
      vipPrefixLength: NET.prefixLength,
      advertIntervalMs: ADVERT_MS,
      haproxyPeers: PAIR.map((p) => ({ name: p.id, address: p.base, port: 1025 })),
    },
  };
}

/** Two amphorae on one tenant bridge, configured as a pair; resolves once the MASTER serves the VIP. */
async function pair(t: Parameters<typeof netnsLab>[0]): Promise<Pair> {
  const l = await netnsLab(t);
  const tenant = await tenantNetwork(t, l, NET);
  const computeIds: string[] = [];
  for (const [i, self] of PAIR.entries()) {
    const spec = await l.specFor(self.id, i);
    computeIds.push(await l.compute.boot(spec, AbortSignal.timeout(15_000)));
    await l.compute.started(computeIds[i]!, AbortSignal.timeout(15_000));
    await plugPort(tenant.attachment, `base${i}`, l.compute.namespaceOf(self.id), self.base, 'eth1');
    const client = await agentClient(l, spec);
    t.after(() => client.close());
    assert.deepEqual(await client.putConfig(configFor(i)), { version: 1, applied: 'reload' });
  }
  const p: Pair = { l, clientNs: tenant.ns.client, ns: (i) => l.compute.namespaceOf(PAIR[i]!.id), dir: (i) => l.compute.amphoraDir(PAIR[i]!.id), computeId: (i) => computeIds[i]! };
  await until('the MASTER holding the VIP', async () => ((await holder(p)) === 0 ? true : undefined), 10_000);
  assert.equal(await get(p), 'member', 'the VIP is served');
  return p;
}

/** Which amphora has the VIP on its tenant interface (`ip -n <ns> addr`), or null; both is an error. */
async function holder(p: Pair): Promise<number | null> {
  const holding: number[] = [];
  for (const i of PAIR.keys()) {
    const out = await ip('-n', p.ns(i), '-o', '-4', 'addr', 'show', 'dev', 'eth1').catch(() => '');
    if (out.includes(`inet ${NET.vip}/`)) holding.push(i);
  }
  assert.ok(holding.length <= 1, `both amphorae hold the VIP`);
  return holding[0] ?? null;
}

async function get(p: Pair): Promise<string> {
  return (await run(IP, ['netns', 'exec', p.clientNs, 'curl', '-sS', '--max-time', '5', `http://${NET.vip}/`], { timeout: 10_000 })).stdout;
}

/**
 * Connects to the VIP every 20 ms from the client namespace (each try: connect, request, reply within
 * 200 ms) until 50 in a row succeed after a failure, or the time is up; reports the first failure and
 * the first success after it, ms since the prober started.
 */
const PROBER = `
const net = require('node:net');
const [vip, limitMs] = [process.argv[1], Number(process.argv[2])];
const started = Date.now();
let firstFail = null, okAfter = null, streak = 0, tries = 0, done = false;
const finish = () => { if (done) return; done = true; console.log(JSON.stringify({ firstFail, okAfter, tries })); process.exit(0); };
const attempt = () => {
  const at = Date.now() - started;
  tries++;
  const socket = net.connect({ host: vip, port: 80 });
  let reply = '', settled = false;
  const settle = (ok) => {
    if (settled) return;
    settled = true;
    socket.destroy();
    if (!ok && firstFail === null) firstFail = at;
    if (ok && firstFail !== null && (okAfter === null || at < okAfter) && at > firstFail) okAfter = okAfter ?? at;
    streak = ok && firstFail !== null ? streak + 1 : 0;
    if (streak >= 50) finish();
  };
  socket.setTimeout(200, () => settle(false));
  socket.on('connect', () => socket.end('GET / HTTP/1.0\\r\\n\\r\\n'));
  socket.on('data', (d) => { reply += d; if (reply.includes('member')) settle(true); });
  socket.on('error', () => settle(false));
  socket.on('close', () => settle(reply.includes('member')));
};
const timer = setInterval(() => (Date.now() - started > limitMs ? finish() : attempt()), 20);
console.log('ready');
`;

interface Interruption {
  firstFail: number | null;
  okAfter: number | null;
  tries: number;
}

/** Starts the prober, runs `fault` once it has seen the VIP served, and resolves with what it saw. */
async function interruption(p: Pair, fault: () => Promise<void>): Promise<Interruption> {
  const prober = spawn(IP, ['netns', 'exec', p.clientNs, process.execPath, '-e', PROBER, NET.vip, String(SERVED_AGAIN_WITHIN_MS + 5_000)], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  prober.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<void>((resolve) => prober.on('exit', () => resolve()));
  try {
    await until('the prober', () => (out.includes('ready') ? true : undefined), 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await fault();
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, SERVED_AGAIN_WITHIN_MS + 10_000))]);
  } finally {
    prober.kill('SIGKILL');
  }
  return JSON.parse(out.split('\n').find((line) => line.startsWith('{')) ?? 'null') as Interruption;
}

function report(t: { diagnostic(message: string): void }, what: string, seen: Interruption): void {
  assert.ok(seen, 'the prober reported');
  const gap = seen.firstFail === null ? 'no failed connection' : `${seen.okAfter === null ? 'never served again' : `${seen.okAfter - seen.firstFail} ms`} (first failure at +${seen.firstFail} ms)`;
  t.diagnostic(`${what}: interruption ${gap}, ${seen.tries} connections tried`);
  if (seen.firstFail !== null) {
    assert.notEqual(seen.okAfter, null, 'the VIP is served again');
    assert.ok(seen.okAfter! - seen.firstFail < SERVED_AGAIN_WITHIN_MS, `served again within ${SERVED_AGAIN_WITHIN_MS} ms`);
  }
}

async function takenOverByBackup(p: Pair): Promise<void> {
  await until('the BACKUP holding the VIP', async () => ((await holder(p)) === 1 ? true : undefined), SERVED_AGAIN_WITHIN_MS);
  assert.equal(await get(p), 'member', 'the BACKUP serves the VIP');
}

const pidIn = (file: string) => Number(readFileSync(file, 'utf8').trim());

test('keepalived runs as the amphora uid with its network capabilities; HAProxy with none', options, async (t) => {
  const p = await pair(t);
  for (const i of PAIR.keys()) {
    const uid = String(amphoraUid(PAIR[i]!.id));
    const keepalived = processesNamed(p.ns(i), 'keepalived');
    assert.equal(keepalived.length, 2, 'the keepalived parent and its VRRP child');
    for (const pid of keepalived) {
      assert.equal(statusField(pid, 'Uid'), uid);
      assert.equal(statusField(pid, 'CapEff'), '0000000000003000', 'CAP_NET_ADMIN and CAP_NET_RAW');
    }
    for (const pid of processesNamed(p.ns(i), 'haproxy')) {
      for (const set of ['CapEff', 'CapAmb']) assert.equal(statusField(pid, set), '0000000000000000', `HAProxy ${set}`);
    }
  }
});

test("(a) the MASTER's HAProxy killed: the BACKUP takes the VIP", options, async (t) => {
  const p = await pair(t);
  const seen = await interruption(p, async () => {
    for (const pid of processesNamed(p.ns(0), 'haproxy')) process.kill(pid, 'SIGKILL');
  });
  report(t, 'HAProxy killed', seen);
  await takenOverByBackup(p);
});

test("(b) the MASTER's keepalived VRRP child killed: the BACKUP takes the VIP; keepalived comes back and stays BACKUP", options, async (t) => {
  const p = await pair(t);
  const vrrpPidFile = join(p.dir(0), 'keepalived-vrrp.pid');
  const killed = pidIn(vrrpPidFile);
  const seen = await interruption(p, async () => {
    process.kill(killed, 'SIGKILL');
  });
  report(t, 'keepalived VRRP child killed', seen);
  await takenOverByBackup(p);
  const restarted = await until('keepalived restarted by the agent', () => {
    const pids = processesNamed(p.ns(0), 'keepalived');
    return pids.length === 2 && !pids.includes(killed) ? pids : undefined;
  }, 10_000);
  t.diagnostic(`keepalived restarted: ${restarted.join(', ')}`);
  // Long enough for a preempting MASTER to take the VIP back (several master-down intervals).
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  assert.equal(await holder(p), 1, 'nopreempt: the restarted keepalived leaves the VIP with the BACKUP');
});

test("(c) the MASTER's tenant link down: the BACKUP takes the VIP", options, async (t) => {
  const p = await pair(t);
  const seen = await interruption(p, () => ip('-n', p.ns(0), 'link', 'set', 'eth1', 'down').then(() => undefined));
  report(t, 'tenant link down', seen);
  await takenOverByBackup(p);
});

test('(d) the MASTER amphora deleted: the BACKUP takes the VIP, with the stick table the MASTER filled', options, async (t) => {
  const p = await pair(t);
  const backend = backendName(ids.pool(1), ids.listener(1));
  const table = (i: number) => new HaproxyRuntime(join(p.dir(i), 'haproxy.sock')).execute(`show table ${backend}`);
  await until("the client's source-IP entry on the BACKUP, pushed by the MASTER's HAProxy", async () => ((await table(1)).includes(`key=::ffff:${NET.client}`) ? true : undefined), 5_000);
  const seen = await interruption(p, () => p.l.compute.delete(p.computeId(0)));
  report(t, 'MASTER amphora deleted', seen);
  await takenOverByBackup(p);
  assert.match(await table(1), new RegExp(`key=::ffff:${NET.client.replace(/\./g, '\\.')} use=\\d+ exp=\\d+ server_id=1`), 'the entry is on the new MASTER');
});

/**
 * UDP listeners of a netns amphora, as root: the real agent bundle applies pushed configs to its
 * nftables table, members in namespaces of their own answer with their names, and a client
 * namespace sends datagrams to the VIP from fresh sockets (a new flow each).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { promisify } from 'node:util';
import type { AmphoraConfig, PoolConfig } from '../../domain/amphora-config.js';
import { IP, plugPort } from '../../linux-net/ip.js';
import { unmet } from '../../../test/support/requirements.js';
import { ids, listener, loadBalancer, member, monitor, pool } from '../../../test/support/render-fixtures.js';
import { agentClient, netnsLab, tenantBridge, udpEcho, until, type NetnsLab } from '../../../test/support/netns-lab.js';

const run = promisify(execFile);
const options = { skip: unmet('namespaces') || unmet('haproxy'), timeout: 90_000 };
const HOSTS = { m1: '10.78.0.21', m2: '10.78.0.22', client: '10.78.0.100' } as const;
const VIP = '10.78.0.50';
const PORT = 5300;
const MEMBER_PORT = 7000;
/** The amphora the render fixtures' configurations are for. */
const AMPHORA_ID = ids.amphora(1);

/** `count` datagrams to the VIP from the client namespace, each from a fresh socket; the answers ('' for none). */
async function ask(ns: string, count: number): Promise<string[]> {
  const code = `(async()=>{const d=require('node:dgram');const out=[];for(let i=0;i<${count};i++){out.push(await new Promise((res)=>{const s=d.createSocket('udp4');const t=setTimeout(()=>{s.close();res('')},1000);s.on('error',()=>{clearTimeout(t);s.close();res('')});s.on('message',(m)=>{clearTimeout(t);s.close();res(String(m))});s.send('q',${PORT},'${VIP}')}))}console.log(JSON.stringify(out))})()`;
  const { stdout } = await run(IP, ['netns', 'exec', ns, process.execPath, '-e', code], { timeout: 60_000 });
  return JSON.parse(stdout) as string[];
}

const tally = (answers: readonly string[]) => answers.reduce<Record<string, number>>((t, a) => ({ ...t, [a]: (t[a] ?? 0) + 1 }), {});

function udpConfig(version: number, poolOverrides: Partial<PoolConfig>): AmphoraConfig {
  return loadBalancer(1, {
    version,
    vip: { address: VIP, additional: [] },
    listeners: [listener(1, { protocol: 'UDP', port: PORT, defaultPoolId: ids.pool(1) })],
    pools: [pool(1, { protocol: 'UDP', members: [member(1, { address: HOSTS.m1, port: MEMBER_PORT, weight: 3 }), member(2, { address: HOSTS.m2, port: MEMBER_PORT, weight: 1 })], ...poolOverrides })],
  });
}

/** The table as the amphora has it, with rule handles. */
async function table(l: NetnsLab): Promise<string> {
  return (await run(IP, ['netns', 'exec', l.compute.namespaceOf(AMPHORA_ID), 'nft', '-a', 'list', 'table', 'inet', 'ostia_udp'])).stdout;
}
const handles = (listing: string) => listing.split('\n').filter((line) => /# handle \d+$/.test(line) && !line.includes(' : ')).map((line) => line.trim());

/** The lab with its amphora booted, its VIP port and the hosts on a tenant bridge, and the members answering. */
async function udpLab(t: Parameters<typeof netnsLab>[0]) {
  const l = await netnsLab(t);
  const spec = await l.specFor(AMPHORA_ID);
  await l.compute.started(await l.compute.boot(spec, AbortSignal.timeout(10_000)), AbortSignal.timeout(10_000));
  const { attachment, ns } = await tenantBridge(t, l, 24, HOSTS);
  await plugPort(attachment, 'vip', l.compute.namespaceOf(AMPHORA_ID), VIP, 'eth1');
  const servers = { m1: await udpEcho(t, ns.m1, 'm1', HOSTS.m1, MEMBER_PORT), m2: await udpEcho(t, ns.m2, 'm2', HOSTS.m2, MEMBER_PORT) };
  const client = await agentClient(l, spec);
  t.after(() => client.close());
  return { l, ns, servers, client };
}

test('datagrams to the VIP reach members in proportion to their weights; SOURCE_IP persistence keeps a client on one member', options, async (t) => {
  const { ns, client } = await udpLab(t);
  assert.deepEqual(await client.putConfig(udpConfig(1, {})), { version: 1, applied: 'reload' });
  const answers = await ask(ns.client, 80);
  const counts = tally(answers);
  t.diagnostic(`ROUND_ROBIN 3:1 over 80 flows: ${JSON.stringify(counts)}`);
  assert.equal(answers.filter((a) => a === '').length, 0, 'every datagram answered');
  // Slots interleave 3:1 exactly: 60/20 up to the flows a retry or a stray datagram shifts.
  assert.ok(counts.m1! >= 50 && counts.m1! <= 70, JSON.stringify(counts));
  assert.ok(counts.m2! >= 10 && counts.m2! <= 30, JSON.stringify(counts));

  await client.putConfig(udpConfig(2, { sessionPersistence: { type: 'SOURCE_IP', cookieName: null } }));
  const sticky = tally(await ask(ns.client, 20));
  t.diagnostic(`SOURCE_IP persistence over 20 flows: ${JSON.stringify(sticky)}`);
  assert.equal(Object.keys(sticky).length, 1, JSON.stringify(sticky));
  assert.ok(!('' in sticky));
});

test('a member disabled by a push leaves the maps only: the rules keep their handles', options, async (t) => {
  const { l, ns, client } = await udpLab(t);
  await client.putConfig(udpConfig(1, {}));
  const before = await table(l);
  const disabled = udpConfig(2, {});
  disabled.pools[0]!.members[0]!.enabled = false;
  assert.deepEqual(await client.putConfig(disabled), { version: 2, applied: 'runtime' });
  const after = await table(l);
  assert.deepEqual(handles(after), handles(before), 'table, chains, maps, counters and rules are the ones from before');
  assert.ok(before.includes(`${HOSTS.m1} . ${MEMBER_PORT}`) && !after.includes(`${HOSTS.m1} . ${MEMBER_PORT}`), 'm1 left the map');
  assert.deepEqual(tally(await ask(ns.client, 12)), { m2: 12 });
});

test('a stopped member is marked down by UDP-CONNECT, reported DOWN in heartbeats and out of the maps; restarted, it comes back', options, async (t) => {
  const { l, ns, servers, client } = await udpLab(t);
  const hm = monitor(1, { type: 'UDP-CONNECT', delay: 1, timeout: 1, maxRetries: 1, maxRetriesDown: 2 });
  await client.putConfig(udpConfig(1, { monitor: hm }));
  const poolKey = `${ids.pool(1)}:${ids.listener(1)}`;
  const reported = (status: string) => () => {
    const last = l.accepted.at(-1)?.heartbeat.pools[poolKey]?.members[ids.member(1)];
    return last === status ? last : undefined;
  };
  await until('m1 reported UP', reported('UP'), 10_000);
  servers.m1.kill('SIGKILL');
  await once(servers.m1, 'exit');
  const downAt = Date.now();
  await until('m1 reported DOWN', reported('DOWN'), 15_000);
  t.diagnostic(`m1 reported DOWN ${Date.now() - downAt} ms after it stopped`);
  const inMap = async () => (await table(l)).includes(`${HOSTS.m1} . ${MEMBER_PORT}`);
  // The heartbeat reads the checks; the map follows in the nft transaction the flip queued.
  await until('m1 out of the map', async () => ((await inMap()) ? undefined : true), 5_000);
  assert.deepEqual(tally(await ask(ns.client, 8)), { m2: 8 });
  assert.equal(l.accepted.at(-1)!.heartbeat.pools[poolKey]!.status, 'UP', 'the pool still serves');

  await udpEcho(t, ns.m1, 'm1', HOSTS.m1, MEMBER_PORT);
  await until('m1 reported UP again', reported('UP'), 15_000);
  await until('m1 back in the map', async () => ((await inMap()) ? true : undefined), 5_000);
  assert.ok(tally(await ask(ns.client, 8)).m1! > 0);
});

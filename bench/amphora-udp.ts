/**
 * UDP request/response rate through a netns amphora's VIP (the agent's nftables table) against a
 * hand-written nftables DNAT in a namespace of its own on the same tenant bridge, to the same two
 * members, in the same run: phases alternate (amphora, hand, amphora, hand …) so a neighbour's load
 * falls on both alike. Two kinds of load: `flows`, sockets that keep their flow (conntrack answers
 * after the first datagram), and `fresh`, a new socket — a new flow, through the DNAT map — per request.
 *
 *   npm run bench:udp [-- --seconds 2 --rounds 4 --sockets 16]     (as root; ~30 s with the defaults)
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { IP, plugPort } from '../src/linux-net/ip.js';
import { ids, listener, loadBalancer, member, pool } from '../test/support/render-fixtures.js';
import { agentClient, netnsLab, tenantBridge, udpEcho } from '../test/support/netns-lab.js';
import { unmet } from '../test/support/requirements.js';

const run = promisify(execFile);
const HOSTS = { m1: '10.79.0.21', m2: '10.79.0.22', client: '10.79.0.100', hand: '10.79.0.60' } as const;
const VIP = '10.79.0.50';
const PORT = 5300;
const MEMBER_PORT = 7000;
/** The amphora the render fixtures' configurations are for. */
const AMPHORA_ID = ids.amphora(1);

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i < 0 ? fallback : Number(process.argv[i + 1]);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} takes a positive integer`);
  return value;
}

/** Requests answered per second by `target` during `seconds`, from `sockets` concurrent askers in the client namespace. */
async function rate(ns: string, target: string, seconds: number, sockets: number, fresh: boolean): Promise<number> {
  const code = `const d=require('node:dgram');const end=Date.now()+${seconds * 1000};let n=0;
const one=(s)=>new Promise((res)=>{const t=setTimeout(()=>res(false),500);s.once('message',()=>{clearTimeout(t);res(true)});s.send('q',${PORT},'${target}')});
async function asker(){let s=${fresh ? 'null' : "d.createSocket('udp4')"};while(Date.now()<end){${fresh ? "s=d.createSocket('udp4');" : ''}if(await one(s))n++;${fresh ? 's.close();' : ''}}${fresh ? '' : 's.close();'}}
Promise.all(Array.from({length:${sockets}},asker)).then(()=>console.log(n/${seconds}));`;
  const { stdout } = await run(IP, ['netns', 'exec', ns, process.execPath, '-e', code], { timeout: (seconds + 30) * 1000 });
  return Number(stdout.trim());
}

async function main(): Promise<void> {
  const why = unmet('namespaces') || unmet('haproxy');
  if (why) throw new Error(`cannot run: ${why}`);
  const [seconds, rounds, sockets] = [arg('seconds', 2), arg('rounds', 4), arg('sockets', 16)];
  const cleanups: Array<() => Promise<void> | void> = [];
  const t = { after: (fn: () => Promise<void> | void) => cleanups.push(fn) };
  try {
    const l = await netnsLab(t);
    const spec = await l.specFor(AMPHORA_ID);
    await l.compute.started(await l.compute.boot(spec, AbortSignal.timeout(10_000)), AbortSignal.timeout(10_000));
    const { attachment, ns } = await tenantBridge(t, l, 24, HOSTS);
    await plugPort(attachment, 'vip', l.compute.namespaceOf(AMPHORA_ID), VIP, 'eth1');
    // The amphora forwards by itself; the hand-written DNAT's namespace must be told to.
    await run(IP, ['netns', 'exec', ns.hand, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    for (const name of ['m1', 'm2'] as const) await udpEcho(t, ns[name], name, HOSTS[name], MEMBER_PORT);
    const client = await agentClient(l, spec);
    t.after(() => client.close());
    await client.putConfig(
      loadBalancer(1, {
        vip: { address: VIP, additional: [] },
        listeners: [listener(1, { protocol: 'UDP', port: PORT, defaultPoolId: ids.pool(1) })],
        pools: [pool(1, { protocol: 'UDP', members: [member(1, { address: HOSTS.m1, port: MEMBER_PORT }), member(2, { address: HOSTS.m2, port: MEMBER_PORT })] })],
      }),
    );
    // The hand-written equivalent: the same selector, an anonymous map, the same masquerade.
    const hand = `table inet hand {
  chain pre { type nat hook prerouting priority dstnat; ip daddr ${HOSTS.hand} udp dport ${PORT} dnat ip to numgen inc mod 2 map { 0 : ${HOSTS.m1} . ${MEMBER_PORT}, 1 : ${HOSTS.m2} . ${MEMBER_PORT} }; }
  chain post { type nat hook postrouting priority srcnat; ct status dnat meta l4proto udp masquerade; }
}\n`;
    await new Promise<void>((resolve, reject) => {
      const child = execFile(IP, ['netns', 'exec', ns.hand, 'nft', '-f', '-'], (e) => (e ? reject(e) : resolve()));
      child.stdin!.end(hand);
    });

    console.log(`UDP request/response, ${sockets} askers, ${rounds} rounds of ${seconds} s per target (amphora VIP ${VIP}, hand DNAT ${HOSTS.hand})`);
    for (const fresh of [false, true]) {
      const sums = { amphora: 0, hand: 0 };
      // Each round reverses the order, so neither target always runs first.
      for (let r = 0; r < rounds; r++)
        for (const target of r % 2 ? (['hand', 'amphora'] as const) : (['amphora', 'hand'] as const)) sums[target] += await rate(ns.client, target === 'amphora' ? VIP : HOSTS.hand, seconds, sockets, fresh);
      const [a, h] = [sums.amphora / rounds, sums.hand / rounds];
      console.log(`${fresh ? 'fresh flow per request' : 'kept flows            '}  amphora ${a.toFixed(0)}/s  hand ${h.toFixed(0)}/s  ratio ${(a / h).toFixed(3)}× (target ≥ 0.97×)`);
    }
  } finally {
    for (const fn of cleanups.reverse()) await Promise.resolve(fn()).catch((e: Error) => console.error(`cleanup: ${e.message}`));
  }
}

await main();

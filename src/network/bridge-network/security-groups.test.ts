/**
 * The renderers on their own (what the scripts say, what they refuse), then the rules at work, as
 * root: a fabric namespace with a management, a tenant and a member bridge; an amphora namespace with
 * eth0, eth1 (its address, the VIP, an IPv6 address) and eth2 on them; a controller on the management
 * and tenant networks; another amphora on the management network; clients inside and outside an
 * allowed CIDR, and a VRRP peer, on the tenant network; a member on the member network. Traffic is
 * small Node programs (echo servers, clients that say ok, timeout or the error code) and Python raw
 * sockets for VRRP, all in the test's own namespaces.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { deleteNetns, ensureNetns, IP, ip, ipBatch, plugPort } from '../../linux-net/ip.js';
import { unmet } from '../../../test/support/requirements.js';
import { addPortSecurity, PORT_SECURITY_TABLE, removePortSecurity, renderPortSecurity, renderPortSecurityRemoval, type PortAllowance } from '../../linux-net/port-security.js';
import { applyAmphoraFirewall, renderAmphoraFirewall, type AmphoraFirewall } from './security-groups.js';
import type { SecurityGroupRule } from '../../domain/security-group-rule.js';

const run = promisify(execFile);
const skip = unmet('namespaces');
/** Every namespace test ends within this, passing or not; each wait inside it is bounded more tightly. */
const options = { skip, timeout: 60_000 };
/** How long a client waits for an answer that must not come: long enough for a loaded machine to answer one that may. */
const DROPPED_MS = 1_500;
/** How long a client waits for an answer that must come. */
const ANSWERED_MS = 5_000;
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

const A = { mgmt: '10.61.0.10', tenant: '10.62.0.10', vip: '10.62.0.50', tenant6: 'fd62::10', member: '10.63.0.10' };
const CONTROLLER = { mgmt: '10.61.0.1', tenant: '10.62.0.2' };
const OTHER_AMPHORA = '10.61.0.11';
const INSIDE = { v4: '10.62.0.100', v6: 'fd62::100' };
const OUTSIDE = { v4: '10.62.0.200', v6: 'fd62::200' };
const PEER = { v4: '10.62.0.11', v6: 'fd62::11' };
const MEMBER = '10.63.0.20';
const AGENT_PORT = 9443;
const HEARTBEAT_PORT = 5555;

function firewall(vip: Partial<NonNullable<AmphoraFirewall['vip']>> = {}): AmphoraFirewall {
  return {
    management: { iface: 'eth0', controller: CONTROLLER.mgmt, agentPort: AGENT_PORT, heartbeatTargets: [{ address: CONTROLLER.mgmt, port: HEARTBEAT_PORT }] },
    vip: {
      iface: 'eth1',
      listeners: [
        { protocol: 'tcp', port: 80, allowedCidrs: ['10.62.0.96/27', 'fd62::100/128'] },
        { protocol: 'udp', port: 53, allowedCidrs: [] },
      ],
      vrrpPeers: [PEER.v4, PEER.v6],
      ...vip,
    },
    members: [{ iface: 'eth2' }],
    controlPlane: [CONTROLLER.tenant],
  };
}

// ---------------------------------------------------------------- renderers

test('the security group replaces its table in one script, drops input by default and accepts replies before anything else', () => {
  const script = renderAmphoraFirewall(firewall());
  const lines = script.split('\n').map((line) => line.trim());
  assert.deepEqual(lines.slice(0, 3), ['table inet ostia_sg {}', 'delete table inet ostia_sg', 'table inet ostia_sg {']);
  assert.ok(lines.includes('type filter hook input priority filter; policy drop;'));
  const input = lines.slice(lines.indexOf('chain input {'), lines.indexOf('chain output {'));
  const output = lines.slice(lines.indexOf('chain output {'));
  const established = input.indexOf('ct state established,related accept');
  assert.ok(established > 0 && input.findIndex((line) => /^iifname "eth[0-9]" (ip|meta)/.test(line)) > established, 'replies are accepted before any new connection is considered');
  assert.ok(input.includes('iifname "eth0" ip saddr 10.61.0.1 tcp dport 9443 accept'));
  assert.ok(input.includes('iifname "eth1" meta l4proto . th dport . ip saddr @listeners_v4 accept'));
  assert.ok(input.includes('iifname "eth1" ip saddr { 10.62.0.11 } meta l4proto 112 accept'));
  assert.ok(input.includes('iifname "eth1" ip6 saddr { fd62::11 } meta l4proto 112 accept'));
  assert.match(input.find((line) => line.startsWith('iifname {'))!, /^iifname \{ "eth0", "eth1", "eth2" \} icmpv6 type \{ nd-neighbor-solicit, nd-neighbor-advert,/);
  assert.ok(script.includes('elements = { tcp . 80 . 10.62.0.96/27, udp . 53 . 0.0.0.0/0 }'));
  assert.ok(script.includes('elements = { tcp . 80 . fd62::100/128, udp . 53 . ::/0 }'));
  assert.ok(script.includes('elements = { 10.61.0.1 . 5555 }'));
  assert.deepEqual(output.slice(0, output.indexOf('}')).slice(-3), ['oifname "eth0" ip daddr . udp dport @heartbeats_v4 accept', 'oifname "eth0" drop', 'ip daddr { 10.62.0.2 } drop']);
  assert.ok(output.indexOf('ct state established,related accept') < output.indexOf('oifname "eth0" drop'), 'the agent answers the controller');
});

test('allowed CIDRs are written with host bits cleared, once, and without the ones another contains (nft refuses overlaps)', () => {
  const script = renderAmphoraFirewall(
    firewall({ listeners: [{ protocol: 'tcp', port: 443, allowedCidrs: ['10.1.2.3/24', '10.0.0.0/8', '192.0.2.7/32', '10.1.0.0/16', '192.0.2.7/32', 'FD00:0:0::1/64'] }], vrrpPeers: [] }),
  );
  assert.ok(script.includes('elements = { tcp . 443 . 10.0.0.0/8, tcp . 443 . 192.0.2.7/32 }'), script);
  assert.ok(script.includes('elements = { tcp . 443 . fd00::/64 }'), script);
  assert.doesNotMatch(script, /meta l4proto 112/, 'no peers, no VRRP');
});

test("a load balancer's own security groups are one rule each on the VIP port, by ethertype, protocol, port range and source; egress rules write nothing", () => {
  const rule = (r: Partial<SecurityGroupRule>): SecurityGroupRule => ({ direction: 'ingress', ethertype: 'IPv4', protocol: 'tcp', port_range_min: null, port_range_max: null, remote_ip_prefix: null, ...r });
  const script = renderAmphoraFirewall(
    firewall({
      listeners: [],
      groupRules: [
        rule({ port_range_min: 80, port_range_max: 80, remote_ip_prefix: '10.62.0.100/27' }),
        rule({ protocol: 'udp', port_range_min: 5000, port_range_max: 5100 }),
        rule({ ethertype: 'IPv6', protocol: 'icmp' }),
        rule({ protocol: null, remote_ip_prefix: '192.0.2.0/24' }),
        rule({ direction: 'egress', protocol: null }),
      ],
    }),
  );
  const input = script.split('\n').map((line) => line.trim()).filter((line) => line.startsWith('iifname "eth1"'));
  assert.deepEqual(input.filter((line) => !line.includes('112')), [
    'iifname "eth1" ip saddr 10.62.0.96/27 meta l4proto tcp th dport 80 accept',
    'iifname "eth1" meta nfproto ipv4 meta l4proto udp th dport 5000-5100 accept',
    'iifname "eth1" meta nfproto ipv6 meta l4proto ipv6-icmp accept',
    'iifname "eth1" ip saddr 192.0.2.0/24 accept',
  ]);
  assert.doesNotMatch(script, /listeners_v4/, 'no listener set: the groups say what reaches the VIP');
  const refusedRule = (r: Partial<SecurityGroupRule>) => () => renderAmphoraFirewall(firewall({ groupRules: [rule(r)] }));
  assert.throws(refusedRule({ remote_ip_prefix: 'fd62::/64' }), /vip\.groupRules\[0\]\.remote_ip_prefix must be an IPv4 CIDR/);
  assert.throws(refusedRule({ port_range_min: 90, port_range_max: 80 }), /vip\.groupRules\[0\]\.port_range_max must be at least port_range_min 90/);
  assert.throws(refusedRule({ protocol: 'gre' as 'tcp' }), /vip\.groupRules\[0\]\.protocol must be/);
  assert.throws(refusedRule({ port_range_min: 80, port_range_max: '80 accept' as unknown as number }), /port_range_max must be a port number/);
});

test('without a VIP only the management port and the members are known: no listener or VRRP rule', () => {
  const script = renderAmphoraFirewall({ ...firewall(), vip: null });
  assert.doesNotMatch(script, /listeners|112|"eth1"/);
  assert.match(script, /iifname \{ "eth0", "eth2" \} icmpv6/);
});

test('addresses are written back in canonical form', () => {
  const fw = firewall({ vrrpPeers: ['FD62:0:0::0011'] });
  fw.management.controller = 'fd61:0::1';
  const script = renderAmphoraFirewall(fw);
  assert.ok(script.includes('iifname "eth1" ip6 saddr { fd62::11 } meta l4proto 112 accept'));
  assert.ok(script.includes('iifname "eth0" ip6 saddr fd61::1 tcp dport 9443 accept'));
});

test('values that could smuggle text into the script are refused, naming the field', () => {
  const refused: [string, (fw: AmphoraFirewall) => void][] = [
    ['management.iface', (fw) => (fw.management.iface = 'eth0" accept; flush ruleset; "')],
    ['management.iface', (fw) => (fw.management.iface = 'eth0\n')],
    ['management.iface', (fw) => (fw.management.iface = 'an-interface-name')],
    ['management.iface', (fw) => (fw.management.iface = '')],
    ['management.controller', (fw) => (fw.management.controller = '10.61.0.1 accept')],
    ['management.controller', (fw) => (fw.management.controller = 'fe80::1%eth0')],
    ['management.agentPort', (fw) => (fw.management.agentPort = 0)],
    ['management.agentPort', (fw) => (fw.management.agentPort = 65536)],
    ['management.agentPort', (fw) => (fw.management.agentPort = '9443; drop' as unknown as number)],
    ['management.heartbeatTargets[0].port', (fw) => (fw.management.heartbeatTargets[0]!.port = 55.5)],
    ['vip.iface', (fw) => (fw.vip!.iface = 'eth1;')],
    ['vip.listeners[0].protocol', (fw) => (fw.vip!.listeners[0]!.protocol = 'icmp' as 'tcp')],
    ['vip.listeners[0].allowedCidrs[0]', (fw) => (fw.vip!.listeners[0]!.allowedCidrs = ['10.62.0.0/24, 0.0.0.0/0'])],
    ['vip.listeners[0].allowedCidrs[0]', (fw) => (fw.vip!.listeners[0]!.allowedCidrs = ['10.62.0.0/24\n}'])],
    ['vip.listeners[0].allowedCidrs[0]', (fw) => (fw.vip!.listeners[0]!.allowedCidrs = ['10.62.0.0/33'])],
    ['vip.vrrpPeers[1]', (fw) => (fw.vip!.vrrpPeers = ['10.62.0.11', '10.62.0.0/24'])],
    ['members[0].iface', (fw) => (fw.members = [{ iface: 'eth2 accept' }])],
    ['controlPlane[0]', (fw) => (fw.controlPlane = ['10.62.0.2 } drop'])],
  ];
  for (const [field, spoil] of refused) {
    const fw = firewall();
    spoil(fw);
    assert.throws(() => renderAmphoraFirewall(fw), (e: Error) => e.message.startsWith(`nftables rules not written: ${field} must be `), `${field} refused`);
  }
  const allowed: PortAllowance = { mac: '02:00:5e:10:00:01', addresses: ['10.62.0.10'] };
  assert.throws(() => renderPortSecurity('t-amp; flush', allowed), /port must be an interface name/);
  assert.throws(() => renderPortSecurity('t-amp', { ...allowed, mac: '02:00:5e:10:00:01 accept' }), /allowed\.mac must be a MAC address/);
  assert.throws(() => renderPortSecurity('t-amp', { ...allowed, addresses: ['10.62.0.10/24'] }), /allowed\.addresses\[0\] must be an IPv4 or IPv6 address/);
  assert.throws(() => renderPortSecurityRemoval('t amp'), /port must be an interface name/);
});

test('port security writes the port its own chain and map element, behind a base chain it rewrites rather than doubles', () => {
  const script = renderPortSecurity('t-amp', { mac: '02:00:5E:10:00:01', addresses: ['10.62.0.10', '10.62.0.50', 'FD62::10'] });
  const rules = script.split('\n').filter((line) => line.startsWith('add rule bridge ostia_port_security p_t-amp '));
  assert.deepEqual(
    rules.map((line) => line.slice('add rule bridge ostia_port_security p_t-amp '.length)),
    [
      'ether saddr != 02:00:5e:10:00:01 drop',
      'arp saddr ether 02:00:5e:10:00:01 arp saddr ip { 10.62.0.10, 10.62.0.50 } accept',
      'ip saddr { 10.62.0.10, 10.62.0.50 } accept',
      'ip6 saddr fe80::/10 accept',
      'ip6 saddr :: icmpv6 type { nd-neighbor-solicit, mld-listener-report, mld2-listener-report } accept',
      'ip6 saddr { fd62::10 } accept',
      'drop',
    ],
  );
  assert.ok(script.includes('flush chain bridge ostia_port_security prerouting\nadd rule bridge ostia_port_security prerouting iifname vmap @ports\n'));
  assert.ok(script.includes('flush chain bridge ostia_port_security p_t-amp\n'));
  assert.ok(script.trim().endsWith('add element bridge ostia_port_security ports { "t-amp" : jump p_t-amp }'));
  const removal = renderPortSecurityRemoval('t-amp').trim().split('\n');
  assert.deepEqual(removal.slice(-2), ['delete element bridge ostia_port_security ports { "t-amp" }', 'delete chain bridge ostia_port_security p_t-amp']);
});

// ---------------------------------------------------------------- the lab

/** An echo server (`serve HOST tcp:PORT udp:PORT…`, printing each datagram's source) or a client printing ok, timeout or the error code. */
const PROBE = `
const net = require('net'), dgram = require('dgram'), readline = require('readline');
const [mode, host, ...args] = process.argv.slice(1);
const done = (result) => { console.log(result); process.exit(0); };
const plain = (address) => address.replace(/^::ffff:/, '');
if (mode === 'serve') {
  let pending = args.length;
  const ready = () => { if (--pending === 0) console.log('ready'); };
  for (const spec of args) {
    const [proto, port] = spec.split(':');
    if (proto === 'tcp') {
      net.createServer((s) => { s.on('error', () => {}); s.pipe(s); }).listen(Number(port), host, ready);
    } else {
      const u = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
      u.on('message', (m, from) => { console.log('udp ' + port + ' from ' + plain(from.address)); u.send(m, from.port, from.address); });
      u.bind(Number(port), host, ready);
    }
  }
} else if (mode === 'hold') {
  const s = net.connect(Number(args[0]), host, () => console.log('connected'));
  s.on('data', (d) => console.log('echo ' + d));
  s.on('error', (e) => done(e.code));
  readline.createInterface({ input: process.stdin }).on('line', (line) => s.write(line));
} else {
  const [port, timeout, local] = args;
  setTimeout(() => done('timeout'), Number(timeout));
  if (mode === 'tcp') {
    const s = net.connect({ host, port: Number(port), localAddress: local || undefined }, () => s.write('ping'));
    s.on('data', () => done('ok'));
    s.on('error', (e) => done(e.code));
  } else {
    const u = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
    u.on('error', (e) => done(e.code));
    u.on('message', () => done('ok'));
    u.bind({ address: local || undefined, port: 0 }, () => u.connect(Number(port), host, () => u.send('ping')));
  }
}
`;

/** Prints the source of each VRRP packet (IP protocol 112) the namespace's stack accepts, until it has seen every one of argv[1:]. */
const VRRP_RECEIVER = `
import select, socket, sys
expected = set(sys.argv[1:])
sockets = [socket.socket(socket.AF_INET, socket.SOCK_RAW, 112), socket.socket(socket.AF_INET6, socket.SOCK_RAW, 112)]
print('ready', flush=True)
while expected:
    readable, _, _ = select.select(sockets, [], [], 10)
    if not readable:
        break
    for s in readable:
        source = s.recvfrom(2048)[1][0]
        expected.discard(source)
        print(source, flush=True)
`;
const VRRP_SENDER = `
import socket, sys
for target in sys.argv[1:]:
    s = socket.socket(socket.AF_INET6 if ':' in target else socket.AF_INET, socket.SOCK_RAW, 112)
    s.sendto(b'vrrp', (target, 0))
`;

type Role = 'fabric' | 'amphora' | 'controller' | 'other' | 'inside' | 'outside' | 'peer' | 'member';

interface Lab {
  ns: Record<Role, string>;
  /** A long-running program in namespace `role`, killed after the test; resolves once it printed `ready`. */
  serve(role: Role, host: string, ...specs: string[]): Promise<Program>;
  /** A client in namespace `role`: ok, timeout, or the error code. */
  probe(role: Role, proto: 'tcp' | 'udp', host: string, port: number, timeoutMs: number, local?: string): Promise<string>;
  spawn(role: Role, argv: string[]): Program;
  macOf(role: Role, iface: string): Promise<string>;
}

interface Program {
  child: ChildProcess;
  lines: string[];
  /** Resolves with the first line `match` accepts (waiting up to timeoutMs). */
  line(match: (line: string) => boolean, timeoutMs?: number): Promise<string>;
}

let labs = 0;

async function lab(t: { after(fn: () => Promise<void>): void }): Promise<Lab> {
  const tag = `${process.pid.toString(36)}-${(labs++).toString(36)}${randomBytes(2).toString('hex')}`;
  const roles: Role[] = ['fabric', 'amphora', 'controller', 'other', 'inside', 'outside', 'peer', 'member'];
  const ns = Object.fromEntries(roles.map((role) => [role, `ostia-sg-${tag}-${role}`])) as Record<Role, string>;
  const programs: ChildProcess[] = [];
  t.after(async () => {
    for (const child of programs) child.kill('SIGKILL');
    for (const name of Object.values(ns)) await deleteNetns(name);
  });
  for (const name of Object.values(ns)) await ensureNetns(name);
  await ipBatch(ns.fabric, ['br-mgmt', 'br-ten', 'br-mem'].flatMap((bridge) => [`link add ${bridge} type bridge`, `link set ${bridge} up`]));
  const bridge = (name: string) => ({ namespace: ns.fabric, bridge: name, prefixLength: 24 });
  const [mgmt, tenant, member] = [bridge('br-mgmt'), bridge('br-ten'), bridge('br-mem')];
  await plugPort(mgmt, 'm-amp', ns.amphora, A.mgmt, 'eth0');
  await plugPort(tenant, 't-amp', ns.amphora, A.tenant, 'eth1');
  await plugPort(member, 'e-amp', ns.amphora, A.member, 'eth2');
  await plugPort(mgmt, 'm-ctl', ns.controller, CONTROLLER.mgmt, 'eth0');
  await plugPort(tenant, 't-ctl', ns.controller, CONTROLLER.tenant, 'eth1');
  await plugPort(mgmt, 'm-oth', ns.other, OTHER_AMPHORA);
  await plugPort(tenant, 't-in', ns.inside, INSIDE.v4);
  await plugPort(tenant, 't-out', ns.outside, OUTSIDE.v4);
  await plugPort(tenant, 't-peer', ns.peer, PEER.v4);
  await plugPort(member, 'e-mem', ns.member, MEMBER);
  // nodad: an address under duplicate address detection cannot be used for a second or so.
  await ipBatch(ns.amphora, [`address add ${A.vip}/24 dev eth1`, `address add ${A.tenant6}/64 dev eth1 nodad`]);
  for (const [role, v6] of [['inside', INSIDE.v6], ['outside', OUTSIDE.v6], ['peer', PEER.v6]] as const) await ip('-n', ns[role], 'address', 'add', `${v6}/64`, 'dev', 'eth0', 'nodad');

  const spawnIn = (role: Role, argv: string[]): Program => {
    const child = spawn(IP, ['netns', 'exec', ns[role], ...argv], { stdio: ['pipe', 'pipe', 'inherit'] });
    programs.push(child);
    const lines: string[] = [];
    const waiters = new Set<() => void>();
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line);
      for (const wake of waiters) wake();
    });
    const line = (match: (line: string) => boolean, timeoutMs = ANSWERED_MS) =>
      new Promise<string>((resolve, reject) => {
        const check = () => {
          const found = lines.find(match);
          if (found === undefined) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(found);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`${argv.slice(0, 4).join(' ')} in ${role}: no expected line within ${timeoutMs} ms; it printed ${JSON.stringify(lines)}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    return { child, lines, line };
  };
  return {
    ns,
    spawn: spawnIn,
    async serve(role, host, ...specs) {
      const program = spawnIn(role, [process.execPath, '-e', PROBE, 'serve', host, ...specs]);
      await program.line((line) => line === 'ready');
      return program;
    },
    async probe(role, proto, host, port, timeoutMs, local) {
      const { stdout } = await run(IP, ['netns', 'exec', ns[role], process.execPath, '-e', PROBE, proto, host, String(port), String(timeoutMs), local ?? ''], { timeout: timeoutMs + 10_000 });
      return stdout.trim();
    },
    async macOf(role, iface) {
      const out = await ip('-n', ns[role], '-o', 'link', 'show', 'dev', iface);
      return /link\/ether ([0-9a-f:]{17})/.exec(out)![1]!;
    },
  };
}

// ---------------------------------------------------------------- security group at work

test('a TCP listener is reachable from its allowed CIDRs only, over IPv4 and IPv6; other clients\' SYNs are dropped', options, async (t) => {
  const l = await lab(t);
  await l.serve('amphora', '::', 'tcp:80');
  await applyAmphoraFirewall(l.ns.amphora, firewall());
  assert.equal(await l.probe('inside', 'tcp', A.vip, 80, ANSWERED_MS), 'ok');
  assert.equal(await l.probe('inside', 'tcp', A.tenant6, 80, ANSWERED_MS), 'ok', 'IPv6, neighbour discovery included');
  assert.equal(await l.probe('outside', 'tcp', A.vip, 80, DROPPED_MS), 'timeout');
  assert.equal(await l.probe('outside', 'tcp', A.tenant6, 80, DROPPED_MS), 'timeout');
});

test("a security group's rule admits its source on its port only, over the listener set", options, async (t) => {
  const l = await lab(t);
  await l.serve('amphora', '::', 'tcp:80', 'tcp:8080');
  const groupRules: SecurityGroupRule[] = [{ direction: 'ingress', ethertype: 'IPv4', protocol: 'tcp', port_range_min: 8080, port_range_max: 8080, remote_ip_prefix: `${OUTSIDE.v4}/32` }];
  await applyAmphoraFirewall(l.ns.amphora, firewall({ listeners: [], groupRules }));
  assert.equal(await l.probe('outside', 'tcp', A.vip, 8080, ANSWERED_MS), 'ok');
  assert.equal(await l.probe('inside', 'tcp', A.vip, 8080, DROPPED_MS), 'timeout', 'another source');
  assert.equal(await l.probe('outside', 'tcp', A.vip, 80, DROPPED_MS), 'timeout', 'another port');
});

test('a port no listener has is dropped, not refused, though something listens on it', options, async (t) => {
  const l = await lab(t);
  await l.serve('amphora', '::', 'tcp:80', 'tcp:8080');
  await applyAmphoraFirewall(l.ns.amphora, firewall());
  assert.equal(await l.probe('inside', 'tcp', A.vip, 80, ANSWERED_MS), 'ok');
  assert.equal(await l.probe('inside', 'tcp', A.vip, 8080, DROPPED_MS), 'timeout');
});

test('a UDP listener open to any source answers every client, over IPv4 and IPv6', options, async (t) => {
  const l = await lab(t);
  await l.serve('amphora', '::', 'udp:53', 'udp:54');
  await applyAmphoraFirewall(l.ns.amphora, firewall());
  // The amphora's own address: a wildcard UDP socket answers from the interface's primary address, which a client of the VIP would ignore.
  assert.equal(await l.probe('outside', 'udp', A.tenant, 53, ANSWERED_MS), 'ok');
  assert.equal(await l.probe('inside', 'udp', A.tenant6, 53, ANSWERED_MS), 'ok');
  assert.equal(await l.probe('outside', 'udp', A.tenant, 54, DROPPED_MS), 'timeout', 'UDP port without a listener');
});

test('the agent port answers the controller and not another amphora on the management network', options, async (t) => {
  const l = await lab(t);
  await l.serve('amphora', A.mgmt, `tcp:${AGENT_PORT}`);
  await applyAmphoraFirewall(l.ns.amphora, firewall());
  assert.equal(await l.probe('controller', 'tcp', A.mgmt, AGENT_PORT, ANSWERED_MS), 'ok');
  assert.equal(await l.probe('other', 'tcp', A.mgmt, AGENT_PORT, DROPPED_MS), 'timeout');
});

test('on the management network the amphora sends heartbeats and nothing else: not to the controller\'s other ports, not to another amphora', options, async (t) => {
  const l = await lab(t);
  const controller = await l.serve('controller', CONTROLLER.mgmt, `udp:${HEARTBEAT_PORT}`, 'udp:5556', 'tcp:9876', 'tcp:5432');
  await l.serve('other', OTHER_AMPHORA, `tcp:${AGENT_PORT}`);
  await applyAmphoraFirewall(l.ns.amphora, firewall());
  assert.equal(await l.probe('amphora', 'udp', CONTROLLER.mgmt, HEARTBEAT_PORT, ANSWERED_MS), 'ok');
  assert.equal(await l.probe('amphora', 'tcp', CONTROLLER.mgmt, 9876, DROPPED_MS), 'timeout');
  assert.equal(await l.probe('amphora', 'tcp', CONTROLLER.mgmt, 5432, DROPPED_MS), 'timeout');
  assert.equal(await l.probe('amphora', 'udp', CONTROLLER.mgmt, 5556, DROPPED_MS), 'timeout');
  assert.equal(await l.probe('amphora', 'tcp', OTHER_AMPHORA, AGENT_PORT, DROPPED_MS), 'timeout');
  assert.deepEqual(controller.lines.filter((line) => line.startsWith('udp ')), [`udp ${HEARTBEAT_PORT} from ${A.mgmt}`]);
});

test('the amphora answers the controller\'s tenant address but cannot open a connection to it', options, async (t) => {
  const l = await lab(t);
  await l.serve('amphora', '::', 'tcp:80');
  await l.serve('controller', CONTROLLER.tenant, 'tcp:7777');
  await l.serve('inside', INSIDE.v4, 'tcp:7777');
  await applyAmphoraFirewall(l.ns.amphora, firewall({ listeners: [{ protocol: 'tcp', port: 80, allowedCidrs: [] }] }));
  assert.equal(await l.probe('controller', 'tcp', A.vip, 80, ANSWERED_MS), 'ok', 'the controller as a client');
  assert.equal(await l.probe('amphora', 'tcp', INSIDE.v4, 7777, ANSWERED_MS), 'ok', 'another address of the tenant network');
  assert.equal(await l.probe('amphora', 'tcp', CONTROLLER.tenant, 7777, DROPPED_MS), 'timeout');
});

test('the amphora connects to a member and hears ICMP about it; the member cannot connect in', options, async (t) => {
  const l = await lab(t);
  await l.serve('member', MEMBER, 'tcp:8000');
  await l.serve('amphora', A.member, 'tcp:8001');
  await applyAmphoraFirewall(l.ns.amphora, firewall());
  assert.equal(await l.probe('amphora', 'tcp', MEMBER, 8000, ANSWERED_MS), 'ok');
  assert.equal(await l.probe('amphora', 'udp', MEMBER, 9999, ANSWERED_MS), 'ECONNREFUSED', 'the port unreachable conntrack marks related gets through');
  assert.equal(await l.probe('member', 'tcp', A.member, 8001, DROPPED_MS), 'timeout');
});

test('VRRP is accepted from the peers only, over IPv4 and IPv6', options, async (t) => {
  const l = await lab(t);
  await applyAmphoraFirewall(l.ns.amphora, firewall());
  const receiver = l.spawn('amphora', [PYTHON, '-c', VRRP_RECEIVER, PEER.v4, PEER.v6]);
  await receiver.line((line) => line === 'ready');
  // The stranger sends first: had its packets passed, they would arrive before the peer's.
  await run(IP, ['netns', 'exec', l.ns.outside, PYTHON, '-c', VRRP_SENDER, A.tenant, A.tenant6], { timeout: 10_000 });
  await run(IP, ['netns', 'exec', l.ns.peer, PYTHON, '-c', VRRP_SENDER, A.tenant, A.tenant6], { timeout: 10_000 });
  await receiver.line((line) => line === PEER.v4);
  await receiver.line((line) => line === PEER.v6);
  assert.deepEqual(receiver.lines.filter((line) => line !== 'ready').sort(), [PEER.v4, PEER.v6].sort());
});

test('an update replaces the listener set atomically, and an established connection on a kept port carries on', options, async (t) => {
  const l = await lab(t);
  await l.serve('amphora', '::', 'tcp:80', 'tcp:81', 'tcp:82');
  const open = (...ports: number[]) => firewall({ listeners: ports.map((port) => ({ protocol: 'tcp' as const, port, allowedCidrs: [] })) });
  await applyAmphoraFirewall(l.ns.amphora, open(80, 81));
  const held = l.spawn('inside', [process.execPath, '-e', PROBE, 'hold', A.vip, '80']);
  await held.line((line) => line === 'connected');
  held.child.stdin!.write('before\n');
  await held.line((line) => line === 'echo before');
  assert.equal(await l.probe('inside', 'tcp', A.vip, 81, ANSWERED_MS), 'ok');

  const started = performance.now();
  await applyAmphoraFirewall(l.ns.amphora, open(80, 82));
  t.diagnostic(`security group update: ${(performance.now() - started).toFixed(0)} ms`);
  held.child.stdin!.write('after\n');
  await held.line((line) => line === 'echo after');
  assert.equal(await l.probe('inside', 'tcp', A.vip, 82, ANSWERED_MS), 'ok');
  assert.equal(await l.probe('inside', 'tcp', A.vip, 80, ANSWERED_MS), 'ok');
  assert.equal(await l.probe('inside', 'tcp', A.vip, 81, DROPPED_MS), 'timeout');
  const { stdout } = await run(IP, ['netns', 'exec', l.ns.amphora, 'nft', 'list', 'tables'], { timeout: 10_000 });
  assert.equal(stdout.trim(), 'table inet ostia_sg');
});

// ---------------------------------------------------------------- port security at work

/** The amphora's tenant port as the bridge network driver allows it: its address, the VIP, its IPv6 address. */
async function amphoraAllowance(l: Lab): Promise<PortAllowance> {
  return { mac: await l.macOf('amphora', 'eth1'), addresses: [A.tenant, A.vip, A.tenant6] };
}

test('port security: an address the port was not given reaches no one, by ARP or IP, while its own and the VIP do', options, async (t) => {
  const l = await lab(t);
  const client = await l.serve('inside', '::', 'udp:7000');
  await addPortSecurity(l.ns.fabric, 't-amp', await amphoraAllowance(l));
  await ipBatch(l.ns.amphora, ['address add 10.62.0.77/24 dev eth1', 'address add fd62::77/64 dev eth1 nodad']);
  // Before the amphora knows the client's MAC: its ARP request, sender 10.62.0.77, dies at the bridge.
  assert.equal(await l.probe('amphora', 'udp', INSIDE.v4, 7000, DROPPED_MS, '10.62.0.77'), 'timeout');
  assert.equal((await ip('-n', l.ns.inside, 'neigh', 'show', '10.62.0.77')).trim(), '', 'the client never heard an ARP from 10.62.0.77');
  // The kernel keeps soliciting from the address of the packet that started resolving: start afresh.
  await ip('-n', l.ns.amphora, 'neigh', 'flush', 'dev', 'eth1');
  for (const local of [A.tenant, A.vip]) assert.equal(await l.probe('amphora', 'udp', INSIDE.v4, 7000, ANSWERED_MS, local), 'ok', local);
  assert.equal(await l.probe('amphora', 'udp', INSIDE.v6, 7000, ANSWERED_MS, A.tenant6), 'ok');
  // Now the amphora knows the client's MAC: the IP packet itself, source 10.62.0.77, dies at the bridge.
  assert.equal(await l.probe('amphora', 'udp', INSIDE.v4, 7000, DROPPED_MS, '10.62.0.77'), 'timeout');
  assert.equal(await l.probe('amphora', 'udp', INSIDE.v6, 7000, DROPPED_MS, 'fd62::77'), 'timeout');
  assert.deepEqual(client.lines.filter((line) => line.startsWith('udp ')).sort(), [A.tenant, A.vip, A.tenant6].map((a) => `udp 7000 from ${a}`).sort());
});

test('port security: frames from another MAC are dropped, even from an allowed address', options, async (t) => {
  const l = await lab(t);
  const client = await l.serve('inside', INSIDE.v4, 'udp:7000');
  await addPortSecurity(l.ns.fabric, 't-amp', await amphoraAllowance(l));
  assert.equal(await l.probe('amphora', 'udp', INSIDE.v4, 7000, ANSWERED_MS, A.tenant), 'ok');
  await ip('-n', l.ns.amphora, 'link', 'set', 'dev', 'eth1', 'address', '02:00:5e:10:00:99');
  assert.equal(await l.probe('amphora', 'udp', INSIDE.v4, 7000, DROPPED_MS, A.tenant), 'timeout');
  assert.deepEqual(client.lines.filter((line) => line.startsWith('udp ')), [`udp 7000 from ${A.tenant}`], 'only the datagram sent before the MAC changed arrived');
});

test('port security is per port: adding again replaces a port\'s rules, removing one leaves the others\'', options, async (t) => {
  const l = await lab(t);
  const client = await l.serve('inside', INSIDE.v4, 'udp:7000');
  const arrived = () => client.lines.filter((line) => line.startsWith('udp ')).map((line) => line.slice('udp 7000 from '.length));
  await ip('-n', l.ns.amphora, 'address', 'add', '10.62.0.77/24', 'dev', 'eth1');
  await ip('-n', l.ns.outside, 'address', 'add', '10.62.0.78/24', 'dev', 'eth0');
  const outside: PortAllowance = { mac: await l.macOf('outside', 'eth0'), addresses: [OUTSIDE.v4] };
  await addPortSecurity(l.ns.fabric, 't-amp', await amphoraAllowance(l));
  await addPortSecurity(l.ns.fabric, 't-out', outside);
  // The amphora learns the client's MAC first: a datagram waiting for ARP would leave once a later rule let the ARP through.
  assert.equal(await l.probe('amphora', 'udp', INSIDE.v4, 7000, ANSWERED_MS, A.tenant), 'ok');
  assert.equal(await l.probe('amphora', 'udp', INSIDE.v4, 7000, DROPPED_MS, '10.62.0.77'), 'timeout');

  await addPortSecurity(l.ns.fabric, 't-amp', { ...(await amphoraAllowance(l)), addresses: [A.tenant, '10.62.0.77'] });
  assert.equal(await l.probe('amphora', 'udp', INSIDE.v4, 7000, ANSWERED_MS, '10.62.0.77'), 'ok', 'the new allowance holds');
  assert.equal(await l.probe('amphora', 'udp', INSIDE.v4, 7000, DROPPED_MS, A.vip), 'timeout', 'the old allowance is gone');

  await removePortSecurity(l.ns.fabric, 't-amp');
  await removePortSecurity(l.ns.fabric, 't-amp');
  assert.equal(await l.probe('amphora', 'udp', INSIDE.v4, 7000, ANSWERED_MS, A.vip), 'ok', 'no port security left on t-amp');
  assert.equal(await l.probe('outside', 'udp', INSIDE.v4, 7000, ANSWERED_MS, OUTSIDE.v4), 'ok');
  assert.equal(await l.probe('outside', 'udp', INSIDE.v4, 7000, DROPPED_MS, '10.62.0.78'), 'timeout', 't-out keeps its port security');
  assert.deepEqual(arrived(), [A.tenant, '10.62.0.77', A.vip, OUTSIDE.v4]);
  const { stdout } = await run(IP, ['netns', 'exec', l.ns.fabric, 'nft', 'list', 'table', 'bridge', PORT_SECURITY_TABLE], { timeout: 10_000 });
  assert.match(stdout, /elements = \{ "t-out" : jump p_t-out \}/);
  assert.doesNotMatch(stdout, /p_t-amp/);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { blockedAt, parseRuleset, type Packet, type Place } from './firewall.js';
import { heartbeatVerdict } from './amphora-checks.js';
import { poolVerdict } from './service-checks.js';
import { clockVerdict } from './clock.js';
import { routeVerdict } from './plane.js';

/** `nft -j list ruleset` of an amphora's namespace holding the security group Ostia writes (controller 198.18.5.1, agent 9443, heartbeats to 198.18.5.1:5555). */
const SECURITY_GROUP = '{"nftables":[{"metainfo":{"version":"1.0.6","release_name":"Lester Gooch #5","json_schema_version":1}},{"table":{"family":"inet","name":"ostia_sg","handle":2}},{"set":{"family":"inet","name":"heartbeats_v4","table":"ostia_sg","type":["ipv4_addr","inet_service"],"handle":3,"elem":[{"concat":["198.18.5.1",5555]}]}},{"chain":{"family":"inet","table":"ostia_sg","name":"input","handle":1,"type":"filter","hook":"input","prio":0,"policy":"drop"}},{"chain":{"family":"inet","table":"ostia_sg","name":"output","handle":2,"type":"filter","hook":"output","prio":0,"policy":"accept"}},{"rule":{"family":"inet","table":"ostia_sg","chain":"input","handle":4,"expr":[{"match":{"op":"==","left":{"meta":{"key":"iif"}},"right":"lo"}},{"accept":null}]}},{"rule":{"family":"inet","table":"ostia_sg","chain":"input","handle":6,"expr":[{"match":{"op":"==","left":{"meta":{"key":"iifname"}},"right":"eth0"}},{"match":{"op":"==","left":{"payload":{"protocol":"icmpv6","field":"type"}},"right":{"set":["mld-listener-query","nd-router-advert","nd-neighbor-solicit","nd-neighbor-advert"]}}},{"accept":null}]}},{"rule":{"family":"inet","table":"ostia_sg","chain":"input","handle":7,"expr":[{"match":{"op":"in","left":{"ct":{"key":"state"}},"right":["established","related"]}},{"accept":null}]}},{"rule":{"family":"inet","table":"ostia_sg","chain":"input","handle":8,"expr":[{"match":{"op":"in","left":{"ct":{"key":"state"}},"right":"invalid"}},{"drop":null}]}},{"rule":{"family":"inet","table":"ostia_sg","chain":"input","handle":9,"expr":[{"match":{"op":"==","left":{"meta":{"key":"iifname"}},"right":"eth0"}},{"match":{"op":"==","left":{"payload":{"protocol":"ip","field":"saddr"}},"right":"198.18.5.1"}},{"match":{"op":"==","left":{"payload":{"protocol":"tcp","field":"dport"}},"right":9443}},{"accept":null}]}},{"rule":{"family":"inet","table":"ostia_sg","chain":"output","handle":10,"expr":[{"match":{"op":"==","left":{"meta":{"key":"oif"}},"right":"lo"}},{"accept":null}]}},{"rule":{"family":"inet","table":"ostia_sg","chain":"output","handle":11,"expr":[{"match":{"op":"in","left":{"ct":{"key":"state"}},"right":["established","related"]}},{"accept":null}]}},{"rule":{"family":"inet","table":"ostia_sg","chain":"output","handle":13,"expr":[{"match":{"op":"==","left":{"meta":{"key":"oifname"}},"right":"eth0"}},{"match":{"op":"==","left":{"payload":{"protocol":"icmpv6","field":"type"}},"right":{"set":["mld-listener-report","nd-router-solicit","nd-neighbor-solicit","nd-neighbor-advert","mld2-listener-report"]}}},{"accept":null}]}},{"rule":{"family":"inet","table":"ostia_sg","chain":"output","handle":14,"expr":[{"match":{"op":"==","left":{"meta":{"key":"oifname"}},"right":"eth0"}},{"match":{"op":"==","left":{"concat":[{"payload":{"protocol":"ip","field":"daddr"}},{"payload":{"protocol":"udp","field":"dport"}}]},"right":"@heartbeats_v4"}},{"accept":null}]}},{"rule":{"family":"inet","table":"ostia_sg","chain":"output","handle":15,"expr":[{"match":{"op":"==","left":{"meta":{"key":"oifname"}},"right":"eth0"}},{"drop":null}]}},{"rule":{"family":"inet","table":"ostia_sg","chain":"output","handle":16,"expr":[{"match":{"op":"==","left":{"payload":{"protocol":"ip","field":"daddr"}},"right":"198.19.0.1"}},{"drop":null}]}}]}';
const AMPHORA: Place = { name: "the amphora's namespace", netns: 'ns', families: ['ip', 'ip6', 'inet'] };
const request: Packet = { proto: 'tcp', saddr: '198.18.5.1', daddr: '198.18.5.10', sport: null, dport: 9443, state: 'new', iif: 'eth0', oif: null };
const heartbeat: Packet = { proto: 'udp', saddr: '198.18.5.10', daddr: '198.18.5.1', sport: null, dport: 5555, state: 'new', iif: null, oif: 'eth0' };
const reply: Packet = { proto: 'tcp', saddr: '198.18.5.10', daddr: '198.18.5.1', sport: 9443, dport: null, state: 'established', iif: null, oif: 'eth0' };

/** The security group with one more table of rules, as an operator would add one. */
function withRules(rules: string): ReturnType<typeof parseRuleset> {
  const json = JSON.parse(SECURITY_GROUP) as { nftables: unknown[] };
  json.nftables.push(...(JSON.parse(rules) as unknown[]));
  return parseRuleset(JSON.stringify(json));
}

test("Ostia's own security group lets the agent's connections, replies and heartbeats through", () => {
  const ruleset = parseRuleset(SECURITY_GROUP);
  assert.equal(blockedAt(ruleset, AMPHORA, ['prerouting', 'input'], request), null);
  assert.equal(blockedAt(ruleset, AMPHORA, ['output', 'postrouting'], heartbeat), null);
  assert.equal(blockedAt(ruleset, AMPHORA, ['output', 'postrouting'], reply), null);
});

test('the security group admitting another port is named by its policy, with the port it admits', () => {
  const moved = SECURITY_GROUP.replace('"right":9443', '"right":9444');
  const blocked = blockedAt(parseRuleset(moved), AMPHORA, ['prerouting', 'input'], request);
  assert.equal(blocked?.where, 'table inet ostia_sg chain input');
  assert.match(blocked!.rule, /^policy drop, and no rule of it admits TCP 198\.18\.5\.1 → 198\.18\.5\.10 to port 9443 \(new\); it admits TCP to port 9444 only$/);
  assert.equal(blocked!.remove, null);
});

test('a heartbeat to another address than the set holds falls to the drop after it', () => {
  const blocked = blockedAt(parseRuleset(SECURITY_GROUP), AMPHORA, ['output'], { ...heartbeat, daddr: '198.18.5.2' });
  assert.equal(blocked?.rule, 'oifname eth0 drop');
  assert.equal(blocked?.remove, 'nft delete rule inet ostia_sg output handle 15');
});

test('a rule of another table dropping the replies (the wrong direction) is named; one for other ports is passed', () => {
  const table = '{"table":{"family":"ip","name":"x","handle":9}}';
  const chain = '{"chain":{"family":"ip","table":"x","name":"o","handle":1,"type":"filter","hook":"output","prio":-10,"policy":"accept"}}';
  const rule = (handle: number, field: string, port: number) =>
    `{"rule":{"family":"ip","table":"x","chain":"o","handle":${handle},"expr":[{"match":{"op":"==","left":{"payload":{"protocol":"tcp","field":"${field}"}},"right":${port}}},{"drop":null}]}}`;
  const ruleset = withRules(`[${table},${chain},${rule(2, 'dport', 80)},${rule(3, 'sport', 9443)}]`);
  const blocked = blockedAt(ruleset, AMPHORA, ['output', 'postrouting'], reply);
  assert.deepEqual(blocked, { place: "the amphora's namespace", where: 'table ip x chain o handle 3', rule: 'tcp sport 9443 drop', remove: 'nft delete rule ip x o handle 3' });
  assert.equal(blockedAt(ruleset, AMPHORA, ['output', 'postrouting'], heartbeat), null, 'a TCP rule does not match a UDP heartbeat');
});

test('a rule this walk cannot judge before a drop leaves the verdict open rather than guessed', () => {
  const table = '{"table":{"family":"inet","name":"y","handle":9}}';
  const chain = '{"chain":{"family":"inet","table":"y","name":"i","handle":1,"type":"filter","hook":"input","prio":-10,"policy":"accept"}}';
  const unknown = '{"rule":{"family":"inet","table":"y","chain":"i","handle":2,"expr":[{"match":{"op":"==","left":{"meta":{"key":"mark"}},"right":1}},{"accept":null}]}}';
  const drop = '{"rule":{"family":"inet","table":"y","chain":"i","handle":3,"expr":[{"match":{"op":"==","left":{"payload":{"protocol":"th","field":"dport"}},"right":{"range":[9000,9999]}}},{"drop":null}]}}';
  assert.equal(blockedAt(withRules(`[${table},${chain},${unknown},${drop}]`), AMPHORA, ['input'], request), null);
  assert.equal(blockedAt(withRules(`[${table},${chain},${drop}]`), AMPHORA, ['input'], request)?.rule, 'th dport 9000-9999 drop');
});

const amp = { id: 'a1', created_at: '2026-01-01 00:00:00', status: 'ALLOCATED' as const };
const now = Date.parse('2026-01-01T00:10:00Z');
const facts = { amp: { ...amp, last_heartbeat_at: now - 400 }, now, intervalMs: 500, timeoutMs: 3000, signing: true, targets: ['127.0.0.1:5555'], listen: '127.0.0.1:5555' };

test('heartbeat verdicts: fresh, late, silent, never heard, a wrong key, a wrong target', () => {
  assert.equal(heartbeatVerdict(facts)[0], 'ok');
  assert.deepEqual(heartbeatVerdict({ ...facts, amp: { ...amp, last_heartbeat_at: now - 2000 } }), ['WARN', 'last heartbeat 2.0 s ago, every 0.5 s expected: heartbeats are being lost on the way to 127.0.0.1:5555 (see the firewall rows), or the agent is stalling.']);
  assert.match(heartbeatVerdict({ ...facts, amp: { ...amp, last_heartbeat_at: now - 5000 } }).join(' '), /^FAIL last heartbeat 5\.0 s ago, beyond amphora\.heartbeatTimeoutMs \(3 s\)/);
  assert.match(heartbeatVerdict({ ...facts, amp: { ...amp, last_heartbeat_at: null } }).join(' '), /^FAIL no heartbeat ever received from this amphora, created 600 s ago/);
  assert.match(heartbeatVerdict({ ...facts, signing: false }).join(' '), /^FAIL MAC invalid: the amphora signs its heartbeats with a key the health manager does not derive/);
  assert.match(heartbeatVerdict({ ...facts, targets: ['127.0.0.1:6666'] }).join(' '), /^FAIL the amphora sends heartbeats to 127\.0\.0\.1:6666, but the health manager listens on 127\.0\.0\.1:5555/);
  assert.match(heartbeatVerdict({ ...facts, signing: null })[1], /was not readable here, so the key was not compared/);
});

test('address pool verdicts count only addresses inside the pools', () => {
  const subnet = { allocation_pools: [{ start: '10.0.0.10', end: '10.0.0.29' }] };
  assert.deepEqual(poolVerdict(subnet, ['10.0.0.10', '10.0.0.1'], true)[0], 'ok');
  assert.match(poolVerdict(subnet, Array.from({ length: 19 }, (_, i) => `10.0.0.${10 + i}`), true).join(' '), /^WARN 1 of 20 addresses of 10\.0\.0\.10-10\.0\.0\.29 free/);
  assert.match(poolVerdict(subnet, Array.from({ length: 20 }, (_, i) => `10.0.0.${10 + i}`), false).join(' '), /^FAIL no address handed out: all 20 addresses .* allocation_pools/);
});

test('clock verdicts judge the least skew the reading allows', () => {
  assert.equal(clockVerdict('x', { low: -700, high: 300 }, 3000)[0], 'ok');
  assert.match(clockVerdict('x', { low: 1500, high: 2500 }, 3000).join(' '), /^WARN x's clock is at least 1\.5 s ahead of/);
  assert.match(clockVerdict('x', { low: -6000, high: -5000 }, 3000).join(' '), /^FAIL x's clock is at least 5\.0 s behind this machine's, beyond amphora\.heartbeatTimeoutMs \(3 s\): heartbeats are refused as stale/);
});

test('a route through another interface is the management network not routed to the controller', () => {
  const plane = { routeDev: 'ostia-ab', routeWhat: 'ostia-ab, the veth', expectedRoute: '198.18.5.0/24 dev ostia-ab src 198.18.5.1', restore: 'ip route replace …' };
  assert.equal(routeVerdict(plane, '198.18.5.10', { dev: 'ostia-ab', type: null, gateway: null, prefsrc: '198.18.5.1' }).ok, true);
  const wrong = routeVerdict(plane, '198.18.5.10', { dev: 'eth0', type: null, gateway: '192.0.2.1', prefsrc: '192.0.2.2' });
  assert.equal(wrong.ok, false);
  assert.match(wrong.detail, /^management network not routed to the controller: this machine sends 198\.18\.5\.10 via 192\.0\.2\.1 on eth0, not through ostia-ab, the veth; expected 198\.18\.5\.0\/24 dev ostia-ab src 198\.18\.5\.1/);
  assert.match(routeVerdict(plane, '198.18.5.10', { error: 'RTNETLINK answers: Network is unreachable' }).detail, /no route to 198\.18\.5\.10 \(RTNETLINK answers: Network is unreachable\)/);
});

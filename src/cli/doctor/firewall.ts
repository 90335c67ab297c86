/**
 * Which nftables rule, if any, drops the management plane's packets on their way: the controller's
 * connection to an agent, the agent's reply, and a heartbeat to the health manager. Each place a packet
 * crosses (this machine's namespace, the bridge fabric's, the amphora's) is listed with `nft -j list
 * ruleset` and its base chains on the packet's path are walked in order, as the kernel would for the first
 * packet of the flow. A rule is taken at its word only when every match in it is one this walk can judge
 * (addresses, ports, protocol, interface, conntrack state); others are passed over, so a verdict named
 * here is one the rule really gives such a packet.
 */
import { execFile } from 'node:child_process';
import { cidrContains, parseCidr } from '../../domain/net.js';
import { IP } from '../../linux-net/ip.js';
import { nftPath } from '../../linux-net/nft.js';

/** The first packet of a flow at one place, as the rules there see it. */
export interface Packet {
  proto: 'tcp' | 'udp';
  saddr: string;
  daddr: string;
  sport: number | null;
  dport: number | null;
  /** The conntrack state it has: a request is `new`, a reply `established`. */
  state: 'new' | 'established';
  iif: string | null;
  oif: string | null;
}

export type Hook = 'prerouting' | 'input' | 'forward' | 'output' | 'postrouting';

export interface Place {
  /** Says where, in a sentence: "this machine's namespace", "the amphora's namespace ostia-…". */
  name: string;
  /** The namespace to list (`ip netns exec`), or null for this process's own. */
  netns: string | null;
  /** The families whose chains its packets meet: a bridge fabric's frames meet only the bridge family's (no br_netfilter). */
  families: readonly string[];
}

export interface Blocked {
  place: string;
  /** `table inet x chain input handle 3`, or the chain whose policy dropped it. */
  where: string;
  /** The rule as nft would print it (its matches and verdict), or `policy drop` with what the chain admits. */
  rule: string;
  /** The command that removes it (a rule), or null for a policy. */
  remove: string | null;
}

type Json = Record<string, unknown>;
export interface Ruleset {
  chains: Array<{ family: string; table: string; name: string; hook?: string; prio?: number; policy?: string }>;
  rules: Array<{ family: string; table: string; chain: string; handle: number; expr: Json[] }>;
  /** Named sets' elements, by `family table name`. */
  sets: Map<string, unknown[]>;
}

export function parseRuleset(text: string): Ruleset {
  const items = (JSON.parse(text) as { nftables: Json[] }).nftables;
  const sets = items.flatMap((i) => (i.set ? [i.set as { family: string; table: string; name: string; elem?: unknown[] }] : []));
  return {
    chains: items.flatMap((i) => (i.chain ? [i.chain as Ruleset['chains'][number]] : [])),
    rules: items.flatMap((i) => (i.rule ? [i.rule as Ruleset['rules'][number]] : [])),
    sets: new Map(sets.map((set) => [`${set.family} ${set.table} ${set.name}`, set.elem ?? []])),
  };
}

/**
 * The rule (or chain policy) that drops `packet` where it meets `hooks` (in order) at `place`, or null when
 * the base chains there let it through, or when a rule this walk cannot judge might have let it through first.
 */
export function blockedAt(ruleset: Ruleset, place: Place, hooks: readonly Hook[], packet: Packet): Blocked | null {
  const chains = ruleset.chains
    .filter((c) => c.hook && hooks.includes(c.hook as Hook) && place.families.includes(c.family) && appliesToFamily(c.family, packet))
    .sort((a, b) => hooks.indexOf(a.hook as Hook) - hooks.indexOf(b.hook as Hook) || (a.prio ?? 0) - (b.prio ?? 0));
  for (const chain of chains) {
    const verdict = walk(ruleset, chain.family, chain.table, chain.name, packet, 0);
    if (verdict?.kind === 'unsure') continue;
    if (verdict?.kind === 'drop') return { place: place.name, ...verdict.blocked };
    if (!verdict && chain.policy === 'drop')
      return {
        place: place.name,
        where: `table ${chain.family} ${chain.table} chain ${chain.name}`,
        rule: `policy drop, and no rule of it admits ${describePacket(packet)}${admitted(ruleset, chain, packet.proto)}`,
        remove: null,
      };
  }
  return null;
}

/** `unsure`: a rule whose matches this walk cannot judge might have decided first. */
type Verdict = { kind: 'accept' } | { kind: 'unsure' } | { kind: 'drop'; blocked: Omit<Blocked, 'place'> } | null;

const MAX_JUMPS = 16;
const VERDICTS = ['accept', 'drop', 'reject', 'jump', 'goto', 'return'];

function walk(ruleset: Ruleset, family: string, table: string, chain: string, packet: Packet, depth: number): Verdict {
  if (depth > MAX_JUMPS) return { kind: 'unsure' };
  let unsure = false;
  for (const rule of ruleset.rules.filter((r) => r.family === family && r.table === table && r.chain === chain)) {
    const matches = rule.expr.filter((e) => 'match' in e).map((e) => judgeMatch(ruleset, family, table, e.match as Json, packet));
    const verdict = rule.expr.find((e) => VERDICTS.some((k) => k in e));
    // A verdict map (vmap) or any other statement deciding the packet this walk cannot follow.
    const undecidable = rule.expr.some((e) => 'vmap' in e || ('match' in e && typeof (e.match as Json).right === 'object' && (e.match as Json).right !== null && 'vmap' in ((e.match as Json).right as Json)));
    if (matches.includes(false)) continue;
    if (matches.includes(null) || undecidable) {
      if (verdict || undecidable) unsure = true;
      continue;
    }
    if (!verdict) continue;
    if (unsure) return { kind: 'unsure' };
    if ('accept' in verdict) return { kind: 'accept' };
    if ('return' in verdict) return null;
    if ('drop' in verdict || 'reject' in verdict)
      return {
        kind: 'drop',
        blocked: {
          where: `table ${family} ${table} chain ${chain} handle ${rule.handle}`,
          rule: describeRule(rule.expr),
          remove: `nft delete rule ${family} ${table} ${chain} handle ${rule.handle}`,
        },
      };
    const target = ((verdict.jump ?? verdict.goto) as { target: string }).target;
    const inner = walk(ruleset, family, table, target, packet, depth + 1);
    if (inner || 'goto' in verdict) return inner;
  }
  return unsure ? { kind: 'unsure' } : null;
}

/** true, false, or null for a match this walk cannot judge. */
function judgeMatch(ruleset: Ruleset, family: string, table: string, match: Json, packet: Packet): boolean | null {
  const op = match.op as string;
  const left = match.left as Json;
  const fields = left.concat ? (left.concat as Json[]).map((l) => fieldOf(l, packet)) : [fieldOf(left, packet)];
  // A field of another protocol (tcp dport of a UDP packet): the rule does not match it.
  if (fields.includes(NOT_THIS_PROTOCOL)) return false;
  if (fields.includes(undefined)) return null;
  if (fields.length === 1 && fields[0] === EPHEMERAL) {
    const hit = ephemeralHit(match.right);
    return hit === null ? null : op === '!=' ? !hit : hit;
  }
  if (fields.includes(EPHEMERAL)) return null;
  const values = fields as Array<string | number>;
  let right = match.right;
  if (typeof right === 'string' && right.startsWith('@')) {
    const elements = ruleset.sets.get(`${family} ${table} ${right.slice(1)}`);
    if (!elements) return null;
    right = { set: elements };
  }
  const hit = values.length === 1 ? contains(right, values[0]!) : containsTuple(right, values);
  if (hit === null) return null;
  return op === '!=' ? !hit : op === '==' || op === 'in' ? hit : null;
}

function containsTuple(right: unknown, values: Array<string | number>): boolean | null {
  const elements = (right as Json).set as unknown[] | undefined;
  if (!elements) return null;
  const each = elements.map((e) => {
    const parts = (e as Json).concat as unknown[] | undefined;
    if (!parts || parts.length !== values.length) return null;
    const judged = parts.map((p, i) => contains(p, values[i]!));
    return judged.includes(false) ? false : judged.includes(null) ? null : true;
  });
  return each.includes(true) ? true : each.includes(null) ? null : false;
}

const NOT_THIS_PROTOCOL = Symbol('not this protocol');
/** The client's port of a connection: any of Linux's ip_local_port_range (default 32768–60999), unknown in advance. */
const EPHEMERAL = Symbol('ephemeral port');
const EPHEMERAL_RANGE = [32768, 60999] as const;

/** Whether a port match can hold for an ephemeral port: false when it names none of that range, else unknown. */
function ephemeralHit(right: unknown): boolean | null {
  const overlaps = (lo: number, hi: number) => lo <= EPHEMERAL_RANGE[1] && hi >= EPHEMERAL_RANGE[0];
  const one = (r: unknown): boolean => {
    if (typeof r === 'number') return overlaps(r, r);
    const range = (r as Json | null)?.range as [number, number] | undefined;
    if (range) return overlaps(range[0], range[1]);
    const set = (r as Json | null)?.set as unknown[] | undefined;
    return set ? set.some(one) : true;
  };
  return one(right) ? null : false;
}
/** Transport protocols a match may name: one that is not the packet's does not match it. */
const TRANSPORTS = ['tcp', 'udp', 'sctp', 'icmp', 'icmpv6', 'udplite', 'dccp'];

function fieldOf(left: Json, packet: Packet): string | number | typeof NOT_THIS_PROTOCOL | typeof EPHEMERAL | undefined {
  const meta = left.meta as { key: string } | undefined;
  if (meta?.key === 'iifname' || meta?.key === 'iif') return packet.iif ?? undefined;
  if (meta?.key === 'oifname' || meta?.key === 'oif') return packet.oif ?? undefined;
  if (meta?.key === 'nfproto') return packet.daddr.includes(':') ? 'ipv6' : 'ipv4';
  if (meta?.key === 'l4proto') return packet.proto;
  const ct = left.ct as { key: string } | undefined;
  if (ct?.key === 'state') return packet.state;
  const payload = left.payload as { protocol: string; field: string } | undefined;
  if (!payload) return undefined;
  const v6 = packet.daddr.includes(':');
  if (payload.protocol === 'ip' || payload.protocol === 'ip6') {
    if ((payload.protocol === 'ip6') !== v6) return NOT_THIS_PROTOCOL;
    return payload.field === 'saddr' ? packet.saddr : payload.field === 'daddr' ? packet.daddr : undefined;
  }
  if (TRANSPORTS.includes(payload.protocol) || payload.protocol === 'th') {
    if (payload.protocol !== 'th' && payload.protocol !== packet.proto) return NOT_THIS_PROTOCOL;
    const port = payload.field === 'dport' ? packet.dport : payload.field === 'sport' ? packet.sport : undefined;
    return port === null ? EPHEMERAL : port;
  }
  return undefined;
}

function contains(right: unknown, value: string | number): boolean | null {
  if (typeof right === 'string' || typeof right === 'number') {
    if (typeof value === 'string' && typeof right === 'string' && right.endsWith('*')) return value.startsWith(right.slice(0, -1));
    return right === value;
  }
  if (Array.isArray(right)) return anyOf(right, value);
  const r = right as Json;
  if (r.set) return anyOf(r.set as unknown[], value);
  if (r.range && typeof value === 'number') {
    const [lo, hi] = r.range as [number, number];
    return value >= lo && value <= hi;
  }
  if (r.prefix && typeof value === 'string') {
    const { addr, len } = r.prefix as { addr: string; len: number };
    const cidr = parseCidr(`${addr}/${len}`);
    return cidr ? cidrContains(cidr, value) : null;
  }
  return null;
}

function anyOf(items: unknown[], value: string | number): boolean | null {
  const each = items.map((i) => contains(i, value));
  return each.includes(true) ? true : each.includes(null) ? null : false;
}

function appliesToFamily(family: string, packet: Packet): boolean {
  const v6 = packet.daddr.includes(':');
  return family === 'ip' ? !v6 : family === 'ip6' ? v6 : true;
}

export function describePacket(p: Packet): string {
  const ports = [p.sport !== null ? `from port ${p.sport}` : null, p.dport !== null ? `to port ${p.dport}` : null].filter(Boolean).join(' ');
  return `${p.proto.toUpperCase()} ${p.saddr} → ${p.daddr} ${ports} (${p.state})`;
}

/** The destination ports the chain's accept rules name for `proto`, so a wrong port shows. */
function admitted(ruleset: Ruleset, chain: Ruleset['chains'][number], proto: string): string {
  const ports = ruleset.rules
    .filter((r) => r.family === chain.family && r.table === chain.table && r.chain === chain.name && r.expr.some((e) => 'accept' in e))
    .flatMap((r) => r.expr.filter((e) => 'match' in e).map((e) => e.match as Json))
    .filter((m) => {
      const payload = (m.left as Json).payload as { protocol: string; field: string } | undefined;
      return payload && (payload.protocol === proto || payload.protocol === 'th') && payload.field === 'dport';
    })
    .map((m) => valueText(m.right));
  return ports.length ? `; it admits ${proto.toUpperCase()} to port ${[...new Set(ports)].join(', ')} only` : '';
}

export function describeRule(expr: Json[]): string {
  return expr
    .map((e) => {
      if (e.match) {
        const m = e.match as Json;
        const op = m.op === '==' || m.op === 'in' ? '' : `${m.op as string} `;
        return `${leftText(m.left as Json)} ${op}${valueText(m.right)}`;
      }
      const verdict = Object.keys(e)[0]!;
      if (verdict === 'jump' || verdict === 'goto') return `${verdict} ${(e[verdict] as { target: string }).target}`;
      return verdict === 'counter' ? 'counter' : verdict;
    })
    .join(' ');
}

function leftText(left: Json): string {
  if (left.meta) return (left.meta as { key: string }).key;
  if (left.ct) return `ct ${(left.ct as { key: string }).key}`;
  if (left.payload) {
    const p = left.payload as { protocol: string; field: string };
    return `${p.protocol} ${p.field}`;
  }
  return JSON.stringify(left);
}

function valueText(right: unknown): string {
  if (typeof right !== 'object' || right === null) return String(right);
  if (Array.isArray(right)) return right.map(valueText).join(',');
  const r = right as Json;
  if (r.set) return `{ ${(r.set as unknown[]).map(valueText).join(', ')} }`;
  if (r.range) return (r.range as unknown[]).map(valueText).join('-');
  if (r.prefix) return `${(r.prefix as { addr: string }).addr}/${(r.prefix as { len: number }).len}`;
  return JSON.stringify(right);
}

/** The ruleset of a namespace (null: this process's), or null when nftables is not installed or the namespace is gone. */
export function listRuleset(netns: string | null): Promise<Ruleset | null> {
  const nft = nftPath();
  if (!nft) return Promise.resolve(null);
  const [file, args] = netns === null ? [nft, ['-j', 'list', 'ruleset']] : [IP, ['netns', 'exec', netns, nft, '-j', 'list', 'ruleset']];
  return new Promise((resolve) => {
    execFile(file, args, { timeout: 10_000, maxBuffer: 64 * 1024 * 1024 }, (e, stdout) => resolve(e ? null : parseRuleset(stdout)));
  });
}

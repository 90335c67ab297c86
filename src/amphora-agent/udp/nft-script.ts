/**
 * AmphoraConfig → the nftables table that balances UDP listeners in the amphora's network
 * namespace (this kernel has no IPVS, so Octavia's keepalived LVS cannot run). HAProxy serves
 * every other protocol; UDP listeners and their pools live here alone.
 *
 *   table inet ostia_udp
 *     map m_<pool>_v4 / m_<pool>_v6   slot (0 … SLOTS-1) → member address . port
 *     counter l_<listener>            the flows each listener DNATed
 *     chain filter                    allowed_cidrs (only if some listener has them): datagrams from elsewhere dropped
 *     chain prerouting (dstnat)       VIP . port → a slot → a member: `numgen inc` (ROUND_ROBIN) or
 *                                     `jhash` of the source address (SOURCE_IP, and SOURCE_IP persistence)
 *     chain postrouting (srcnat)      masquerade what was DNATed, so members answer through the amphora
 *                                     as they do behind Octavia's LVS-NAT
 *
 * The rules never name a member: the slot count is fixed and each member owns slots in proportion
 * to its weight, spread over the slots by bit reversal, so `numgen inc` (which takes the slots in
 * turn) meets every member in its share within any short run of flows. So a member taken out or put back (disabled, weight 0, failed or
 * recovered health checks, added, removed) changes map elements only (`elementsScript`), and the
 * rules — with their handles and counters — stay; `rulesScript` changes only when listeners,
 * pools or VIPs do. Both go to `nft -f` as one transaction.
 *
 * Every name is built from ids through the UUID encoder, every address and CIDR is parsed and
 * written back canonically, every number is range-checked: no string from the config reaches
 * nft as it came.
 */
import type { AmphoraConfig, ListenerConfig, MemberConfig, PoolConfig } from '../../domain/amphora-config.js';
import { ipVersion } from '../../domain/net.js';
import * as enc from '../haproxy/encoders.js';
import { RenderError } from '../haproxy/encoders.js';

export { RenderError };

export const TABLE = 'ostia_udp';
const FAMILY_TABLE = `inet ${TABLE}`;
/**
 * Slots the selectors spread flows over, a power of two: a member's share is its weight's to
 * within 1/SLOTS (a member whose share is under that gets no slot), and an update writes SLOTS
 * elements per map.
 */
export const SLOTS = 4096;
const SLOT_BITS = Math.log2(SLOTS);
/** jhash seed: fixed, so a full render keeps every source address on the member it had. */
const HASH_SEED = '0x0571a';
/** One priority below dstnat's -100: filtered before anything is translated. */
const FILTER_PRIORITY = -150;

type Family = 4 | 6;
const FAMILIES: readonly Family[] = [4, 6];
const proto = (f: Family) => (f === 4 ? 'ip' : 'ip6');

/** Which members may take new flows: by member id, false for those the health checks hold down. */
export type Health = ReadonlyMap<string, boolean>;

interface ListenerPlan {
  readonly listener: ListenerConfig;
  readonly pool: PoolConfig;
  readonly vips: Readonly<Record<Family, string[]>>;
}

const hex = (field: string, id: string) => enc.uuid(field, id).replaceAll('-', '');
export const mapName = (poolId: string, family: Family) => `m_${hex('pool id', poolId)}_v${family}`;
export const counterName = (listenerId: string) => `l_${hex('listener id', listenerId)}`;

/** The UDP listeners that forward somewhere, each with its pool and VIPs by family. */
export function udpListeners(config: AmphoraConfig): ListenerPlan[] {
  if (!config.enabled) return [];
  const pools = new Map(config.pools.map((p) => [p.id, p]));
  const vips: Record<Family, string[]> = { 4: [], 6: [] };
  for (const a of new Set([config.vip.address, ...config.vip.additional].map((v) => enc.ipAddress('vip address', v)))) vips[ipVersion(a) as Family].push(a);
  return config.listeners
    .filter((l) => l.protocol === 'UDP' && l.enabled)
    .flatMap((listener) => {
      const pool = listener.defaultPoolId === null ? undefined : pools.get(listener.defaultPoolId);
      if (!pool?.enabled) return [];
      checkPool(pool);
      enc.integer(`listener ${listener.id} port`, listener.port, 1, 65535);
      return [{ listener, pool, vips }];
    });
}

function checkPool(pool: PoolConfig): void {
  const field = (name: string) => `pool ${JSON.stringify(pool.id)} ${name}`;
  enc.oneOf(field('protocol'), pool.protocol, ['UDP']);
  enc.oneOf(field('lb_algorithm'), pool.algorithm, ['ROUND_ROBIN', 'SOURCE_IP']);
  if (pool.sessionPersistence) enc.oneOf(field('session_persistence'), pool.sessionPersistence.type, ['SOURCE_IP']);
}

/** The slot a new flow takes: by source address when the pool balances or persists by it, else in turn. */
function selector(pool: PoolConfig, family: Family): string {
  const bySource = pool.algorithm === 'SOURCE_IP' || pool.sessionPersistence?.type === 'SOURCE_IP';
  return bySource ? `jhash ${proto(family)} saddr mod ${SLOTS} seed ${HASH_SEED}` : `numgen inc mod ${SLOTS}`;
}

function cidrsByFamily(listener: ListenerConfig): Record<Family, string[]> | null {
  if (!listener.allowedCidrs?.length) return null;
  const out: Record<Family, string[]> = { 4: [], 6: [] };
  for (const c of new Set(listener.allowedCidrs.map((c) => enc.cidr(`listener ${JSON.stringify(listener.id)} allowed_cidrs`, c)))) out[ipVersion(c.split('/')[0]!) as Family].push(c);
  return out;
}

/** The maps (pool, family) the rules use, in rule order. */
function usedMaps(plans: readonly ListenerPlan[]): Array<{ pool: PoolConfig; family: Family }> {
  const seen = new Map<string, { pool: PoolConfig; family: Family }>();
  for (const p of plans) for (const family of FAMILIES) if (p.vips[family].length) seen.set(mapName(p.pool.id, family), { pool: p.pool, family });
  return [...seen.values()];
}

/**
 * The table without map elements, replacing whatever table of that name there was; empty when
 * nothing is served over UDP. Listeners and pools are taken in the config's order.
 */
export function rulesScript(config: AmphoraConfig): string {
  const plans = udpListeners(config);
  if (plans.length === 0) return '';
  const filter: string[] = [];
  const dnat: string[] = [];
  for (const { listener, pool, vips } of plans) {
    const counter = counterName(listener.id);
    const cidrs = cidrsByFamily(listener);
    for (const family of FAMILIES) {
      if (!vips[family].length) continue;
      const to = `${proto(family)} daddr { ${vips[family].join(', ')} } udp dport ${listener.port}`;
      if (cidrs) filter.push(cidrs[family].length ? `${to} ${proto(family)} saddr != { ${cidrs[family].join(', ')} } drop` : `${to} drop`);
      dnat.push(`${to} counter name "${counter}" dnat ${proto(family)} to ${selector(pool, family)} map @${mapName(pool.id, family)}`);
    }
  }
  const lines = [
    `table ${FAMILY_TABLE} {}`,
    `delete table ${FAMILY_TABLE}`,
    `table ${FAMILY_TABLE} {`,
    ...usedMaps(plans).map(({ pool, family }) => `  map ${mapName(pool.id, family)} { typeof numgen inc mod ${SLOTS} : ${proto(family)} daddr . udp dport; }`),
    ...plans.map(({ listener }) => `  counter ${counterName(listener.id)} {}`),
    // Only with allowed CIDRs: a filter hook is walked by every datagram, a NAT hook by a flow's first.
    ...(filter.length ? ['  chain filter {', `    type filter hook prerouting priority ${FILTER_PRIORITY}; policy accept;`, ...filter.map((r) => `    ${r}`), '  }'] : []),
    '  chain prerouting {',
    '    type nat hook prerouting priority dstnat; policy accept;',
    ...dnat.map((r) => `    ${r}`),
    '  }',
    '  chain postrouting {',
    '    type nat hook postrouting priority srcnat; policy accept;',
    '    ct status dnat meta l4proto udp masquerade',
    '  }',
    '}',
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * Members that take new flows: enabled, weighted and not held down by health checks; backup
 * members only while no other member can (as HAProxy's `backup` servers).
 */
export function servingMembers(pool: PoolConfig, health: Health): MemberConfig[] {
  const able = pool.members.filter((m) => m.enabled && m.weight > 0 && health.get(m.id) !== false);
  const primary = able.filter((m) => !m.backup);
  return primary.length ? primary : able;
}

/** Reverses the low SLOT_BITS bits of `n`. */
function bitReversed(n: number): number {
  let out = 0;
  for (let i = 0; i < SLOT_BITS; i++) out |= ((n >> i) & 1) << (SLOT_BITS - 1 - i);
  return out;
}

/**
 * The member of each slot: members in id order (the same members always get the same slots) own
 * consecutive runs of positions in proportion to weight, and slot s takes position bitReversed(s).
 */
export function slotOwners(members: readonly MemberConfig[]): MemberConfig[] {
  if (members.length === 0) return [];
  const sorted = [...members].sort((a, b) => (a.id < b.id ? -1 : 1));
  const total = sorted.reduce((sum, m) => sum + m.weight, 0);
  const byPosition: MemberConfig[] = [];
  let before = 0;
  for (const member of sorted) {
    const first = Math.floor((before * SLOTS) / total);
    before += member.weight;
    const end = Math.floor((before * SLOTS) / total);
    for (let p = first; p < end; p++) byPosition.push(member);
  }
  return Array.from({ length: SLOTS }, (_, s) => byPosition[bitReversed(s)]!);
}

/** A member's address and port as nft gets them; its id and weight checked too, though nft never sees them. */
function memberTarget(m: MemberConfig): { address: string; port: number } {
  const field = (name: string) => `member ${JSON.stringify(m.id)} ${name}`;
  enc.uuid(field('id'), m.id);
  enc.integer(field('weight'), m.weight, 0, 256);
  return { address: enc.ipAddress(field('address'), m.address), port: Number(enc.integer(field('port'), m.port, 1, 65535)) };
}

/** Every map's elements replaced, in one transaction with whatever precedes it. */
export function elementsScript(config: AmphoraConfig, health: Health): string {
  const lines: string[] = [];
  for (const { pool, family } of usedMaps(udpListeners(config))) {
    const name = mapName(pool.id, family);
    const targets = new Map(pool.members.map((m) => [m.id, memberTarget(m)]));
    const members = servingMembers(pool, health).filter((m) => ipVersion(targets.get(m.id)!.address) === family);
    lines.push(`flush map ${FAMILY_TABLE} ${name}`);
    const elements = slotOwners(members).map((member, slot) => `${slot} : ${targets.get(member.id)!.address} . ${targets.get(member.id)!.port}`);
    if (elements.length) lines.push(`add element ${FAMILY_TABLE} ${name} { ${elements.join(', ')} }`);
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}

/** Removes the table (nothing served over UDP any more); a no-op when there is none. */
export const DELETE_TABLE = `table ${FAMILY_TABLE} {}\ndelete table ${FAMILY_TABLE}\n`;

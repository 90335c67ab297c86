/**
 * The free-address index of each subnet: the ranges of its allocation pools that no port holds,
 * so the lowest free address is the first of the lowest range, found by one indexed read however
 * many ports the subnet has, instead of by reading them all.
 *
 * Ports stay the record of what is taken (unique per subnet and address); the index only says
 * where to look, and may cover more than is free: an address given explicitly is taken without
 * splitting the range it falls in (an allocation skips it when its probe finds it held), and the
 * address of a port that goes is added back as a range of one (`deletePorts`). It must not
 * cover less, so it is rebuilt from the ports whenever it might: before a subnet's first
 * allocation, when the subnet's pools changed in the configuration, and when it runs out (so an
 * address whose release was missed comes back before the subnet is declared full).
 *
 * Allocations on one subnet are serialised by its subnet_allocation row, locked by an upsert: on
 * PostgreSQL two API processes creating on one subnet wait for each other's transaction, so they
 * never pick the same address and each reads the index as the other left it.
 */
import { sql, type DeleteQueryBuilder, type DeleteResult, type Kysely, type Transaction } from 'kysely';
import type { Database } from './schema.js';
import type { FreeAddressRecord } from './records/free-address.js';
import { apiError } from '../domain/errors.js';
import { bigIntToIp, ipToBigInt, ipVersion } from '../domain/net.js';

type Q = Kysely<Database> | Transaction<Database>;
/** A subnet's allocation pools, as the configuration gives them. */
export type Pools = ReadonlyArray<{ start: string; end: string }>;

/** IPv4 addresses are numbered in the IPv4-mapped IPv6 block, so both families share one order. */
const V4_MAPPED = 0xffff_0000_0000n;
/** Decimal digits of 2^128 - 1: keys this wide sort as text in address order under any collation. */
const KEY_DIGITS = 39;
/** Candidates one probe asks the port table about: how far a range is read past addresses given explicitly. */
const PROBE = 32n;
/** Ranges per insert, well under either database's limit of bound parameters. */
const INSERT_CHUNK = 1000;

function numberOf(ip: string): bigint | null {
  const v = ipVersion(ip);
  return v === 0 ? null : v === 4 ? ipToBigInt(ip) + V4_MAPPED : ipToBigInt(ip);
}

const keyOf = (n: bigint) => n.toString().padStart(KEY_DIGITS, '0');
const ascending = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);

type Span = readonly [bigint, bigint];

/** A subnet's pools as numbered, sorted, merged spans of one family, and the text the index records them as. */
interface Layout {
  version: 4 | 6;
  spans: Span[];
  signature: string;
}

function layoutOf(pools: Pools): Layout {
  const version = (pools.map((p) => ipVersion(p.start)).find((v) => v !== 0) ?? 4) as 4 | 6;
  const spans = pools
    .filter((p) => ipVersion(p.start) === version && ipVersion(p.end) === version)
    .map((p): Span => [numberOf(p.start)!, numberOf(p.end)!])
    .filter(([s, e]) => s <= e)
    .sort((a, b) => ascending(a[0], b[0]));
  const merged: Array<[bigint, bigint]> = [];
  for (const [s, e] of spans) {
    const last = merged[merged.length - 1];
    if (last && s <= last[1] + 1n) last[1] = e > last[1] ? e : last[1];
    else merged.push([s, e]);
  }
  return { version, spans: merged, signature: JSON.stringify(pools) };
}

const inSpans = (spans: readonly Span[], n: bigint) => spans.some(([s, e]) => s <= n && n <= e);
const addressOf = (layout: Layout, n: bigint) => bigIntToIp(layout.version === 4 ? n - V4_MAPPED : n, layout.version);

/** The parts of `spans` that no number of `held` (sorted ascending) falls in. */
export function freeSpans(spans: readonly Span[], held: readonly bigint[]): Span[] {
  const out: Span[] = [];
  let i = 0;
  for (const [start, end] of spans) {
    let from = start;
    while (i < held.length && held[i]! < start) i++;
    for (; i < held.length && held[i]! <= end; i++) {
      if (held[i]! > from) out.push([from, held[i]! - 1n]);
      if (held[i]! >= from) from = held[i]! + 1n;
    }
    if (from <= end) out.push([from, end]);
  }
  return out;
}

/**
 * Writes ranges; one that starts where a range already does keeps the larger end, so a release
 * or a rebuild never shortens what another writer put there.
 */
async function putRanges(db: Q, rows: readonly FreeAddressRecord[]): Promise<void> {
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
    await db
      .insertInto('free_address')
      .values(rows.slice(i, i + INSERT_CHUNK))
      .onConflict((oc) =>
        oc.columns(['subnet_id', 'first_key']).doUpdateSet({
          last_key: sql<string>`case when excluded.last_key > free_address.last_key then excluded.last_key else free_address.last_key end`,
        }),
      )
      .execute();
  }
}

const span = (subnetId: string, [first, last]: Span): FreeAddressRecord => ({ subnet_id: subnetId, first_key: keyOf(first), last_key: keyOf(last) });

/** Lays the subnet's free ranges out again from its ports and its pools (the only read of every port). */
async function rebuild(trx: Transaction<Database>, subnetId: string, layout: Layout): Promise<void> {
  await trx.deleteFrom('free_address').where('subnet_id', '=', subnetId).execute();
  const ports = await trx.selectFrom('port').select('ip_address').where('subnet_id', '=', subnetId).execute();
  const held = ports.flatMap((p) => numberOf(p.ip_address) ?? []).sort(ascending);
  await putRanges(trx, freeSpans(layout.spans, held).map((s) => span(subnetId, s)));
  await trx.updateTable('subnet_allocation').set({ pools: layout.signature }).where('subnet_id', '=', subnetId).execute();
}

/** Locks the subnet's allocations until the transaction ends; returns the pools its index was laid along. */
async function lockSubnet(trx: Transaction<Database>, subnetId: string): Promise<string> {
  const row = await trx
    .insertInto('subnet_allocation')
    .values({ subnet_id: subnetId, pools: '' })
    .onConflict((oc) => oc.column('subnet_id').doUpdateSet({ subnet_id: (eb) => eb.ref('excluded.subnet_id') }))
    .returning('pools')
    .executeTakeFirstOrThrow();
  return row.pools;
}

async function heldAmong(db: Q, subnetId: string, addresses: readonly string[]): Promise<Set<string>> {
  const rows = await db.selectFrom('port').select('ip_address').where('subnet_id', '=', subnetId).where('ip_address', 'in', [...addresses]).execute();
  return new Set(rows.map((r) => r.ip_address));
}

/**
 * Reserves an address on `subnet` for a port the caller inserts in the same transaction:
 * `given` if no port holds it (else Octavia's VIP_IN_USE), or the lowest free address of the
 * subnet's pools, or null when every one is held.
 */
export async function takeAddress(trx: Transaction<Database>, subnet: { id: string; allocation_pools: Pools }, given: string | null): Promise<string | null> {
  const indexedAlong = await lockSubnet(trx, subnet.id);
  if (given) {
    if ((await heldAmong(trx, subnet.id, [given])).size) throw apiError('VIP_IN_USE', given);
    return given;
  }
  const layout = layoutOf(subnet.allocation_pools);
  let rebuilt = indexedAlong !== layout.signature;
  if (rebuilt) await rebuild(trx, subnet.id, layout);
  for (;;) {
    const range = await trx.selectFrom('free_address').select(['first_key', 'last_key']).where('subnet_id', '=', subnet.id).orderBy('first_key').limit(1).executeTakeFirst();
    if (!range) {
      if (rebuilt) return null;
      await rebuild(trx, subnet.id, layout);
      rebuilt = true;
      continue;
    }
    const first = BigInt(range.first_key);
    const last = BigInt(range.last_key);
    const end = first + PROBE - 1n < last ? first + PROBE - 1n : last;
    const candidates: bigint[] = [];
    for (let n = first; n <= end; n++) if (inSpans(layout.spans, n)) candidates.push(n);
    const held = candidates.length ? await heldAmong(trx, subnet.id, candidates.map((n) => addressOf(layout, n))) : new Set<string>();
    const free = candidates.find((n) => !held.has(addressOf(layout, n)));
    const next = free === undefined ? end + 1n : free + 1n;
    await trx.deleteFrom('free_address').where('subnet_id', '=', subnet.id).where('first_key', '=', range.first_key).execute();
    if (next <= last) await putRanges(trx, [span(subnet.id, [next, last])]);
    if (free !== undefined) return addressOf(layout, free);
  }
}

type PortDelete = DeleteQueryBuilder<Database, 'port', DeleteResult>;

/** Deletes the ports `where` selects and puts their addresses back in their subnets' free ranges. */
export async function deletePorts(db: Q, where: (q: PortDelete) => PortDelete): Promise<void> {
  const gone = await where(db.deleteFrom('port')).returning(['subnet_id', 'ip_address']).execute();
  await putRanges(db, gone.flatMap((p) => {
    const n = numberOf(p.ip_address);
    return n === null ? [] : [span(p.subnet_id, [n, n])];
  }));
}

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type { Kysely } from 'kysely';
import { testDatabase } from '../../test/support/postgres.js';
import { counted } from '../../test/support/query-counter.js';
import { isApiError } from '../domain/errors.js';
import { bigIntToIp, ipToBigInt } from '../domain/net.js';
import { timestamp } from '../domain/time.js';
import { deletePorts, freeSpans, takeAddress, type Pools } from './free-addresses.js';
import type { Database } from './schema.js';

const port = (subnetId: string, ip: string) => ({
  id: randomUUID(), project_id: 'p', name: '', network_id: 'n', subnet_id: subnetId, ip_address: ip, device_id: randomUUID(), device_owner: 'test', qos_policy_id: null, created_at: timestamp(),
});

/** One allocation as a create does it: the address and its port in one transaction. */
function allocate(db: Kysely<Database>, subnet: { id: string; allocation_pools: Pools }, given: string | null = null): Promise<string | null> {
  return db.transaction().execute(async (trx) => {
    const address = await takeAddress(trx, subnet, given);
    if (address) await trx.insertInto('port').values(port(subnet.id, address)).execute();
    return address;
  });
}

const release = (db: Kysely<Database>, subnetId: string, ip: string) => deletePorts(db, (q) => q.where('subnet_id', '=', subnetId).where('ip_address', '=', ip));

async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'accepted';
  } catch (e) {
    if (isApiError(e)) return `${e.status} ${e.message}`;
    throw e;
  }
}

test('free spans are the pools less the held addresses', () => {
  assert.deepEqual(freeSpans([[1n, 10n], [20n, 22n]], [0n, 1n, 2n, 5n, 10n, 21n, 30n]), [[3n, 4n], [6n, 9n], [20n, 20n], [22n, 22n]]);
  assert.deepEqual(freeSpans([[1n, 3n]], [1n, 2n, 3n]), []);
  assert.deepEqual(freeSpans([[1n, 3n]], []), [[1n, 3n]]);
});

test('the lowest free address, reused once released; a given address is refused while held; a full subnet answers null', async (t) => {
  const db = (await testDatabase(t)).kysely;
  const subnet = { id: randomUUID(), allocation_pools: [{ start: '10.0.0.8', end: '10.0.0.10' }, { start: '10.0.0.2', end: '10.0.0.3' }] };
  assert.deepEqual([await allocate(db, subnet), await allocate(db, subnet)], ['10.0.0.2', '10.0.0.3']);
  assert.equal(await allocate(db, subnet, '10.0.0.8'), '10.0.0.8');
  assert.equal(await refusal(allocate(db, subnet, '10.0.0.8')), '409 The VIP IP address is already in use: 10.0.0.8');
  assert.equal(await allocate(db, subnet), '10.0.0.9');
  await release(db, subnet.id, '10.0.0.2');
  assert.equal(await allocate(db, subnet), '10.0.0.2');
  assert.equal(await allocate(db, subnet), '10.0.0.10');
  assert.equal(await allocate(db, subnet), null);
  // A release the index missed (a port deleted by hand) is found again before the subnet is called full.
  await db.deleteFrom('port').where('subnet_id', '=', subnet.id).where('ip_address', '=', '10.0.0.9').execute();
  assert.equal(await allocate(db, subnet), '10.0.0.9');
});

test('a widened pool is used at once, and IPv6 pools of 2^64 addresses cost no more than small ones', async (t) => {
  const db = (await testDatabase(t)).kysely;
  const id = randomUUID();
  assert.equal(await allocate(db, { id, allocation_pools: [{ start: '10.0.0.5', end: '10.0.0.5' }] }), '10.0.0.5');
  assert.equal(await allocate(db, { id, allocation_pools: [{ start: '10.0.0.5', end: '10.0.0.5' }] }), null);
  assert.equal(await allocate(db, { id, allocation_pools: [{ start: '10.0.0.1', end: '10.0.0.5' }] }), '10.0.0.1');
  const v6 = { id: randomUUID(), allocation_pools: [{ start: '2001:db8::1', end: '2001:db8::ffff:ffff:ffff:ffff' }] };
  assert.equal(await allocate(db, v6, '2001:db8::1'), '2001:db8::1');
  assert.equal(await allocate(db, v6, '10.1.2.3'), '10.1.2.3');
  assert.deepEqual([await allocate(db, v6), await allocate(db, v6)], ['2001:db8::2', '2001:db8::3']);
});

test('an allocation runs the same queries and reads a handful of rows at 0 and at 2,000 held addresses', async (t) => {
  const { db, counter } = counted((await testDatabase(t)).kysely);
  const pools = [{ start: '10.8.0.1', end: '10.8.255.254' }];
  const empty = { id: randomUUID(), allocation_pools: pools };
  const full = { id: randomUUID(), allocation_pools: pools };
  const held = Array.from({ length: 2000 }, (_, i) => port(full.id, bigIntToIp(ipToBigInt('10.8.0.1') + BigInt(i), 4)));
  for (let i = 0; i < held.length; i += 500) await db.insertInto('port').values(held.slice(i, i + 500)).execute();
  // The first allocation on each subnet lays its index out from the ports: the one read of them all.
  await allocate(db, empty);
  assert.equal(await allocate(db, full), '10.8.7.209');
  const atZero = await counter.during(() => allocate(db, empty));
  const atTwoThousand = await counter.during(() => allocate(db, full));
  assert.deepEqual([atZero.result, atTwoThousand.result], ['10.8.0.2', '10.8.7.210']);
  assert.equal(atTwoThousand.queries, atZero.queries);
  assert.ok(atTwoThousand.rows <= 3, `an allocation read ${atTwoThousand.rows} rows`);
});

test('concurrent allocations on one subnet never take the same address', async (t) => {
  const db = (await testDatabase(t)).kysely;
  const subnet = { id: randomUUID(), allocation_pools: [{ start: '10.0.1.1', end: '10.0.1.40' }] };
  // Each holds its transaction open a moment after choosing, as a create does while it writes the rest.
  const slow = () => db.transaction().execute(async (trx) => {
    const address = await takeAddress(trx, subnet, null);
    await new Promise((r) => setTimeout(r, 5));
    await trx.insertInto('port').values(port(subnet.id, address!)).execute();
    return address;
  });
  const got = await Promise.all(Array.from({ length: 12 }, slow));
  assert.deepEqual(new Set(got).size, 12);
  assert.deepEqual([...got].sort((a, b) => Number(ipToBigInt(a!) - ipToBigInt(b!))), Array.from({ length: 12 }, (_, i) => `10.0.1.${i + 1}`));
});

/** An address of 10.0.2.0/26, in or out of the pools below. */
const anyAddress = fc.integer({ min: 0, max: 63 }).map((i) => `10.0.2.${i}`);
const step = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ kind: 'allocate' as const }) },
  { weight: 1, arbitrary: anyAddress.map((ip) => ({ kind: 'give' as const, ip })) },
  { weight: 2, arbitrary: fc.nat().map((n) => ({ kind: 'release' as const, n })) },
);

test('property: allocations never collide, always take the lowest free pool address, and fill the pools before the subnet is full', async (t) => {
  const db = (await testDatabase(t)).kysely;
  const pools = [{ start: '10.0.2.30', end: '10.0.2.40' }, { start: '10.0.2.5', end: '10.0.2.12' }];
  const inPools = Array.from({ length: 64 }, (_, i) => i).filter((i) => (i >= 5 && i <= 12) || (i >= 30 && i <= 40)).map((i) => `10.0.2.${i}`);
  await fc.assert(
    fc.asyncProperty(fc.array(step, { maxLength: 50 }), async (steps) => {
      const subnet = { id: randomUUID(), allocation_pools: pools };
      const held = new Set<string>();
      for (const s of steps) {
        if (s.kind === 'allocate') {
          const expected = inPools.find((ip) => !held.has(ip)) ?? null;
          assert.equal(await allocate(db, subnet), expected);
          if (expected) held.add(expected);
        } else if (s.kind === 'give') {
          const outcome = await refusal(allocate(db, subnet, s.ip));
          assert.equal(outcome, held.has(s.ip) ? `409 The VIP IP address is already in use: ${s.ip}` : 'accepted');
          held.add(s.ip);
        } else if (held.size) {
          const ip = [...held][s.n % held.size]!;
          await release(db, subnet.id, ip);
          held.delete(ip);
        }
      }
      const stored = await db.selectFrom('port').select('ip_address').where('subnet_id', '=', subnet.id).execute();
      assert.deepEqual(new Set(stored.map((p) => p.ip_address)), held);
    }),
    { numRuns: 40 },
  );
});

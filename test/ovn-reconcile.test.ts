/**
 * Reconciliation of the ovn provider at scale, against a real Northbound database (the sandbox,
 * no hosts): Ostia's side is read in a fixed number of queries per page of load balancers, so
 * reconciling many costs the queries of reconciling a few, and rows changed behind Ostia's back
 * still come back.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { reconcileNorthbound } from '../src/providers/ovn/reconcile.js';
import { startHarness, type Harness } from './support/harness.js';
import { unmet } from './support/requirements.js';
import { addLabTopology, graphBody, ovnConfig } from './support/ovn-lab.js';
import { startOvnSandbox, type OvnSandbox } from './support/ovn-sandbox.js';
import { counted } from './support/query-counter.js';

/** The OVN bench's load balancers, with a monitor so that health-check sources are read too. */
const MONITOR = { type: 'TCP', delay: 5, timeout: 2, max_retries: 2 };

async function createMany(h: Harness, from: number, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = from; i < from + count; i++) {
    const res = await h.request('POST', '/v2/lbaas/loadbalancers', { body: graphBody(`lb-${i}`, 'ovn', MONITOR) });
    assert.equal(res.statusCode, 201, res.body);
    ids.push(res.json().loadbalancer.id);
  }
  for (const id of ids) assert.equal(await h.settled(id), 'ACTIVE');
  return ids;
}

test('reconciling 24 load balancers runs the queries of reconciling 6, and restores rows deleted behind its back', { skip: unmet('ovn-sandbox'), timeout: 300_000 }, async () => {
  let sb: OvnSandbox | undefined;
  let h: Harness | undefined;
  try {
    sb = await startOvnSandbox();
    await addLabTopology(sb);
    h = await startHarness(ovnConfig(sb));
    const deps = await h.runtime.ovn();
    const { db: kysely, counter } = counted(h.runtime.db.kysely);
    const db = { ...h.runtime.db, kysely };
    const log = pino({ level: 'silent' });
    const reconcile = (page?: number) => counter.during(() => reconcileNorthbound(db, deps, log, page));

    const first = await createMany(h, 0, 6);
    const few = await reconcile();
    assert.deepEqual(few.result, { checked: 6, rewritten: 0, removed: 0, failed: 0 });
    await createMany(h, 6, 18);
    const many = await reconcile();
    assert.deepEqual(many.result, { checked: 24, rewritten: 0, removed: 0, failed: 0 });
    assert.equal(many.queries, few.queries, `24 load balancers took ${many.queries} queries, 6 took ${few.queries}`);
    // Pages of 5 read the same 24 in five rounds: the cost is per page, not per load balancer.
    const paged = await reconcile(5);
    assert.equal(paged.result.checked, 24);
    assert.ok(paged.queries > many.queries && paged.queries < many.queries * 5, `pages of 5: ${paged.queries} queries, one page: ${many.queries}`);

    await sb.nbctl('lb-del', first[0]!);
    assert.equal((await sb.nbctl('--bare', '--columns=_uuid', 'find', 'Load_Balancer', `name=${first[0]}`)).trim(), '');
    const repaired = await reconcile();
    assert.deepEqual(repaired.result, { checked: 24, rewritten: 1, removed: 0, failed: 0 });
    assert.notEqual((await sb.nbctl('--bare', '--columns=_uuid', 'find', 'Load_Balancer', `name=${first[0]}`)).trim(), '');
  } finally {
    await h?.close();
    await sb?.close();
  }
});

/**
 * Issue 5 item 6: one conformance suite, the same lifecycle scenarios against every provider
 * (support/conformance-scenarios.ts). A scenario needing something the provider refuses is
 * skipped with the provider's reason, after checking through the API that the provider does
 * refuse it with exactly that 501. Each world's skips come from its provider's capability table
 * (src/providers/<name>/capabilities.ts), and every table is checked against the scenarios' vocabulary.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, test, type TestContext } from 'node:test';
import { ovnCapabilities } from '../src/providers/ovn/capabilities.js';
import type { Need, Refusal } from './support/conformance-api.js';
import { CAPABILITY_TABLES, PROVIDER_WORLDS, type World } from './support/conformance-envs.js';
import { PROBES, SCENARIOS, buildProbeBase, probeable, type ProbeBase, type Scenario, type ScenarioContext } from './support/conformance-scenarios.js';

const same = (a: Need) => (b: Need) => a.feature === b.feature && a.value === b.value;
const key = (n: Need) => `${n.feature}=${n.value}`;

/** Load balancers left behind are cascade-deleted (once out of any PENDING_*) and waited for: amphorae are processes. */
async function removeAll(world: World, lbIds: readonly string[]): Promise<void> {
  for (const id of lbIds) {
    if ((await world.api.settled(id)) === 'DELETED') continue;
    const r = await world.api.request('DELETE', `/loadbalancers/${id}?cascade=true`);
    if (r.statusCode === 404) continue;
    assert.equal(r.statusCode, 204, `cleanup of ${id}: ${r.body}`);
    assert.equal(await world.api.settled(id), 'DELETED', `cleanup of ${id}`);
  }
}

function contextFor(world: World, name: string, tracked: string[]): ScenarioContext {
  return { api: world.api, env: world.env, name, track: (id) => tracked.push(id) };
}

/** Asks for each refused need the API can express and checks the provider's exact 501. */
async function assertRefused(world: World, base: () => Promise<ProbeBase>, refused: readonly Refusal[], port: () => number): Promise<void> {
  const probed = refused.filter(probeable);
  assert.ok(probed.length > 0, `none of ${refused.map(key).join(', ')} can be asked for through the API`);
  for (const r of probed) {
    const res = await PROBES[r.feature]!(world.api, await base(), r.value, port());
    assert.equal(res.statusCode, 501, `${key(r)}: ${res.statusCode} ${res.body}`);
    assert.equal(res.json().faultstring, r.faultstring, key(r));
  }
}

for (const providerWorld of PROVIDER_WORLDS) {
  describe(`provider conformance: ${providerWorld.name}`, { skip: providerWorld.missing(), concurrency: 1 }, () => {
    let world: World;
    const baseLbs: string[] = [];
    let probeBase: Promise<ProbeBase> | undefined;
    let probePort = 40_000;
    // Made once, on the first skip: a provider that refuses nothing needs no probe target.
    const base = () => (probeBase ??= buildProbeBase(contextFor(world, `conformance probe base (${providerWorld.name})`, baseLbs)));

    let started = 0;
    before(async () => {
      started = Date.now();
      world = await providerWorld.start();
    });
    after(async () => {
      if (!world) return;
      try {
        await removeAll(world, baseLbs);
      } finally {
        await world.env.close();
        console.log(`# provider conformance: ${providerWorld.name}: ${Date.now() - started} ms wall time, set-up and clean-up included`);
      }
    });

    for (const scenario of SCENARIOS) {
      it(scenario.name, { timeout: 120_000 }, async (t: TestContext) => {
        const refused = world.env.refusals.filter((r) => scenario.needs.some(same(r)));
        if (refused.length > 0) {
          await assertRefused(world, base, refused, () => probePort++);
          t.skip([...new Set(refused.map((r) => r.reason))].join(' / '));
          return;
        }
        const tracked: string[] = [];
        try {
          await scenario.run(contextFor(world, `conformance: ${scenario.name}`, tracked));
        } finally {
          await removeAll(world, tracked);
        }
      });
    }
  });
}

test('the skip list agrees with the OVN capability table', () => {
  const { rows: OvnCapabilities, unsupported } = ovnCapabilities;
  const known = new Map(OvnCapabilities.map((c) => [c.feature, c.values]));
  const needs: Need[] = SCENARIOS.flatMap((s: Scenario) => s.needs);
  const declared = [...needs, ...CAPABILITY_TABLES.flatMap((t) => t.unsupported())];
  const unknown = declared.filter((n) => !known.get(n.feature)?.includes(n.value)).map(key);
  assert.deepEqual([...new Set(unknown)], [], 'scenario needs and amphora refusals that are no (feature, value) of the table');

  const uncovered = unsupported().filter((u) => !needs.some(same(u))).map(key);
  assert.deepEqual(uncovered, [], 'refusals of the table no scenario needs');

  assert.equal(new Set(SCENARIOS.map((s) => s.name)).size, SCENARIOS.length, 'scenario names are unique');
  for (const s of SCENARIOS) {
    const refused = unsupported().filter((u) => s.needs.some(same(u)));
    if (refused.length > 0) assert.ok(refused.some(probeable), `${s.name}: skipped for ovn, but no refusal of it can be checked through the API`);
  }
});

/** Which flow a migration to the other provider runs, under each provider's driver (the moves themselves: test/provider-move.test.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { amphoraDriver } from './amphora/driver.js';
import { ovnDriver } from './ovn/driver.js';
import { NetworkCatalog } from '../network/catalog.js';
import { defaultConfig } from '../config.js';
test('a migration to the other provider runs the move, both ways, where this deployment can move', () => {
  const never = async (): Promise<never> => assert.fail('no step runs here');
  const toProvider = (provider: string) => ({ migration: { from: { provider: 'x', flavor_id: null, topology: null }, to: { provider, flavor_id: null, topology: null } } });
  const steps = (flow: { steps: ReadonlyArray<{ name: string }> }) => flow.steps.map((s) => s.name);
  const amphora = amphoraDriver(never, 'netns', undefined, { amphora: never, ovn: never });
  assert.deepEqual(steps(amphora.flow('loadbalancer.migrate', toProvider('ovn'))), ['relay-on', 'write-northbound', 'hand-over-vip', 'retire-amphorae', 'sync-and-settle']);
  assert.equal(steps(amphora.flow('loadbalancer.migrate', toProvider('amphora')))[0], 'create-amphora', 'a move within the provider is the failover-like one');
  const ovn = ovnDriver(never, new NetworkCatalog({ networks: [], qosPolicies: [], securityGroups: [] }), defaultConfig('/tmp/x'), undefined, { amphora: never, ovn: never });
  assert.deepEqual(steps(ovn.flow('loadbalancer.migrate', toProvider('amphora'))), [
    'create-amphora', 'boot-compute', 'wait-for-agent', 'plug-vip', 'relay-on', 'push-config', 'claim-vip', 'withdraw-northbound', 'relay-off', 'mark-active',
  ]);
  // Without the other provider's machinery (moves not possible here) the job fails saying why.
  assert.throws(() => amphoraDriver(never).flow('loadbalancer.migrate', toProvider('ovn')), /moves go between the amphora and ovn providers, both enabled, with ovn.integrationBridge set/);
});

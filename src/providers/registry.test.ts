import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ProviderRegistry } from './registry.js';
import { noopDriver } from './noop/driver.js';
import { isApiError } from '../domain/errors.js';

const fakeAmphora = () => ({ ...noopDriver(), name: 'amphora', description: 'The test amphora driver.' });

test("Octavia's aliases resolve to the same driver instance as the provider they name", () => {
  const r = new ProviderRegistry(['noop', 'amphora', 'octavia', 'amphorav2'], 'noop', { amphora: fakeAmphora });
  assert.equal(r.get('octavia'), r.get('amphora'));
  assert.equal(r.get('amphorav2'), r.get('amphora'));
  assert.equal(r.forLoadBalancer('octavia'), r.get('amphora'));
  assert.deepEqual(r.list().map((p) => p.name), ['noop', 'amphora', 'octavia', 'amphorav2']);
  assert.match(r.list()[2]!.description, /^Deprecated alias of the test amphora driver/);
});

test('a provider that is not enabled is a 400 in Octavia words; an unknown one in config fails at start', () => {
  const r = new ProviderRegistry(['noop'], 'noop');
  assert.throws(() => r.get('amphora'), (e: unknown) => isApiError(e) && e.status === 400 && e.message === "Provider 'amphora' is not enabled.");
  assert.throws(() => new ProviderRegistry(['noop', 'f5'], 'noop'), /provider 'f5' is enabled in config but Ostia has no such provider/);
});

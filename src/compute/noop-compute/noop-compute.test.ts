import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AmphoraSpec } from '../compute-driver.js';
import { NoopCompute } from './noop-compute.js';

const spec = (amphoraId: string) => ({ amphoraId, dir: '/nonexistent', keyPem: 'PRIVATE KEY' }) as AmphoraSpec;

test('boot starts nothing and returns the same id for the same amphora, another for another', async () => {
  const compute = new NoopCompute();
  const id = await compute.boot(spec('a'));
  assert.match(id, /^noop-[0-9a-f]{32}$/);
  assert.equal(await compute.boot(spec('a')), id);
  assert.notEqual(await compute.boot(spec('b')), id);
  await compute.started();
  // As Octavia's no-op compute: every instance is up, deleting succeeds, and there is nothing to list or reap.
  assert.equal(await compute.status(), 'running');
  await compute.delete();
  assert.deepEqual(await compute.list(), []);
});

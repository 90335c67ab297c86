import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { codec } from './codec.js';
import { listenerCodec } from './listener.js';

interface Sample {
  id: string;
  enabled: boolean;
  tags: string[];
  limits: Record<string, number> | null;
  weight: number;
}
const sample = codec<Sample>({ enabled: 'bool', tags: 'json', limits: 'json' });

test('a record survives being stored and read back, whatever its values', () => {
  fc.assert(
    fc.property(
      fc.record({ id: fc.uuid(), enabled: fc.boolean(), tags: fc.array(fc.string()), limits: fc.option(fc.dictionary(fc.string(), fc.integer(), { noNullPrototype: true })), weight: fc.integer() }, { noNullPrototype: true }),
      (record) => assert.deepEqual(sample.decode(sample.encode(record)), record),
    ),
  );
});

test('a row stores booleans as 0/1 and lists and maps as JSON text; null stays null', () => {
  assert.deepEqual(sample.encode({ id: 'x', enabled: true, tags: ['a'], limits: null, weight: 3 }), { id: 'x', enabled: 1, tags: '["a"]', limits: null, weight: 3 });
  assert.deepEqual(sample.decode({ id: 'x', enabled: 0, tags: '[]', limits: '{"n":1}', weight: 3 }), { id: 'x', enabled: false, tags: [], limits: { n: 1 }, weight: 3 });
});

test('a selection of columns or a join decodes only what is the record’s and keeps the rest', () => {
  assert.deepEqual(listenerCodec.decode({ sni_container_refs: '["r"]', hsts_preload: 1, pool_protocol: 'TCP' }), { sni_container_refs: ['r'], hsts_preload: true, pool_protocol: 'TCP' });
});

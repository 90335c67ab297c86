import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { applyDiff, datumEquals, decodeDatum, encodeDatum, NamedUuid, Uuid, type Atom, type ColumnType, type Datum } from './datum.js';

const uuidArb = fc.uuid().map((u) => new Uuid(u));
const atomArb: fc.Arbitrary<Atom> = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Object.is(d, -0)),
  fc.boolean(),
  uuidArb,
  fc.stringMatching(/^[a-z_][a-z0-9_]{0,10}$/).map((n) => new NamedUuid(n)),
);

test('encodings on the wire are RFC 7047 §5.1', () => {
  const u = '5c7a4f3e-1d2b-4c5a-9e8f-0a1b2c3d4e5f';
  assert.deepEqual(encodeDatum(new Uuid(u)), ['uuid', u]);
  assert.deepEqual(encodeDatum(new NamedUuid('lb0')), ['named-uuid', 'lb0']);
  assert.deepEqual(encodeDatum(['tcp', 'udp']), ['set', ['tcp', 'udp']]);
  assert.deepEqual(encodeDatum(new Map([['10.0.0.1:80', '10.0.1.1:80']])), ['map', [['10.0.0.1:80', '10.0.1.1:80']]]);
  assert.deepEqual(encodeDatum({ 'neutron:vip': '10.0.0.1' }), ['map', [['neutron:vip', '10.0.0.1']]]);
  assert.deepEqual(encodeDatum([]), ['set', []]);
  assert.equal(encodeDatum(7), 7);
  assert.throws(() => encodeDatum(Number.NaN));
  assert.throws(() => new Uuid('not-a-uuid'));
});

test('atoms, sets and maps survive encode → JSON → decode (property)', () => {
  const datumArb: fc.Arbitrary<Datum> = fc.oneof(
    atomArb,
    fc.array(atomArb, { maxLength: 5 }),
    fc.array(fc.tuple(fc.oneof(fc.string(), fc.integer()), atomArb), { maxLength: 5 }).map((pairs) => new Map<Atom, Atom>(pairs)),
  );
  fc.assert(
    fc.property(datumArb, (d) => {
      const back = decodeDatum(JSON.parse(JSON.stringify(encodeDatum(d))));
      assert.ok(datumEquals(back, d), `${JSON.stringify(encodeDatum(d))}`);
    }),
    { numRuns: 500 },
  );
});

test('with its column type, a one-element set sent as a bare atom is still a set', () => {
  const set: ColumnType = { key: 'string', min: 0, max: 'unlimited' };
  const scalar: ColumnType = { key: 'string', min: 1, max: 1 };
  assert.deepEqual(decodeDatum('ip_src', set), ['ip_src']);
  assert.deepEqual(decodeDatum(['set', []], set), []);
  assert.equal(decodeDatum('x', scalar), 'x');
  assert.equal(decodeDatum(['set', ['x']], scalar), 'x');
  assert.throws(() => decodeDatum(['set', ['x', 'y']], scalar));
});

test('update2 diffs: sets toggle elements, maps add/change/remove keys, scalars and optional values replace', () => {
  const set: ColumnType = { key: 'string', min: 0, max: 'unlimited' };
  const map: ColumnType = { key: 'string', value: 'string', min: 0, max: 'unlimited' };
  const opt: ColumnType = { key: 'string', min: 0, max: 1 };
  assert.ok(datumEquals(applyDiff(['a', 'b'], ['b', 'c'], set), ['a', 'c']));
  const m = applyDiff(
    new Map<Atom, Atom>([
      ['keep', '1'],
      ['drop', '2'],
      ['change', '3'],
    ]),
    new Map<Atom, Atom>([
      ['drop', '2'],
      ['change', '9'],
      ['new', '4'],
    ]),
    map,
  );
  assert.ok(datumEquals(m, new Map<Atom, Atom>([['keep', '1'], ['change', '9'], ['new', '4']])));
  // Seen from ovsdb-server 3.1: protocol udp → tcp arrives as modify {protocol: "tcp"}.
  assert.deepEqual(applyDiff(['udp'], ['tcp'], opt), ['tcp']);
  assert.deepEqual(applyDiff([], ['tcp'], opt), ['tcp']);
  assert.equal(applyDiff('old', 'new', { key: 'string', min: 1, max: 1 }), 'new');
});

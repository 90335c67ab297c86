import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { EventParser } from './event-stream-client.js';

const STREAM = ': keep-alive\n\nid: 1\nevent: status\ndata: {"a":1}\n\n:\n\nid: 2\r\nevent: deleted\r\ndata: {"b":[2]}\r\n\r\n';

test('events are read whole, comments and keep-alives dropped, CRLF as LF', () => {
  assert.deepEqual(new EventParser().push(STREAM), [
    { id: '1', event: 'status', data: { a: 1 } },
    { id: '2', event: 'deleted', data: { b: [2] } },
  ]);
});

test('however the bytes are cut into chunks, the same events come out', () => {
  const whole = new EventParser().push(STREAM.replace(/\r/g, ''));
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: STREAM.length }), { maxLength: 12 }), (cuts) => {
      const at = [0, ...cuts.sort((a, b) => a - b), STREAM.length];
      const p = new EventParser();
      const events = at.slice(1).flatMap((end, i) => p.push(STREAM.replace(/\r/g, '').slice(at[i], end)));
      assert.deepEqual(events, whole);
    }),
  );
});

test('an event without data is no event', () => {
  assert.deepEqual(new EventParser().push('event: ping\n\n'), []);
});

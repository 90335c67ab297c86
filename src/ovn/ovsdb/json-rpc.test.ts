/** Framing and remote parsing: pure, no server. The connection itself is tested in client.test.ts. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { JsonStreamSplitter, parseRemote } from './json-rpc.js';

function feed(chunks: Buffer[]): unknown[] {
  const s = new JsonStreamSplitter();
  return chunks.flatMap((c) => s.push(c));
}

test('merged objects in one chunk come out one by one', () => {
  const out = feed([Buffer.from('{"id":1,"result":[]}{"id":2,"result":{"a":[1,2]}}\n[3]')]);
  assert.deepEqual(out, [{ id: 1, result: [] }, { id: 2, result: { a: [1, 2] } }, [3]]);
});

test('an object split byte by byte comes out once, when complete', () => {
  const text = '{"method":"update2","params":["m",{"T":{"u":{"insert":{"name":"a}{\\"b"}}}}],"id":null}';
  const s = new JsonStreamSplitter();
  const bytes = Buffer.from(text);
  const out: unknown[] = [];
  for (let i = 0; i < bytes.length; i++) {
    const got = s.push(bytes.subarray(i, i + 1));
    if (i < bytes.length - 1) assert.equal(got.length, 0, `nothing before the last byte (at ${i})`);
    out.push(...got);
  }
  assert.deepEqual(out, [JSON.parse(text)]);
});

test('braces and escaped quotes inside strings do not end an object', () => {
  assert.deepEqual(feed([Buffer.from('{"a":"}\\\\"}'), Buffer.from('{"b":"\\"{["}')]), [{ a: '}\\' }, { b: '"{[' }]);
});

test('a multi-byte UTF-8 character split across chunks is decoded whole', () => {
  const bytes = Buffer.from('{"name":"lb-€-ü"}');
  const cut = bytes.indexOf(0xe2) + 1; // inside the euro sign
  assert.deepEqual(feed([bytes.subarray(0, cut), bytes.subarray(cut)]), [{ name: 'lb-€-ü' }]);
});

test('garbage between texts is refused', () => {
  assert.throws(() => feed([Buffer.from('{"a":1} x')]), SyntaxError);
});

test('any sequence of JSON texts, cut anywhere, comes back intact (property)', () => {
  const json = fc.jsonValue({ maxDepth: 3 }).map((v) => ({ v }));
  fc.assert(
    fc.property(fc.array(json, { minLength: 1, maxLength: 6 }), fc.array(fc.nat(), { maxLength: 8 }), (values, cuts) => {
      const bytes = Buffer.from(values.map((v) => JSON.stringify(v)).join(''));
      const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
      const chunks: Buffer[] = [];
      let prev = 0;
      for (const p of points) {
        chunks.push(bytes.subarray(prev, p));
        prev = p;
      }
      chunks.push(bytes.subarray(prev));
      // JSON.stringify of -0 is 0: compare with what the wire can carry.
      assert.deepEqual(feed(chunks), values.map((v) => JSON.parse(JSON.stringify(v))));
    }),
    { numRuns: 300 },
  );
});

test('remotes: tcp, ssl, IPv6, unix; anything else refused', () => {
  assert.deepEqual(parseRemote('tcp:127.0.0.1:6641'), { kind: 'tcp', host: '127.0.0.1', port: 6641 });
  assert.deepEqual(parseRemote('ssl:[fd00::1]:6641'), { kind: 'ssl', host: 'fd00::1', port: 6641 });
  assert.deepEqual(parseRemote('unix:/run/ovn/ovnnb_db.sock'), { kind: 'unix', path: '/run/ovn/ovnnb_db.sock' });
  for (const bad of ['tcp:host', 'ptcp:6641', 'tcp:h:0', 'tcp:h:70000', 'http://x', '']) {
    assert.throws(() => parseRemote(bad), TypeError, bad);
  }
});

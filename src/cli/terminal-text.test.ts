import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { printable } from './terminal-text.js';
import { formatTable } from './command.js';

/** What a terminal acts on, by code point, written out independently of the implementation. */
function isControl(c: number): boolean {
  return c <= 0x1f || (c >= 0x7f && c <= 0x9f) || c === 0x061c || c === 0x200e || c === 0x200f || (c >= 0x2028 && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}
const hasControl = (s: string) => [...s].some((ch) => isControl(ch.codePointAt(0)!));

const CONTROLS = [...Array(0x20).keys(), ...Array.from({ length: 0x21 }, (_, i) => 0x7f + i), 0x061c, 0x200e, 0x200f, 0x2028, 0x2029, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069].map((c) => String.fromCharCode(c));
/** Any text, weighted towards the characters that matter here. */
const hostile = fc.string({ unit: fc.oneof(fc.constantFrom(...CONTROLS), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })), maxLength: 60 });

test('printable leaves no control character, line separator or bidi control in any text', () => {
  assert.ok(CONTROLS.every((c) => isControl(c.charCodeAt(0))));
  fc.assert(fc.property(hostile, (s) => !hasControl(printable(s))), { numRuns: 2000 });
});

test('printable returns text without control characters unchanged', () => {
  fc.assert(fc.property(fc.string({ unit: 'binary' }).filter((s) => !hasControl(s)), (s) => printable(s) === s), { numRuns: 2000 });
});

test('printable spells each control character as JSON would, so what is shown is what is stored', () => {
  assert.equal(printable('web\u001b[2J\nprod\u202eevil\u0085\u007f\t'), 'web\\u001b[2J\\nprod\\u202eevil\\u0085\\u007f\\t');
  // Read back as a JSON string, the spelled text is the original (for text without quotes and backslashes).
  fc.assert(fc.property(hostile.filter((s) => !/["\\]/.test(s)), (s) => JSON.parse(`"${printable(s)}"`) === s), { numRuns: 2000 });
});

test('a table escapes its cells and aligns them as they are shown', () => {
  const out = formatTable([
    ['NAME', 'ID'],
    ['a\u001b[31mb\nc', '1'],
    ['plain', '2'],
  ]);
  const shown = 'a\\u001b[31mb\\nc';
  assert.equal(out, [`${'NAME'.padEnd(shown.length)}  ID`, `${shown}  1`, `${'plain'.padEnd(shown.length)}  2`, ''].join('\n'));
  assert.ok(!hasControl(out.replaceAll('\n', '')));
});

test('JSON spelled printable is the same JSON value, with no raw control character left', () => {
  fc.assert(
    fc.property(fc.jsonValue(), hostile, (value, text) => {
      const json = printable(JSON.stringify({ value, text, [text]: text }));
      return !hasControl(json) && JSON.stringify(JSON.parse(json)) === JSON.stringify({ value, text, [text]: text });
    }),
    { numRuns: 1000 },
  );
});

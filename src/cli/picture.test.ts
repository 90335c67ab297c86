import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { XMLValidator } from 'fast-xml-parser';
import { chartSvg, writePicture } from './picture.js';
import { svgTexts } from '../../test/support/svg.js';

test('a chart is well-formed SVG holding every figure as its label, and user text escaped', async () => {
  const svg = await chartSvg({
    title: 'plan <&> "x"',
    categories: ['web<1>', 'db & cache'],
    series: [
      { name: 'used', values: [12.5, 3], stack: 'a' },
      { name: 'free', values: [7, 0.25], stack: 'a' },
    ],
    unit: 'vCPU',
    format: (v) => v.toFixed(2),
  });
  assert.equal(XMLValidator.validate(svg), true);
  const texts = svgTexts(svg);
  for (const t of ['plan <&> "x"', 'web<1>', 'db & cache', '12.50', '3.00', '7.00', '0.25']) assert.ok(texts.includes(t), `${t} in ${JSON.stringify(texts)}`);
});

test('a horizontal chart with a line series draws both', async () => {
  const svg = await chartSvg({ title: 't', categories: ['a', 'b', 'c'], horizontal: true, series: [{ name: 'bars', values: [1, 2, 3] }, { name: 'limit', values: [4, 4, 4], kind: 'line' }] });
  assert.equal(XMLValidator.validate(svg), true);
  assert.ok(svgTexts(svg).includes('bars') && svgTexts(svg).includes('limit'));
});

test('a picture is written whole, and an unwritable path says what to do', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ostia-picture-'));
  try {
    writePicture(join(dir, 'p.svg'), '<svg/>');
    assert.equal(readFileSync(join(dir, 'p.svg'), 'utf8'), '<svg/>');
    assert.throws(() => writePicture(join(dir, 'missing', 'p.svg'), '<svg/>'), /cannot write the picture .*missing.*\n?/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { compare, lastBaselines, NOISE_PERCENT, storeBaseline, type Baseline, type Figure } from './record.js';

const rps = (value: number): Figure => ({ name: 'HTTP requests/s', unit: 'req/s', value, better: 'higher' });
const p99 = (value: number): Figure => ({ name: 'HTTP latency p99', unit: 'ms', value, better: 'lower' });
const failed = (value: number): Figure => ({ name: 'failover failed requests', unit: 'requests', value, better: 'lower' });

function baseline(takenAt: string, figures: Figure[], commit = 'a'.repeat(40)): Baseline {
  return { format: 1, taken_at: takenAt, service: { version: '0.1.0', commit, url: 'http://127.0.0.1:1' }, configuration: {}, figures, skipped: [] };
}

describe('baseline comparison', () => {
  it('has nothing to compare on the first baseline', () => {
    const c = compare(null, baseline('2026-01-01T00:00:00.000Z', [rps(1000)]));
    assert.equal(c.previous, null);
    assert.deepEqual(c.figures.map((f) => [f.change, f.before, f.now]), [['new', null, 1000]]);
    assert.equal(c.worse, 0);
    assert.match(c.verdict, /first baseline/);
  });

  it('calls a rise of what should rise, and a fall of what should fall, better', () => {
    const c = compare(baseline('2026-01-01T00:00:00.000Z', [rps(1000), p99(10)]), baseline('2026-01-02T00:00:00.000Z', [rps(1500), p99(5)]));
    assert.deepEqual(c.figures.map((f) => [f.name, f.change, f.change_percent]), [['HTTP requests/s', 'better', 50], ['HTTP latency p99', 'better', -50]]);
    assert.equal(c.better, 2);
    assert.match(c.verdict, /^Nothing worse .* 2 figure\(s\) better/);
    assert.match(c.figures[0]!.sentence, /up 50% \(1000 → 1500 req\/s\); higher is better/);
  });

  it('calls the opposite worse, and a change within the noise unchanged', () => {
    const c = compare(baseline('2026-01-01T00:00:00.000Z', [rps(1000), p99(10), failed(0)]), baseline('2026-01-02T00:00:00.000Z', [rps(500), p99(10 * (1 + (NOISE_PERCENT - 1) / 100)), failed(3)], 'b'.repeat(40)));
    assert.deepEqual(c.figures.map((f) => f.change), ['worse', 'unchanged', 'worse']);
    assert.equal(c.figures[2]!.change_percent, null, 'no percentage from 0');
    assert.match(c.figures[2]!.sentence, /from 0 to 3 requests/);
    assert.equal(c.worse, 2);
    assert.match(c.verdict, /^2 figure\(s\) worse .*version 0\.1\.0 \(aaaaaaaaaaaa\) then 0\.1\.0 \(bbbbbbbbbbbb\)/);
  });

  it('names a figure missing on either side, and counts it neither better nor worse', () => {
    const c = compare(baseline('2026-01-01T00:00:00.000Z', [rps(1000), failed(0)]), baseline('2026-01-02T00:00:00.000Z', [rps(1000), p99(4)]));
    assert.deepEqual(c.figures.map((f) => [f.name, f.change]), [['HTTP requests/s', 'unchanged'], ['HTTP latency p99', 'new'], ['failover failed requests', 'gone']]);
    assert.deepEqual([c.worse, c.better], [0, 0]);
    assert.match(c.figures[2]!.sentence, /measured before but not now/);
  });

  it('stores baselines in files that sort by time, and reads the last ones back', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ostia-baseline-'));
    try {
      assert.deepEqual(lastBaselines(join(dir, 'none'), 2), []);
      storeBaseline(dir, baseline('2026-01-02T00:00:00.000Z', [rps(2)]));
      storeBaseline(dir, baseline('2026-01-01T00:00:00.000Z', [rps(1)]));
      writeFileSync(join(dir, 'notes.txt'), 'not a baseline');
      const last = lastBaselines(dir, 2);
      assert.deepEqual(last.map((l) => l.baseline.figures[0]!.value), [1, 2]);
      assert.match(last[1]!.file, /2026-01-02T00-00-00\.000Z\.json$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * `ostia baseline` as an operator runs it: a child process against a real `ostia up` with the amphora provider
 * and the local compute driver (real HAProxy amphorae), twice, for a very short load. It reads no database,
 * only the service's API (and /proc), so the SQLite pass covers it: the PostgreSQL pass skips it.
 * Asserted: the stored file's shape and that it holds nothing secret, the comparison of the second run with
 * the first, --json, the pictures (they parse, and hold the figures the table printed), --compare-only, the
 * refusals, and that the service is left with none of what the baseline made. Never a timing or a throughput
 * beyond "more than 0".
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { XMLValidator } from 'fast-xml-parser';
import { WORSE_EXIT } from '../src/cli/baseline.js';
import type { Baseline, Comparison } from '../src/cli/baseline/record.js';
import { writeAmphoraConfig } from './support/amphora-config.js';
import { madeOnce } from './support/made-once.js';
import { repoRoot, runOstia, runOstiaWithin, startOstia, type OstiaProcess } from './support/ostia-process.js';
import { unmet } from './support/requirements.js';
import { svgTexts } from './support/svg.js';

const skip = process.env.OSTIA_TEST_DATABASE_URL ? 'reads no database: the SQLite pass covers it' : unmet('haproxy') || unmet('wrk');
/** Two load balancer builds, six 1 s wrk runs, a failover and a delete, on a loaded 2-core machine. */
const RUN_TIMEOUT_MS = 120_000;
const LISTENERS = ['HTTP', 'HTTPS (terminated)', 'TCP'];

interface Outcome {
  baseline: Baseline;
  stored: string;
  comparison: Comparison;
  picture: string;
}

describe('ostia baseline', { skip, timeout: 300_000 }, () => {
  let work: string;
  let configFile: string;
  let ostia: OstiaProcess;
  const store = () => join(work, 'baselines');
  const baseline = (...args: string[]) => runOstiaWithin(RUN_TIMEOUT_MS, 'baseline', '--data-dir', ostia.dataDir, '--config', configFile, '--store', store(), '--duration', '1', '--connections', '4', ...args);

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'ostia-baseline-test-'));
    configFile = await writeAmphoraConfig(work);
    ostia = await startOstia({ extraArgs: ['--config', configFile] });
  });
  after(async () => {
    await ostia?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  const first = madeOnce(async (): Promise<Outcome> => {
    const picture = join(work, 'first.svg');
    const r = await baseline('--json', '--picture', picture);
    assert.equal(r.code, 0, r.stderr);
    return { ...(JSON.parse(r.stdout) as Omit<Outcome, 'picture'>), picture };
  });
  const second = madeOnce(async () => {
    await first();
    const picture = join(work, 'second.svg');
    const r = await baseline('--picture', picture);
    assert.ok(r.code === 0 || r.code === WORSE_EXIT, `exit ${r.code}: ${r.stderr}`);
    return { ...r, picture };
  });

  it('stores the first baseline with the date, the version and the configuration, nothing secret, and nothing to compare', async () => {
    const { baseline: b, stored, comparison } = await first();
    assert.equal(b.format, 1);
    assert.ok(!Number.isNaN(Date.parse(b.taken_at)));
    assert.equal(b.service.version, (JSON.parse(readFileSync(join(repoRoot(), 'package.json'), 'utf8')) as { version: string }).version);
    assert.equal(b.service.url, ostia.url);
    assert.equal(b.configuration.compute_driver, 'local');
    assert.equal(b.configuration.network_driver, 'catalog');
    assert.deepEqual(readdirSync(store()), [stored.slice(store().length + 1)]);
    const text = readFileSync(stored, 'utf8');
    assert.deepEqual(JSON.parse(text), b, '--json prints what is stored');
    for (const secret of [ostia.cloud('ostia').password, readFileSync(join(ostia.dataDir, 'token-secret'), 'utf8').trim()]) assert.ok(!text.includes(secret), 'no secret stored');
    assert.deepEqual(b.measurements!.parts.map((p) => [p.label, p.topology, p.tls]), [['HTTP', 'SINGLE', false], ['HTTPS (terminated)', 'SINGLE', true], ['TCP', 'SINGLE', false]]);
    for (const p of b.measurements!.parts) {
      assert.ok(p.requests_per_s > 0 && p.new_connections_per_s > 0 && p.latency_p99_ms >= p.latency_p50_ms, JSON.stringify(p));
      assert.ok(p.amphora_cpu_us_per_request !== null && p.amphora_cpu_us_per_request > 0, `${p.label}: amphora CPU measured: ${p.amphora_cpu_note}`);
    }
    assert.deepEqual(b.measurements!.failovers.map((f) => f.topology), ['SINGLE']);
    assert.ok(b.measurements!.failovers[0]!.requests > 0 && b.measurements!.failovers[0]!.to_active_ms > 0);
    assert.deepEqual(b.skipped.map((s) => s.part), ['HTTP ACTIVE_STANDBY']);
    assert.match(b.skipped[0]!.reason, /compute\.driver local/);
    assert.equal(comparison.previous, null);
    assert.deepEqual(new Set(comparison.figures.map((f) => f.change)), new Set(['new']));
    assert.deepEqual(comparison.figures.map((f) => f.name), b.figures.map((f) => f.name));
    assert.ok(LISTENERS.every((l) => b.figures.some((f) => f.name === `${l}: requests/s`)));
    assert.match(comparison.verdict, /first baseline/);
  });

  it('draws the first baseline: the picture parses and holds every figure', async () => {
    const { baseline: b, picture } = await first();
    const svg = readFileSync(picture, 'utf8');
    assert.equal(XMLValidator.validate(svg), true);
    const texts = svgTexts(svg);
    for (const f of b.figures) {
      assert.ok(texts.includes(String(f.value)), `${f.name} = ${f.value} on the picture`);
      assert.ok(texts.some((t) => t.includes(f.name)), `${f.name} named on the picture`);
    }
  });

  it('compares the second baseline with the first: a row per figure, before and now as printed, exit 3 exactly when one is worse', async () => {
    const { baseline: before } = await first();
    const { code, stdout, picture } = await second();
    assert.match(stdout, new RegExp(`^Compared with the baseline of ${before.taken_at.replace(/\./g, '\\.')}:$`, 'm'));
    assert.match(stdout, /^LISTENER +TOPOLOGY +REQ\/S/m);
    assert.match(stdout, /^FAILOVER +INTERRUPTION MS/m);
    assert.match(stdout, /^Skipped HTTP ACTIVE_STANDBY: compute\.driver local/m);
    const rows = new Map(stdout.split('\n').flatMap((l) => {
      const m = /^(.+?: [^ ]+(?: [^ ]+)*?) {2,}(\S+) +(\S+) +(\S+) +(\S+) +(better|worse|unchanged|new|gone)$/.exec(l);
      return m ? [[m[1]!, { unit: m[2]!, before: m[3]!, now: m[4]!, change: m[6]! }] as const] : [];
    }));
    assert.equal(rows.size, before.figures.length, stdout);
    for (const f of before.figures) assert.equal(rows.get(f.name)?.before, String(f.value), f.name);
    const worse = [...rows.values()].filter((r) => r.change === 'worse').length;
    assert.equal(code, worse ? WORSE_EXIT : 0);
    assert.match(stdout, worse ? /^Verdict: \d+ figure\(s\) worse than the baseline/m : /^Verdict: Nothing worse than the baseline/m);
    const texts = svgTexts(readFileSync(picture, 'utf8'));
    for (const [name, r] of rows) assert.ok(texts.includes(r.before) && texts.includes(r.now), `${name}: ${r.before} and ${r.now} on the picture`);
    assert.equal(readdirSync(store()).length, 2);
  });

  it('--compare-only shows the last two stored baselines without load, in --json too', async () => {
    const { stdout: text, code } = await second();
    const r = await runOstia('baseline', '--data-dir', ostia.dataDir, '--config', configFile, '--store', store(), '--compare-only', '--json');
    assert.equal(r.code, code, r.stderr);
    const shown = JSON.parse(r.stdout) as Outcome;
    assert.deepEqual(Object.keys(shown).sort(), ['baseline', 'comparison', 'stored']);
    assert.ok(text.includes(`Stored: ${shown.stored}`));
    assert.equal(shown.comparison.previous, (await first()).baseline.taken_at);
    assert.equal(readdirSync(store()).length, 2, 'nothing stored');
  });

  it('leaves none of the load balancers and certificates it made', async () => {
    await second();
    const token = await ostia.token('ostia');
    const lbs = (await (await fetch(`${ostia.url}/v2/lbaas/loadbalancers`, { headers: { 'x-auth-token': token } })).json()) as { loadbalancers: unknown[] };
    assert.deepEqual(lbs.loadbalancers, []);
    for (const kind of ['secrets', 'containers']) {
      const listed = (await (await fetch(`${ostia.url}/key-manager/v1/${kind}`, { headers: { 'x-auth-token': token } })).json()) as Record<string, unknown[]>;
      assert.deepEqual(listed[kind], [], kind);
    }
  });

  it('refuses what it cannot run, saying why: no data plane, no stored baseline, a bad duration', async () => {
    const noop = join(work, 'noop.json');
    writeFileSync(noop, JSON.stringify({ ...JSON.parse(readFileSync(configFile, 'utf8')), compute: { driver: 'noop' } }));
    const empty = join(work, 'empty');
    const [noData, none, usage] = await Promise.all([
      runOstia('baseline', '--data-dir', ostia.dataDir, '--config', noop),
      runOstia('baseline', '--data-dir', ostia.dataDir, '--config', configFile, '--store', empty, '--compare-only'),
      runOstia('baseline', '--data-dir', ostia.dataDir, '--duration', '0'),
    ]);
    assert.equal(noData.code, 1);
    assert.match(noData.stderr, /compute\.driver is noop: no amphora runs, so there is no data plane to load\. Run the service with compute\.driver local/);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /no baseline is stored in .*empty\. Run 'ostia baseline' first/);
    assert.ok(!existsSync(empty));
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--duration must be a whole number from 1 to 600/);
  });
});

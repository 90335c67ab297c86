/**
 * keepalived.conf from an ACTIVE_STANDBY config: a pinned golden file that keepalived's own
 * `--config-test` accepts, and the values that must never reach the file.
 * OSTIA_UPDATE_GOLDEN=1 rewrites the golden file from the current renderer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../../../test/support/ostia-process.js';
import { unmet } from '../../../test/support/requirements.js';
import type { AmphoraConfig, VrrpConfig } from '../../domain/amphora-config.js';
import { violations } from '../typed-check.js';
import { RenderError } from '../haproxy/encoders.js';
import { activeStandby, loadBalancer } from '../../../test/support/render-fixtures.js';
import { KEEPALIVED_BINARY } from './process.js';
import { renderKeepalivedConfig } from './render.js';
import { AmphoraConfig as AmphoraConfigSchema } from '../../domain/amphora-config.js';

const golden = join(repoRoot(), 'src/amphora-agent/keepalived/golden/active-standby.conf');
const paths = { trackFile: '/var/lib/ostia/amphorae/0a0a0a0a-0000-4000-8000-000000000007/haproxy-track' };
const withVrrp = (overrides: Partial<VrrpConfig>, config: AmphoraConfig = activeStandby()): AmphoraConfig => ({ ...config, vrrp: { ...config.vrrp!, ...overrides } });

test('golden: active-standby', () => {
  const text = renderKeepalivedConfig(activeStandby(), paths);
  if (process.env.OSTIA_UPDATE_GOLDEN === '1') writeFileSync(golden, text!);
  assert.equal(text, readFileSync(golden, 'utf8'));
});

// It checks that the VIP interface exists: in a network namespace of its own that has one.
test('keepalived --config-test accepts the rendered file', { skip: unmet('namespaces') || unmet('keepalived') }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'ostia-keepalived-'));
  try {
    const file = join(dir, 'keepalived.conf');
    writeFileSync(file, renderKeepalivedConfig(activeStandby(), { trackFile: join(dir, 'track') })!);
    const check = `ip link add eth1 type veth peer name eth1-peer && exec ${KEEPALIVED_BINARY} --config-test -f ${file}`;
    execFileSync('unshare', ['--net', 'sh', '-c', check], { stdio: 'pipe' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a SINGLE amphora (no vrrp) gets no keepalived.conf, and existing configs stay valid', () => {
  assert.equal(renderKeepalivedConfig(loadBalancer(1), paths), null);
  assert.deepEqual(violations(AmphoraConfigSchema, loadBalancer(1)), []);
  assert.deepEqual(violations(AmphoraConfigSchema, activeStandby()), []);
});

test('advert intervals are written in keepalived seconds with centisecond precision', () => {
  for (const [ms, written] of [[10, '0.01'], [100, '0.10'], [1000, '1.00'], [1230, '1.23'], [40_950, '40.95']] as const)
    assert.match(renderKeepalivedConfig(withVrrp({ advertIntervalMs: ms }), paths)!, new RegExp(`\\n {4}advert_int ${written.replace('.', '\\.')}\\n`));
});

test('the schema refuses what could inject into keepalived.conf', () => {
  for (const vrrp of [{ interface: 'eth1\n}' }, { interface: 'eth1 ' }, { interface: 'a'.repeat(16) }, { address: '10.0.0.1 }' }, { peers: ['10.0.0.2\nvrrp_script x'] }, { advertIntervalMs: 105 }, { virtualRouterId: 256 }, { role: 'STANDALONE' }])
    assert.notDeepEqual(violations(AmphoraConfigSchema, withVrrp(vrrp as Partial<VrrpConfig>)), [], JSON.stringify(vrrp));
});

test('the renderer refuses, again, what the schema should have refused, and pairs that cannot work', () => {
  const refused = (overrides: Partial<VrrpConfig>, field: RegExp) =>
    assert.throws(() => renderKeepalivedConfig(withVrrp(overrides), paths), (e: unknown) => e instanceof RenderError && field.test(e.field), JSON.stringify(overrides));
  refused({ interface: 'eth1\n}' }, /vrrp interface/);
  refused({ address: '10.0.0.1 }' }, /vrrp address/);
  refused({ peers: ['2001:db8::5'] }, /vrrp peer/);
  refused({ peers: ['203.0.113.4'] }, /vrrp peer/);
  refused({ vipPrefixLength: 33 }, /prefix length/);
  refused({ advertIntervalMs: 105 }, /advert interval/);
});

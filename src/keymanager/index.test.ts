import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, deepMerge, validateConfig, ConfigError } from '../config.js';
import { maskSecrets } from '../cli/config.js';
import { keyManagerKeyFile, withKeyManagerKey } from '../cli/settings.js';
import { openDatabase } from '../db/database.js';
import { createKeyManager } from './index.js';
import { ExternalKeyManager } from './external.js';
import { TEST_KEY } from '../../test/support/keymanager-harness.js';

const configWith = (keyManager: unknown) => validateConfig(deepMerge(defaultConfig('/tmp/x'), { keyManager }));

test('keyManager config: keys must be 32 bytes of base64; external needs a URL and credentials', () => {
  assert.equal(configWith({ encryptionKey: TEST_KEY }).keyManager.encryptionKey, TEST_KEY);
  assert.throws(() => configWith({ encryptionKey: 'c2hvcnQ=' }), (e: Error) => e instanceof ConfigError && /keyManager.encryptionKey must be the base64 of 32 random bytes/.test(e.message));
  assert.throws(() => configWith({ previousEncryptionKeys: ['x'] }), /keyManager.previousEncryptionKeys\[0\] must be/);
  assert.throws(() => configWith({ mode: 'external' }), /keyManager.external.url is empty/);
  assert.throws(() => configWith({ mode: 'external', external: { url: 'https://barbican:9311' } }), /no service credentials/);
  const external = configWith({ mode: 'external', external: { url: 'https://barbican:9311', authUrl: 'https://keystone/v3', username: 'octavia', password: 'pw' } });
  assert.throws(() => configWith({ mode: 'vault' }), /\/keyManager\/mode/);
  assert.ok(createKeyManager(external, { db: null as never, publicUrl: () => '' }).keyManager instanceof ExternalKeyManager);
  assert.equal(createKeyManager(external, { db: null as never, publicUrl: () => '' }).api, null);
});

test('`ostia config` masks the encryption keys', () => {
  const masked = maskSecrets(configWith({ encryptionKey: TEST_KEY, previousEncryptionKeys: [TEST_KEY], external: { password: 'pw' } }));
  assert.equal(masked.keyManager.encryptionKey, '***');
  assert.deepEqual(masked.keyManager.previousEncryptionKeys, ['***']);
  assert.equal(masked.keyManager.external.password, '***');
  assert.ok(!JSON.stringify(masked).includes(TEST_KEY));
});

test('an empty key is generated once into DATA_DIR/key-manager-key (0600) and reused', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ostia-km-key-'));
  try {
    const config = validateConfig(defaultConfig(dir));
    const first = withKeyManagerKey(config);
    assert.equal(Buffer.from(first.keyManager.encryptionKey, 'base64').length, 32);
    assert.equal(statSync(keyManagerKeyFile(config)).mode & 0o777, 0o600);
    assert.equal(withKeyManagerKey(config).keyManager.encryptionKey, first.keyManager.encryptionKey);
    assert.equal(readFileSync(keyManagerKeyFile(config), 'utf8').trim(), first.keyManager.encryptionKey);
    const db = await openDatabase('sqlite::memory:');
    assert.ok(createKeyManager(first, { db, publicUrl: () => 'http://x' }).api);
    await db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

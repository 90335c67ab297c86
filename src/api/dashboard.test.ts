import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { defaultConfig, type Config } from '../config.js';
import { DASHBOARD_PREFIX } from '../domain/dashboard.js';
import { dashboardConfig, dashboardRoutes } from './dashboard.js';
import { sendError, toApiError } from './errors.js';

function builtDashboard(): string {
  const root = mkdtempSync(join(tmpdir(), 'ostia-dashboard-'));
  mkdirSync(join(root, 'assets'));
  writeFileSync(join(root, 'index.html'), '<!doctype html><title>Ostia</title><script type="module" src="/dashboard/assets/main-AAAA.js"></script>');
  writeFileSync(join(root, 'assets', 'main-AAAA.js'), 'console.log(1)');
  return `${root}/`;
}

async function appFor(config: Config, root: string) {
  const app = Fastify();
  app.setErrorHandler((err, _req, reply) => sendError(reply, toApiError(err as Error), ''));
  await app.register(dashboardRoutes(config, root), { prefix: DASHBOARD_PREFIX });
  return app;
}

test('the page is revalidated and locked to its own origin; assets, named by content, are kept for good', async (t) => {
  const root = builtDashboard();
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const app = await appFor(defaultConfig('/tmp/x'), root);
  const page = await app.inject({ url: '/dashboard/' });
  assert.equal(page.statusCode, 200);
  assert.match(String(page.headers['content-type']), /^text\/html/);
  assert.equal(page.headers['cache-control'], 'no-cache');
  assert.match(String(page.headers['content-security-policy']), /default-src 'self'/);
  assert.match(page.body, /main-AAAA\.js/);
  const asset = await app.inject({ url: '/dashboard/assets/main-AAAA.js' });
  assert.equal(asset.statusCode, 200);
  assert.equal(asset.headers['cache-control'], 'public, max-age=31536000, immutable');
  // A rebuild while the API runs: the next page names the new asset.
  writeFileSync(join(root, 'index.html'), '<script src="/dashboard/assets/main-BBBB.js"></script>');
  assert.match((await app.inject({ url: '/dashboard/' })).body, /main-BBBB\.js/);
});

test('an unbuilt dashboard says how to build it', async (t) => {
  const root = `${mkdtempSync(join(tmpdir(), 'ostia-dashboard-'))}/`;
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const res = await (await appFor(defaultConfig('/tmp/x'), root)).inject({ url: '/dashboard/' });
  assert.equal(res.statusCode, 503);
  assert.match(res.json().faultstring, /The dashboard is not built .* run npm run build, then restart/);
});

test('the page logs in where the API validates tokens: the embedded Keystone, or the relay to an external one', async () => {
  const embedded = defaultConfig('/tmp/x');
  assert.deepEqual(dashboardConfig(embedded), { identity: '/identity/v3', keyManager: '/key-manager/v1', policy: embedded.api.policy, identityMode: 'embedded' });
  const external: Config = {
    ...embedded,
    identity: { ...embedded.identity, mode: 'external', external: { ...embedded.identity.external, authUrl: 'http://keystone.example:5000/v3' } },
    keyManager: { ...embedded.keyManager, mode: 'external', external: { ...embedded.keyManager.external, url: 'http://barbican.example:9311' } },
  };
  const c = dashboardConfig(external);
  assert.equal(c.identity, '/dashboard/identity/v3');
  assert.equal(c.keyManager, '/dashboard/key-manager/v1');
});

test('the relay to an external Barbican passes only the secret and container paths the page uses', async (t) => {
  const root = builtDashboard();
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const base = defaultConfig('/tmp/x');
  // Nothing listens on port 9 of loopback: a relayed call fails with a 502 naming Barbican and what to check.
  const config: Config = { ...base, keyManager: { ...base.keyManager, mode: 'external', external: { ...base.keyManager.external, url: 'http://127.0.0.1:9' } } };
  const app = await appFor(config, root);
  const outside = await app.inject({ url: '/dashboard/key-manager/v1/orders' });
  assert.equal(outside.statusCode, 404);
  const unreachable = await app.inject({ url: '/dashboard/key-manager/v1/secrets?limit=10' });
  assert.equal(unreachable.statusCode, 502);
  assert.match(unreachable.json().faultstring, /^Barbican at http:\/\/127\.0\.0\.1:9\/v1\/secrets did not answer/);
});

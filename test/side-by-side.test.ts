/**
 * Two `ostia up` on one machine, each with its own data directory and --port 0, both with the
 * amphora provider at its default addresses: each takes its own block of loopback addresses
 * (VIPs, management addresses, heartbeat receiver), so load balancers with the same listener port
 * on both carry traffic, and `ostia config` shows what each data directory took.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { killAll, processesUnder, repoRoot, startOstia, type OstiaProcess } from './support/ostia-process.js';
import { unmet } from './support/requirements.js';
import { collectBodies, eventually, randomPort, startBackend, type Backend } from './support/amphora-fixtures.js';
import { blockOf } from '../src/cli/address-block.js';

const run = promisify(execFile);

async function effectiveConfig(dataDir: string, configFile: string): Promise<{ amphora: { healthListen: string; managementNetwork: { cidr: string } } }> {
  const { stdout } = await run(process.execPath, [join(repoRoot(), 'bin', 'ostia.js'), 'config', '--data-dir', dataDir, '--config', configFile, '--json']);
  return JSON.parse(stdout);
}

test('two ostia up with their own data directories run side by side, each in its own addresses', { skip: unmet('haproxy'), timeout: 300_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ostia-side-'));
  const configFile = join(dir, 'ostia.json');
  // The amphora provider, and no address or port of its own: the data directory picks them.
  writeFileSync(configFile, JSON.stringify({ api: { enabledProviders: ['noop', 'amphora'], defaultProvider: 'amphora' }, compute: { driver: 'local' }, network: { driver: 'catalog' } }));
  const instances: OstiaProcess[] = [];
  const backends: Backend[] = [];
  t.after(async () => {
    for (const b of backends) await b.close();
    for (const o of instances) {
      killAll(processesUnder(join(o.dataDir, 'amphorae')));
      await o.stop();
    }
    rmSync(dir, { recursive: true, force: true });
  });

  // One after the other: the second sees the first's heartbeat receiver bound in its block.
  for (const name of ['one', 'two']) instances.push(await startOstia({ dataDir: join(dir, name), extraArgs: ['--config', configFile] }));
  const [one, two] = instances as [OstiaProcess, OstiaProcess];
  const configs = await Promise.all([effectiveConfig(one.dataDir, configFile), effectiveConfig(two.dataDir, configFile)]);
  const blocks = configs.map((c) => blockOf(c.amphora.healthListen.split(':')[0]!));
  assert.ok(blocks.every((b) => b !== null), `heartbeats inside a block: ${configs.map((c) => c.amphora.healthListen).join(', ')}`);
  assert.notEqual(blocks[0], blocks[1], 'each data directory has its own block');
  assert.notEqual(configs[0]!.amphora.managementNetwork.cidr, configs[1]!.amphora.managementNetwork.cidr);

  // The same listener port on both: their VIPs differ, so both HAProxies bind it.
  const port = randomPort();
  const results = await Promise.all(
    instances.map(async (ostia, i) => {
      const backend = await startBackend(`backend-${i}`, `127.32.${100 + i}.${10 + Math.floor(Math.random() * 200)}`);
      backends.push(backend);
      const headers = { 'x-auth-token': await ostia.token('ostia-demo'), 'content-type': 'application/json' };
      const body = {
        loadbalancer: {
          name: 'side',
          vip_subnet_id: await ostia.subnetId('public-subnet'),
          listeners: [{ protocol: 'HTTP', protocol_port: port, default_pool: { name: 'web', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members: [{ address: backend.address, protocol_port: backend.port }] } }],
        },
      };
      const created = await fetch(`${ostia.url}/v2/lbaas/loadbalancers`, { method: 'POST', headers, body: JSON.stringify(body) });
      assert.equal(created.status, 201, await created.clone().text());
      const { id, vip_address: vip } = ((await created.json()) as { loadbalancer: { id: string; vip_address: string } }).loadbalancer;
      const status = await eventually(
        async () => {
          const lb = ((await (await fetch(`${ostia.url}/v2/lbaas/loadbalancers/${id}`, { headers })).json()) as { loadbalancer: { provisioning_status: string } }).loadbalancer;
          return lb.provisioning_status.startsWith('PENDING_') ? undefined : lb.provisioning_status;
        },
        `load balancer ${id} of ${ostia.dataDir} to settle`,
        180_000,
        250,
      );
      return { status, vip, bodies: status === 'ACTIVE' ? await collectBodies(vip, port, 2) : [] };
    }),
  );
  assert.deepEqual(results.map((r) => r.status), ['ACTIVE', 'ACTIVE']);
  assert.deepEqual(results.map((r) => blockOf(r.vip)), blocks, 'each VIP comes from its instance block');
  assert.deepEqual(results.map((r) => r.bodies), [['backend-0', 'backend-0'], ['backend-1', 'backend-1']]);
});

/** `ostia agent` as the local compute driver runs it: a child process of bin/ostia.js. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { repoRoot } from '../../test/support/ostia-process.js';
import { AgentClient } from '../amphora-client/client.js';
import { ids, listener, loadBalancer, member, pool } from '../../test/support/render-fixtures.js';
import { collectBodies, loopbackAddress, prepareAmphora, randomPort, startBackend, tempDir } from '../../test/support/amphora-fixtures.js';

const BIN = join(repoRoot(), 'bin', 'ostia.js');

function ostiaAgent(...args: string[]) {
  // Only PATH, as the local compute driver gives it.
  return spawn(process.execPath, [BIN, 'agent', ...args], { env: { PATH: process.env.PATH }, stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
}

async function outcome(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = ostiaAgent(...args);
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => (out.stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (out.stderr += chunk.toString()));
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, ...out };
}

test('agent --help, a missing --dir and a directory without agent.json', async (t) => {
  const empty = tempDir('agent-cli');
  t.after(() => empty.remove());
  const [help, noDir, noConfig] = await Promise.all([outcome('--help'), outcome(), outcome('--dir', empty.path)]);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^Usage: ostia agent \[options\]/);
  assert.match(help.stdout, /--dir DIR/);
  assert.equal(noDir.code, 2);
  assert.equal(noDir.stderr, "ostia agent: --dir is required. See 'ostia agent --help'.\n");
  assert.equal(noConfig.code, 1);
  assert.match(noConfig.stderr, new RegExp(`^ostia agent: cannot read ${join(empty.path, 'agent.json')}: .*\\. The compute driver writes agent\\.json`));
});

test('agent --dir serves pushes over mutual TLS and stops HAProxy on SIGTERM', async (t) => {
  const root = tempDir('agent-cli');
  const backend = await startBackend('a');
  t.after(async () => {
    await backend.close();
    root.remove();
  });
  const amphoraId = ids.amphora(1);
  const { ca, boot } = await prepareAmphora(root.path, amphoraId, { key: 'k', targets: ['127.0.0.1:9'], intervalMs: 1000 });
  const child = ostiaAgent('--dir', join(root.path, amphoraId), '--json');
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
  const announced = JSON.parse(line) as { url: string; pid: number };
  assert.equal(announced.url, `https://${boot.managementAddress}:${boot.agentPort}`);
  assert.equal(announced.pid, child.pid);

  const { certPem, keyPem } = await ca.controllerClientCert();
  const client = new AgentClient({ url: announced.url, amphoraId, serverCaPem: ca.serverCaPem, clientCertPem: certPem, clientKeyPem: keyPem });
  t.after(() => client.close());
  const [vip, port] = [loopbackAddress(), randomPort()];
  const config = loadBalancer(1, {
    vip: { address: vip, additional: [] },
    listeners: [listener(1, { port, defaultPoolId: ids.pool(1) })],
    pools: [pool(1, { members: [member(1, { address: backend.address, port: backend.port })] })],
  });
  assert.deepEqual(await client.putConfig(config), { version: 1, applied: 'reload' });
  assert.deepEqual(await collectBodies(vip, port, 2), ['a', 'a']);

  child.kill('SIGTERM');
  const [code] = (await once(child, 'exit')) as [number | null];
  assert.equal(code, 0, stderr);
  assert.deepEqual(await collectBodies(vip, port, 1), [''], 'HAProxy stopped with its agent');
});

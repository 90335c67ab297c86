/**
 * ssl: remotes against a real ovsdb-server listening on pssl:, with certificates made by openssl
 * here: mutual TLS as OVS does it (the server demands our certificate; both trust one CA).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { OvsdbClient } from './client.js';
import { DisconnectedError } from './json-rpc.js';
import { TestOvsdbServer } from '../../../test/support/ovsdb-server.js';
import { unmet } from '../../../test/support/requirements.js';

const run = promisify(execFile);
const skip = unmet('ovsdb');
let dir: string;
let server: TestOvsdbServer;

async function issue(name: string, ca: string): Promise<void> {
  const p = (ext: string) => join(dir, `${name}.${ext}`);
  await run('openssl', ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', p('key'), '-out', p('csr'), '-subj', `/CN=${name}`]);
  await run('openssl', ['x509', '-req', '-in', p('csr'), '-CA', join(dir, `${ca}.pem`), '-CAkey', join(dir, `${ca}.key`), '-CAcreateserial', '-out', p('pem'), '-days', '1']);
}

async function makeCa(name: string): Promise<void> {
  await run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, `${name}.key`), '-out', join(dir, `${name}.pem`), '-days', '1', '-subj', `/CN=${name}`]);
}

const files = (name: string, ca: string) => ({
  key: readFileSync(join(dir, `${name}.key`)),
  cert: readFileSync(join(dir, `${name}.pem`)),
  ca: readFileSync(join(dir, `${ca}.pem`)),
});

before(async () => {
  if (skip) return;
  dir = mkdtempSync(join(tmpdir(), 'ostia-ovsdb-ssl-'));
  await makeCa('ca');
  await makeCa('other-ca');
  await issue('server', 'ca');
  await issue('client', 'ca');
  await issue('stranger', 'other-ca');
  server = await TestOvsdbServer.start({
    ssl: { keyFile: join(dir, 'server.key'), certFile: join(dir, 'server.pem'), caFile: join(dir, 'ca.pem') },
  });
});
after(async () => {
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('ssl: transact and monitor over mutual TLS', { skip }, async () => {
  const c = await OvsdbClient.connect(server.sslRemote, { tls: files('client', 'ca'), probeIntervalMs: 0, connectTimeoutMs: 10_000 });
  try {
    const [ins] = await c.transact('OVN_Northbound', [{ op: 'insert', table: 'Load_Balancer', row: { name: 'over-tls' } }]);
    assert.equal(ins?.op, 'insert');
    const m = await c.monitor('OVN_Northbound', { Load_Balancer: { columns: ['name'] } });
    assert.deepEqual(m.rows('Load_Balancer').map((r) => r.name), ['over-tls']);
    assert.match(await server.nbctl('--columns=name', 'list', 'Load_Balancer'), /over-tls/);
  } finally {
    c.close();
  }
});

test('ssl: a server certificate from another CA is refused; so is a client certificate the server does not trust', { skip }, async () => {
  const opts = { probeIntervalMs: 0, connectTimeoutMs: 1_500, backoffInitialMs: 100, backoffMaxMs: 200 };
  // We trust only other-ca: the server's certificate fails verification on our side.
  await assert.rejects(OvsdbClient.connect(server.sslRemote, { ...opts, tls: { ...files('client', 'ca'), ca: readFileSync(join(dir, 'other-ca.pem')) } }), DisconnectedError);
  // The server does not trust the stranger's CA: it ends the handshake, or the session right after it.
  let c: OvsdbClient | undefined;
  try {
    c = await OvsdbClient.connect(server.sslRemote, { ...opts, tls: files('stranger', 'ca') });
    await assert.rejects(c.echo());
  } catch (e) {
    assert.ok(e instanceof DisconnectedError, String(e));
  } finally {
    c?.close();
  }
});

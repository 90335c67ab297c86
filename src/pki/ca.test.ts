import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import { CertificateAuthority } from './ca.js';

const AMPHORA_ID = '0b6f7c4e-2b1a-4c3d-9e8f-0a1b2c3d4e5f';
const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

function scratch(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'ostia-pki-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const mode = (file: string) => statSync(file).mode & 0o777;

test('first open creates two distinct CAs with private keys readable by the owner only', async (t) => {
  const dir = join(scratch(t), 'pki');
  const ca = await CertificateAuthority.open(dir);
  assert.equal(mode(dir), 0o700);
  assert.equal(mode(join(dir, 'server-ca.key')), 0o600);
  assert.equal(mode(join(dir, 'client-ca.key')), 0o600);
  const server = new X509Certificate(ca.serverCaPem);
  const client = new X509Certificate(ca.clientCaPem);
  assert.ok(server.ca && client.ca);
  assert.notEqual(server.fingerprint256, client.fingerprint256);
  assert.match(server.subject, /CN=Ostia amphora server CA/);
  assert.match(client.subject, /CN=Ostia controller client CA/);
});

test('a second open loads the same CAs instead of creating new ones', async (t) => {
  const dir = join(scratch(t), 'pki');
  const first = await CertificateAuthority.open(dir);
  const second = await CertificateAuthority.open(dir);
  assert.equal(second.serverCaPem, first.serverCaPem);
  assert.equal(second.clientCaPem, first.clientCaPem);
  const cert = await second.issueAmphoraCert(AMPHORA_ID, '127.80.0.10', 1);
  assert.ok(new X509Certificate(cert.certPem).verify(new X509Certificate(first.serverCaPem).publicKey));
});

test('processes opening an empty data dir at once all end up with one CA', async (t) => {
  const dir = join(scratch(t), 'pki');
  const opened = await Promise.all(Array.from({ length: 6 }, () => CertificateAuthority.open(dir)));
  assert.equal(new Set(opened.map((ca) => ca.serverCaPem)).size, 1);
  assert.equal(new Set(opened.map((ca) => ca.clientCaPem)).size, 1);
  assert.deepEqual(readdirSync(join(dir, '..')), ['pki'], 'losers leave no staging directories behind');
});

test('a non-empty directory without CA files is refused with a clear message', async (t) => {
  const dir = join(scratch(t), 'pki');
  mkdirSync(dir);
  writeFileSync(join(dir, 'unrelated.txt'), 'x');
  await assert.rejects(CertificateAuthority.open(dir), /exists and holds no server-ca\.pem; remove the directory or point dataDir elsewhere/);
});

test('an amphora cert names the amphora (CN and DNS SAN) and its management IP, for server auth, signed by the server CA', async (t) => {
  const ca = await CertificateAuthority.open(join(scratch(t), 'pki'));
  const before = Date.now();
  const issued = await ca.issueAmphoraCert(AMPHORA_ID, '127.80.0.10', 30);
  const cert = new X509Certificate(issued.certPem);
  assert.equal(cert.subject, `CN=${AMPHORA_ID}`);
  assert.equal(cert.subjectAltName, `DNS:${AMPHORA_ID}, IP Address:127.80.0.10`);
  assert.deepEqual(cert.keyUsage, [SERVER_AUTH]);
  assert.equal(cert.ca, false);
  assert.ok(cert.checkIssued(new X509Certificate(ca.serverCaPem)));
  assert.ok(cert.verify(new X509Certificate(ca.serverCaPem).publicKey));
  assert.ok(!cert.verify(new X509Certificate(ca.clientCaPem).publicKey), 'not signed by the client CA');
  assert.equal(issued.serial, cert.serialNumber.toLowerCase());
  const days = (issued.notAfter.getTime() - before) / 86_400_000;
  assert.ok(days > 29.99 && days < 30.01, `valid for 30 days, got ${days}`);
  assert.equal(new Date(cert.validTo).getTime(), Math.floor(issued.notAfter.getTime() / 1000) * 1000);
  // The key is the certificate's.
  const publicFromKey = createPublicKey(createPrivateKey(issued.keyPem)).export({ format: 'der', type: 'spki' });
  assert.deepEqual(publicFromKey, cert.publicKey.export({ format: 'der', type: 'spki' }));
});

test('every amphora cert gets its own key and serial', async (t) => {
  const ca = await CertificateAuthority.open(join(scratch(t), 'pki'));
  const a = await ca.issueAmphoraCert(AMPHORA_ID, '127.80.0.10', 1);
  const b = await ca.issueAmphoraCert(AMPHORA_ID, '127.80.0.10', 1);
  assert.notEqual(a.serial, b.serial);
  assert.notEqual(a.keyPem, b.keyPem);
});

test('IPv6 management addresses become IP SANs too', async (t) => {
  const ca = await CertificateAuthority.open(join(scratch(t), 'pki'));
  const cert = new X509Certificate((await ca.issueAmphoraCert(AMPHORA_ID, '::1', 1)).certPem);
  assert.equal(cert.subjectAltName, `DNS:${AMPHORA_ID}, IP Address:0:0:0:0:0:0:0:1`);
});

test('amphora certs are refused for names that are not amphora ids, bad addresses and non-positive validity', async (t) => {
  const ca = await CertificateAuthority.open(join(scratch(t), 'pki'));
  await assert.rejects(ca.issueAmphoraCert('evil, CN=controller', '127.80.0.10', 1), /'evil, CN=controller' is not an amphora id \(a UUID\)/);
  await assert.rejects(ca.issueAmphoraCert(AMPHORA_ID, '127.80.0.300', 1), /'127\.80\.0\.300' is not an IP address/);
  await assert.rejects(ca.issueAmphoraCert(AMPHORA_ID, '127.80.0.10', 0), /validity must be positive \(got 0 days\)/);
});

test('the controller client cert is for client auth, signed by the client CA, and shared through the directory', async (t) => {
  const dir = join(scratch(t), 'pki');
  const ca = await CertificateAuthority.open(dir);
  const mine = await ca.controllerClientCert();
  const cert = new X509Certificate(mine.certPem);
  assert.deepEqual(cert.keyUsage, [CLIENT_AUTH]);
  assert.ok(cert.verify(new X509Certificate(ca.clientCaPem).publicKey));
  assert.ok(!cert.verify(new X509Certificate(ca.serverCaPem).publicKey));
  assert.equal(mode(join(dir, 'controller-client.pem')), 0o600);
  assert.deepEqual(await ca.controllerClientCert(), mine, 'cached in memory');
  const otherProcess = await CertificateAuthority.open(dir);
  assert.deepEqual(await otherProcess.controllerClientCert(), mine, 'cached on disk');
});

test('a controller client cert issued by a replaced client CA is re-issued', async (t) => {
  const root = scratch(t);
  const old = await (await CertificateAuthority.open(join(root, 'old'))).controllerClientCert();
  const dir = join(root, 'pki');
  const ca = await CertificateAuthority.open(dir);
  writeFileSync(join(dir, 'controller-client.pem'), old.keyPem + old.certPem, { mode: 0o600 });
  const fresh = await ca.controllerClientCert();
  assert.notEqual(fresh.certPem, old.certPem);
  assert.ok(new X509Certificate(fresh.certPem).verify(new X509Certificate(ca.clientCaPem).publicKey));
});

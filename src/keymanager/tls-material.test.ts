import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { alice, startKeyManager, type KeyManagerFixture } from '../../test/support/keymanager-harness.js';
import { CertificateError } from '../tls/certificates.js';
import { createTestPki, type TestPki } from '../../test/support/test-pki.js';
import { haproxyCertificatePem, pemBlocks, readCaAndCrl, readCertificate, UnretrievableReference } from './tls-material.js';

let km: KeyManagerFixture;
let pki: TestPki;
before(async () => {
  km = await startKeyManager();
  pki = createTestPki();
});
after(async () => {
  pki.remove();
  await km.close();
});

const storeBinary = (payload: Buffer) => km.store(alice, { payload: payload.toString('base64'), payload_content_type: 'application/octet-stream', payload_content_encoding: 'base64' });
const storeText = (payload: string) => km.store(alice, { payload, payload_content_type: 'text/plain' });

test('a bundle in service is opened once per content; a new reference is judged afresh every time', async () => {
  const leaf = pki.leaf({ cn: 'www.example.com', dnsNames: ['www.example.com'], key: 'ec-p256' });
  const other = pki.leaf({ cn: 'api.example.com', dnsNames: ['api.example.com'], key: 'ec-p256' });
  const [ref, otherRef] = await Promise.all([storeBinary(pki.pkcs12({ key: leaf, certs: [leaf] })), storeBinary(pki.pkcs12({ key: other, certs: [other] }))]);
  const keyManager = km.runtime.keyManager;
  const first = await readCertificate(keyManager, ref, { acceptExpired: true });
  assert.equal(await readCertificate(keyManager, ref, { acceptExpired: true }), first, 'remembered');
  assert.notEqual(await readCertificate(keyManager, otherRef, { acceptExpired: true }), first);
  assert.notEqual(await readCertificate(keyManager, ref), first, 'not remembered when expiry matters');
  assert.equal((await readCertificate(keyManager, ref)).fingerprintSha256, first.fingerprintSha256);
});

test('HAProxy material: certificate, chain, then key, as PEM blocks only; unreadable and wrong-kind references by name', async () => {
  const leaf = pki.leaf({ cn: 'www.example.com', dnsNames: ['www.example.com'], key: 'ec-p256' });
  const ref = await storeBinary(pki.pkcs12({ key: leaf, certs: [leaf, pki.intermediate] }));
  const pem = haproxyCertificatePem(await readCertificate(km.runtime.keyManager, ref));
  assert.deepEqual(pem.match(/-----BEGIN [A-Z ]+-----/g), ['-----BEGIN CERTIFICATE-----', '-----BEGIN CERTIFICATE-----', '-----BEGIN PRIVATE KEY-----']);
  assert.doesNotMatch(pem, /\r|\n\n/);
  assert.equal(pemBlocks('\r\n-----BEGIN X-----\r\n  QUJD\r\n\r\n-----END X-----\r\n\r\n'), '-----BEGIN X-----\nQUJD\n-----END X-----\n');

  const ca = await storeText(pki.intermediate.certPem + pki.root.certPem);
  const crl = await storeText(pki.crl(pki.intermediate).toString());
  const read = await readCaAndCrl(km.runtime.keyManager, ca, crl);
  assert.equal(read.ca.certificatesPem.length, 2);
  assert.match(read.crl!.crlPem, /^-----BEGIN X509 CRL-----\n/);
  await assert.rejects(readCaAndCrl(km.runtime.keyManager, ref, null), (e: unknown) => e instanceof CertificateError && /a CA certificate reference must be a secret|neither a PEM nor a DER certificate/.test(e.message));
  await assert.rejects(readCertificate(km.runtime.keyManager, `${km.base}/secrets/0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9`), (e: unknown) => e instanceof UnretrievableReference && e.ref.endsWith('0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9'));
});

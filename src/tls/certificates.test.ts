import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import fc from 'fast-check';
import {
  CertificateError,
  parseCaBundle,
  parseCrl,
  parseTlsBundle,
  type CertificateContainerParts,
  type TlsBundle,
} from './certificates.js';
import { createTestPki, mergePkcs12, type IssuedCert } from '../../test/support/test-pki.js';

const REF = 'http://ostia.test/key-manager/v1/secrets/6c1d2a8e-4f6b-4a57-9d5e-2b7f0c3e8a91';
const CONTAINER_REF = 'http://ostia.test/key-manager/v1/containers/0e6f3b2a-8c4d-4e1f-a7b9-5d2c8e1f3a60';
const CA_REF = 'http://ostia.test/key-manager/v1/secrets/9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';
const PASSPHRASE = 'correct horse battery staple';
const DAY_MS = 86_400_000;

const pki = createTestPki();
after(() => pki.remove());
const { root, intermediate } = pki;
const rsaLeaf = pki.leaf({ cn: 'www.example.test', dnsNames: ['www.example.test', 'api.example.test'] });
const ecLeaf = pki.leaf({ cn: 'ec.example.test', key: 'ec-p256' });

function container(leaf: IssuedCert, extra: Partial<CertificateContainerParts> = {}): CertificateContainerParts {
  return { certificate: leaf.certPem, private_key: leaf.keyPem, intermediates: intermediate.certPem + root.certPem, ...extra };
}

function refused(action: () => unknown, ref: string, reason: string | RegExp): void {
  assert.throws(action, (error: unknown) => {
    assert.ok(error instanceof CertificateError, `expected a CertificateError, got ${String(error)}`);
    assert.equal(error.ref, ref);
    if (typeof reason === 'string') assert.equal(error.message, `Invalid TLS reference ${ref}: ${reason}`);
    else assert.match(error.reason, reason);
    return true;
  });
}

function assertServes(bundle: TlsBundle, leaf: IssuedCert, chain: IssuedCert[] = [intermediate, root]): void {
  const cert = new X509Certificate(leaf.certPem);
  assert.equal(bundle.certificatePem, leaf.certPem);
  assert.deepEqual(bundle.intermediatesPem, chain.map((issued) => issued.certPem));
  assert.equal(bundle.fingerprintSha256, cert.fingerprint256);
  assert.equal(bundle.notBefore.getTime(), Date.parse(cert.validFrom));
  assert.equal(bundle.notAfter.getTime(), Date.parse(cert.validTo));
  assert.equal(bundle.subjectCn, leaf.cn);
  assert.match(bundle.privateKeyPem, /^-----BEGIN PRIVATE KEY-----\n/);
  assert.ok(cert.checkPrivateKey(createPrivateKey(bundle.privateKeyPem)));
}

test('a container with an RSA 2048 leaf, a PKCS#8 key and its chain', () => {
  const bundle = parseTlsBundle(container(rsaLeaf), { ref: CONTAINER_REF });
  assertServes(bundle, rsaLeaf);
  assert.equal(bundle.keyType, 'rsa');
  assert.equal(bundle.keyBits, 2048);
  assert.deepEqual(bundle.dnsNames, ['www.example.test', 'api.example.test']);
});

test('a container with an EC P-256 leaf and a SEC1 key; without a SAN the CN is the DNS name', () => {
  const sec1 = pki.keyAs(ecLeaf, 'traditional');
  assert.match(sec1, /^-----BEGIN EC PRIVATE KEY-----/);
  const bundle = parseTlsBundle(container(ecLeaf, { private_key: sec1 }), { ref: CONTAINER_REF });
  assertServes(bundle, ecLeaf);
  assert.equal(bundle.keyType, 'ec');
  assert.equal(bundle.keyBits, 256);
  assert.deepEqual(bundle.dnsNames, ['ec.example.test']);
});

test('a container with a PKCS#1 RSA key and payloads as bytes', () => {
  const pkcs1 = pki.keyAs(rsaLeaf, 'traditional');
  assert.match(pkcs1, /^-----BEGIN RSA PRIVATE KEY-----/);
  const parts = { certificate: Buffer.from(rsaLeaf.certPem), private_key: Buffer.from(pkcs1), intermediates: Buffer.from(intermediate.certPem) };
  assertServes(parseTlsBundle(parts, { ref: CONTAINER_REF }), rsaLeaf, [intermediate]);
});

test('a container without intermediates, its certificate in DER', () => {
  const der = new X509Certificate(rsaLeaf.certPem).raw;
  const bundle = parseTlsBundle({ certificate: der, private_key: rsaLeaf.keyPem }, { ref: CONTAINER_REF });
  assertServes(bundle, rsaLeaf, []);
});

test('encrypted keys open with private_key_passphrase, and only with it', () => {
  for (const form of ['pkcs8-encrypted', 'traditional-encrypted'] as const) {
    const encrypted = pki.keyAs(rsaLeaf, form, PASSPHRASE);
    const parts = container(rsaLeaf, { private_key: encrypted });
    assertServes(parseTlsBundle({ ...parts, private_key_passphrase: PASSPHRASE }, { ref: CONTAINER_REF }), rsaLeaf);
    assertServes(parseTlsBundle({ ...parts, private_key_passphrase: Buffer.from(PASSPHRASE) }, { ref: CONTAINER_REF }), rsaLeaf);
    const reason = 'cannot decrypt the private key: wrong or missing passphrase';
    refused(() => parseTlsBundle(parts, { ref: CONTAINER_REF }), CONTAINER_REF, reason);
    refused(() => parseTlsBundle({ ...parts, private_key_passphrase: 'wrong' }, { ref: CONTAINER_REF }), CONTAINER_REF, reason);
  }
});

test('intermediates in any order come out leaf-issuer first', () => {
  const reversed = container(rsaLeaf, { intermediates: root.certPem + intermediate.certPem });
  assertServes(parseTlsBundle(reversed, { ref: CONTAINER_REF }), rsaLeaf);
});

test('a PEM secret holding certificate, key and chain in any order', () => {
  const pem = root.certPem + rsaLeaf.keyPem + intermediate.certPem + rsaLeaf.certPem;
  assertServes(parseTlsBundle(pem, { ref: REF }), rsaLeaf);
  assertServes(parseTlsBundle(Buffer.from(pem), { ref: REF }), rsaLeaf);
});

test('DNS names come from the subjectAltName alone when it has one, wildcards included', () => {
  const leaf = pki.leaf({ cn: 'cn.example.test', key: 'ec-p256', dnsNames: ['*.example.test', 'b.example.test'], ipAddresses: ['192.0.2.10'] });
  assert.deepEqual(parseTlsBundle(container(leaf), { ref: CONTAINER_REF }).dnsNames, ['*.example.test', 'b.example.test']);
  const ipOnly = pki.leaf({ cn: 'ip.example.test', key: 'ec-p256', ipAddresses: ['192.0.2.11'] });
  assert.deepEqual(parseTlsBundle(container(ipOnly), { ref: CONTAINER_REF }).dnsNames, []);
});

test('an Ed25519 leaf is accepted', () => {
  const leaf = pki.leaf({ cn: 'ed.example.test', key: 'ed25519', dnsNames: ['ed.example.test'] });
  const bundle = parseTlsBundle(container(leaf), { ref: CONTAINER_REF });
  assert.equal(bundle.keyType, 'ed25519');
  assert.equal(bundle.keyBits, 256);
});

test('PKCS#12 bundles in every profile give the same bundle as the container', () => {
  const expected = parseTlsBundle(container(rsaLeaf), { ref: CONTAINER_REF });
  const chain = [rsaLeaf, intermediate, root];
  const variants: Array<[string, Buffer, string | undefined]> = [
    ['legacy RC2-40, empty password (Kubernetes)', pki.pkcs12({ key: rsaLeaf, certs: chain, legacy: true }), undefined],
    ['OpenSSL 3 default AES-256/PBKDF2, empty password', pki.pkcs12({ key: rsaLeaf, certs: chain }), undefined],
    ['OpenSSL 3 default with a passphrase', pki.pkcs12({ key: rsaLeaf, certs: chain, passphrase: PASSPHRASE }), PASSPHRASE],
    ['legacy with a passphrase', pki.pkcs12({ key: rsaLeaf, certs: chain, passphrase: PASSPHRASE, legacy: true }), PASSPHRASE],
    ['unencrypted without MAC', pki.pkcs12({ key: rsaLeaf, certs: chain, plain: true }), undefined],
  ];
  for (const [name, p12, passphrase] of variants) {
    assert.deepEqual(parseTlsBundle(p12, { ref: REF, passphrase }), expected, name);
  }
});

test('PKCS#12 with an EC key, legacy and modern, with and without a chain', () => {
  for (const legacy of [true, false]) {
    const withChain = parseTlsBundle(pki.pkcs12({ key: ecLeaf, certs: [ecLeaf, root, intermediate], legacy }), { ref: REF });
    assertServes(withChain, ecLeaf);
    assert.equal(withChain.keyType, 'ec');
    assertServes(parseTlsBundle(pki.pkcs12({ key: ecLeaf, certs: [ecLeaf], legacy }), { ref: REF }), ecLeaf, []);
  }
});

test('a PKCS#12 with a wrong or missing passphrase', () => {
  const reason = 'cannot decrypt the PKCS#12 bundle: wrong or missing passphrase';
  for (const legacy of [true, false]) {
    const p12 = pki.pkcs12({ key: rsaLeaf, certs: [rsaLeaf], passphrase: PASSPHRASE, legacy });
    refused(() => parseTlsBundle(p12, { ref: REF }), REF, reason);
    refused(() => parseTlsBundle(p12, { ref: REF, passphrase: 'not it' }), REF, reason);
  }
  const empty = pki.pkcs12({ key: rsaLeaf, certs: [rsaLeaf] });
  refused(() => parseTlsBundle(empty, { ref: REF, passphrase: PASSPHRASE }), REF, reason);
});

test('a PKCS#12 without a key, without a certificate, or with two keys', () => {
  refused(() => parseTlsBundle(pki.pkcs12({ certs: [rsaLeaf, intermediate] }), { ref: REF }), REF,
    'the PKCS#12 bundle holds no private key');
  refused(() => parseTlsBundle(pki.pkcs12({ key: rsaLeaf }), { ref: REF }), REF, 'the PKCS#12 bundle holds no certificate');
  const twoKeys = mergePkcs12([
    pki.pkcs12({ key: rsaLeaf, certs: [rsaLeaf], plain: true }),
    pki.pkcs12({ key: ecLeaf, certs: [ecLeaf], plain: true }),
  ]);
  refused(() => parseTlsBundle(twoKeys, { ref: REF }), REF, 'the PKCS#12 bundle holds 2 private keys; expected one');
});

test('a PKCS#12 demanding excessive key-derivation work is refused before any is done', () => {
  const p12 = pki.pkcs12({ key: rsaLeaf, certs: [rsaLeaf], iterations: 100_000 });
  refused(() => parseTlsBundle(p12, { ref: REF }), REF,
    'the PKCS#12 bundle asks for more than 200000 key-derivation iterations');
  assertServes(parseTlsBundle(pki.pkcs12({ key: rsaLeaf, certs: [rsaLeaf], iterations: 10_000 }), { ref: REF }), rsaLeaf, []);
});

test('a certificate and a key that do not match', () => {
  refused(() => parseTlsBundle(container(rsaLeaf, { private_key: ecLeaf.keyPem }), { ref: CONTAINER_REF }), CONTAINER_REF,
    'the certificate and the private key do not match');
  refused(() => parseTlsBundle(rsaLeaf.certPem + ecLeaf.keyPem, { ref: REF }), REF, 'the certificate and the private key do not match');
});

test('a certificate that is not part of the chain is named', () => {
  const stray = pki.ca('Stray CA');
  refused(() => parseTlsBundle(container(rsaLeaf, { intermediates: intermediate.certPem + stray.certPem + root.certPem }),
    { ref: CONTAINER_REF }), CONTAINER_REF, 'intermediate "CN=Stray CA" is not part of the certificate\'s chain');
  // The root alone does not issue the leaf: the chain has a gap.
  refused(() => parseTlsBundle(container(rsaLeaf, { intermediates: root.certPem }), { ref: CONTAINER_REF }), CONTAINER_REF,
    'intermediate "CN=Ostia Test Root CA" is not part of the certificate\'s chain');
});

test('an expired or not yet valid certificate', () => {
  const cert = new X509Certificate(rsaLeaf.certPem);
  const notAfter = new Date(cert.validTo);
  const notBefore = new Date(cert.validFrom);
  refused(() => parseTlsBundle(container(rsaLeaf), { ref: CONTAINER_REF, now: new Date(notAfter.getTime() + DAY_MS) }),
    CONTAINER_REF, `the certificate expired on ${notAfter.toISOString()}`);
  refused(() => parseTlsBundle(container(rsaLeaf), { ref: CONTAINER_REF, now: new Date(notBefore.getTime() - DAY_MS) }),
    CONTAINER_REF, `the certificate is not valid before ${notBefore.toISOString()}`);
  // Expiry monitoring reads what is in use, expired or not; a certificate not yet valid is still refused.
  const expired = parseTlsBundle(container(rsaLeaf), { ref: CONTAINER_REF, now: new Date(notAfter.getTime() + DAY_MS), acceptExpired: true });
  assert.deepEqual(expired.notAfter, notAfter);
  refused(() => parseTlsBundle(container(rsaLeaf), { ref: CONTAINER_REF, now: new Date(notBefore.getTime() - DAY_MS), acceptExpired: true }),
    CONTAINER_REF, `the certificate is not valid before ${notBefore.toISOString()}`);
});

test('an expired intermediate is named', () => {
  const shortLived = pki.ca('Short-lived Intermediate', root);
  const leaf = pki.leaf({ cn: 'short.example.test', issuer: shortLived, days: 1, key: 'ec-p256' });
  const later = new Date(Date.now() + 2 * DAY_MS);
  const leafBundle = () => parseTlsBundle(container(leaf, { intermediates: shortLived.certPem }), { ref: CONTAINER_REF, now: later });
  refused(leafBundle, CONTAINER_REF, /^the certificate expired on /);
  const farLeaf = pki.leaf({ cn: 'far.example.test', issuer: shortLived, days: 7300, key: 'ec-p256' });
  const validTo = new Date(new X509Certificate(shortLived.certPem).validTo);
  refused(() => parseTlsBundle(container(farLeaf, { intermediates: shortLived.certPem }),
    { ref: CONTAINER_REF, now: new Date(validTo.getTime() + DAY_MS) }), CONTAINER_REF,
  `intermediate "CN=Short-lived Intermediate" expired on ${validTo.toISOString()}`);
});

test('weak and unsupported keys are refused by size, curve or type', () => {
  const weak = pki.leaf({ cn: 'weak.example.test', key: 'rsa1024' });
  refused(() => parseTlsBundle(container(weak), { ref: CONTAINER_REF }), CONTAINER_REF,
    'the 1024-bit RSA key is too weak; at least 2048 bits are required');
  const k1 = pki.leaf({ cn: 'k1.example.test', key: 'ec-secp256k1' });
  refused(() => parseTlsBundle(container(k1), { ref: CONTAINER_REF }), CONTAINER_REF,
    'the EC curve secp256k1 is not supported; use P-256, P-384 or P-521');
  const dsa = pki.leaf({ cn: 'dsa.example.test', key: 'dsa2048' });
  refused(() => parseTlsBundle(container(dsa), { ref: CONTAINER_REF }), CONTAINER_REF,
    'DSA keys are not supported; use an RSA key of at least 2048 bits or an EC key');
  refused(() => parseTlsBundle(pki.pkcs12({ key: dsa, certs: [dsa] }), { ref: REF }), REF, /^DSA keys are not supported/);
  const p384 = parseTlsBundle(container(pki.leaf({ cn: 'p384.example.test', key: 'ec-p384' })), { ref: CONTAINER_REF });
  assert.equal(p384.keyBits, 384);
});

test('garbage, empty and half-right inputs', () => {
  const neither = 'the secret is neither a PKCS#12 bundle nor PEM';
  refused(() => parseTlsBundle(Buffer.from('hello, world'), { ref: REF }), REF, neither);
  refused(() => parseTlsBundle(Buffer.alloc(0), { ref: REF }), REF, neither);
  refused(() => parseTlsBundle(new X509Certificate(root.certPem).raw, { ref: REF }), REF, neither);
  refused(() => parseTlsBundle(rsaLeaf.certPem, { ref: REF }), REF, 'the secret holds no private key');
  refused(() => parseTlsBundle(rsaLeaf.keyPem, { ref: REF }), REF, 'the secret holds no certificate');
  refused(() => parseTlsBundle(rsaLeaf.certPem + rsaLeaf.keyPem + ecLeaf.keyPem, { ref: REF }), REF,
    'the secret holds 2 private keys; expected one');
  refused(() => parseTlsBundle(container(rsaLeaf, { certificate: 'not a certificate' }), { ref: CONTAINER_REF }), CONTAINER_REF,
    'the certificate secret is not PEM');
  refused(() => parseTlsBundle(container(rsaLeaf, { private_key: undefined }), { ref: CONTAINER_REF }), CONTAINER_REF,
    'the container holds no private key');
  const broken = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
  refused(() => parseTlsBundle(container(rsaLeaf, { intermediates: broken }), { ref: CONTAINER_REF }), CONTAINER_REF,
    'the intermediates secret holds a certificate that cannot be read');
  const csr = '-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n';
  refused(() => parseTlsBundle(rsaLeaf.certPem + csr, { ref: REF }), REF, 'the secret holds an unexpected CERTIFICATE REQUEST block');
  const truncated = intermediate.certPem + root.certPem.slice(0, 200);
  refused(() => parseTlsBundle(container(rsaLeaf, { intermediates: truncated }), { ref: CONTAINER_REF }), CONTAINER_REF,
    'the intermediates secret holds an incomplete PEM block');
});

test('refusals never carry the passphrase or the key', () => {
  const parts = container(rsaLeaf, { private_key: pki.keyAs(rsaLeaf, 'pkcs8-encrypted', PASSPHRASE), private_key_passphrase: 'hunter2-secret' });
  const p12 = pki.pkcs12({ key: rsaLeaf, certs: [rsaLeaf], passphrase: PASSPHRASE });
  for (const action of [() => parseTlsBundle(parts, { ref: CONTAINER_REF }), () => parseTlsBundle(p12, { ref: REF, passphrase: 'hunter2-secret' })]) {
    assert.throws(action, (error: Error) => !error.message.includes('hunter2') && !error.message.includes('PRIVATE KEY'));
  }
});

test('arbitrary bytes and parts only ever give a CertificateError that does not quote them', async () => {
  const quotes = (message: string, input: Buffer) => input.length >= 6 && [
    input.toString('latin1'), input.toString('utf8'), input.toString('hex'), input.toString('base64'),
  ].some((form) => message.includes(form));
  const check = (input: Buffer, action: () => unknown) => {
    try {
      action();
    } catch (error) {
      assert.ok(error instanceof CertificateError, `not a CertificateError: ${String(error)}`);
      assert.ok(!quotes(error.message, input), 'the message quotes the input');
      return;
    }
    assert.fail('arbitrary input was accepted');
  };
  const pemArmored = fc.tuple(fc.constantFrom('CERTIFICATE', 'PRIVATE KEY', 'ENCRYPTED PRIVATE KEY', 'EC PRIVATE KEY'), fc.uint8Array({ maxLength: 600 }))
    .map(([label, body]) => Buffer.from(`-----BEGIN ${label}-----\n${Buffer.from(body).toString('base64')}\n-----END ${label}-----\n`));
  const pkcs12Like = fc.uint8Array({ maxLength: 600 }).map((body) => Buffer.concat([Buffer.from([0x30, 0x82, body.length >> 8, body.length & 0xff, 0x02, 0x01, 0x03]), body]));
  const input = fc.oneof(fc.uint8Array({ maxLength: 2000 }).map((bytes) => Buffer.from(bytes)), pemArmored, pkcs12Like);

  fc.assert(fc.property(input, fc.option(fc.string()), (data, passphrase) => {
    check(data, () => parseTlsBundle(data, { ref: REF, passphrase: passphrase ?? undefined }));
    check(data, () => parseTlsBundle({ certificate: rsaLeaf.certPem, private_key: data }, { ref: CONTAINER_REF }));
    check(data, () => parseTlsBundle({ certificate: data, private_key: rsaLeaf.keyPem }, { ref: CONTAINER_REF }));
    check(data, () => parseCaBundle(data, { ref: CA_REF }));
  }), { numRuns: 300 });

  const ca = parseCaBundle(intermediate.certPem, { ref: CA_REF });
  await fc.assert(fc.asyncProperty(input, async (data) => {
    await assert.rejects(parseCrl(data, { ref: REF, ca }), (error: unknown) =>
      error instanceof CertificateError && !quotes(error.message, data));
  }), { numRuns: 200 });
});

test('a CA bundle of one or more certificates, PEM or DER', () => {
  const bundle = parseCaBundle(root.certPem + intermediate.certPem + root.certPem, { ref: CA_REF });
  assert.deepEqual(bundle.certificatesPem, [root.certPem, intermediate.certPem]);
  assert.equal(bundle.pem, root.certPem + intermediate.certPem);
  assert.equal(bundle.ref, CA_REF);
  const earliest = Math.min(...[root, intermediate].map((ca) => Date.parse(new X509Certificate(ca.certPem).validTo)));
  assert.equal(bundle.notAfter.getTime(), earliest);
  const der = parseCaBundle(new X509Certificate(root.certPem).raw, { ref: CA_REF });
  assert.deepEqual(der.certificatesPem, [root.certPem]);
});

test('a CA bundle with a key, garbage or an expired CA is refused', () => {
  refused(() => parseCaBundle(root.certPem + root.keyPem, { ref: CA_REF }), CA_REF,
    'the CA bundle holds a private key; it must hold certificates only');
  refused(() => parseCaBundle('neither', { ref: CA_REF }), CA_REF, 'the secret is neither a PEM nor a DER certificate');
  const validTo = new Date(new X509Certificate(root.certPem).validTo);
  refused(() => parseCaBundle(root.certPem, { ref: CA_REF, now: new Date(validTo.getTime() + DAY_MS) }), CA_REF,
    `CA certificate "CN=Ostia Test Root CA" expired on ${validTo.toISOString()}`);
  assert.deepEqual(parseCaBundle(root.certPem, { ref: CA_REF, now: new Date(validTo.getTime() + DAY_MS), acceptExpired: true }).notAfter, validTo);
});

test('a CRL signed by the CA, in PEM or DER', async () => {
  const revoked = pki.leaf({ cn: 'revoked.example.test', key: 'ec-p256' });
  const ca = parseCaBundle(root.certPem + intermediate.certPem, { ref: CA_REF });
  for (const der of [false, true]) {
    const crl = await parseCrl(pki.crl(intermediate, [revoked], { der, days: 30 }), { ref: REF, ca });
    assert.equal(crl.revokedCount, 1);
    assert.match(crl.crlPem, /^-----BEGIN X509 CRL-----\r?\n/);
    assert.ok(crl.nextUpdate && Math.abs(crl.nextUpdate.getTime() - (crl.thisUpdate.getTime() + 30 * DAY_MS)) < 60_000);
  }
  const empty = await parseCrl(pki.crl(root).toString('utf8'), { ref: REF, ca });
  assert.equal(empty.revokedCount, 0);
});

test('a CRL from another CA, an expired CRL, or something else is refused', async () => {
  const crlPem = pki.crl(intermediate, [], { days: 1 });
  const refusedAsync = (promise: Promise<unknown>, reason: string) =>
    assert.rejects(promise, (error: unknown) => error instanceof CertificateError && error.ref === REF
      && error.message === `Invalid TLS reference ${REF}: ${reason}`);
  const other = parseCaBundle(pki.ca('Other CA').certPem, { ref: CA_REF });
  await refusedAsync(parseCrl(crlPem, { ref: REF, ca: other }), `the CRL is not signed by a CA certificate of ${CA_REF}`);
  const ca = parseCaBundle(intermediate.certPem, { ref: CA_REF });
  const { nextUpdate } = await parseCrl(crlPem, { ref: REF, ca });
  assert.ok(nextUpdate);
  await refusedAsync(parseCrl(crlPem, { ref: REF, ca, now: new Date(nextUpdate.getTime() + 1000) }),
    `the CRL expired on ${nextUpdate.toISOString()}`);
  assert.deepEqual((await parseCrl(crlPem, { ref: REF, ca, now: new Date(nextUpdate.getTime() + 1000), acceptExpired: true })).nextUpdate, nextUpdate);
  await refusedAsync(parseCrl(root.certPem, { ref: REF, ca }), 'the secret must hold exactly one X509 CRL');
  await refusedAsync(parseCrl(Buffer.from('nope'), { ref: REF, ca }), 'the secret is neither a PEM nor a DER CRL');
});

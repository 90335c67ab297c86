import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { parseTlsBundle } from '../../keymanager/certificates.js';
import { createTestPki, type IssuedCert, type TestPki } from '../../keymanager/testing.js';
import { probesFor, type Served } from './tls-expectations.js';

let pki: TestPki;
const certs: Record<string, Served> = {};

function served(ref: string, cert: IssuedCert): Served {
  return { ref, bundle: parseTlsBundle({ certificate: cert.certPem, private_key: cert.keyPem, intermediates: pki.intermediate.certPem }, { ref }) };
}

before(() => {
  pki = createTestPki();
  certs.www = served('ref-www', pki.leaf({ cn: 'www.example.com', dnsNames: ['www.example.com', 'example.com'], key: 'ec-p256' }));
  certs.www2 = served('ref-www2', pki.leaf({ cn: 'www.example.com', dnsNames: ['www.example.com', 'example.com'], key: 'ec-p256' }));
  certs.wwwOnly = served('ref-www-only', pki.leaf({ cn: 'www.example.com', dnsNames: ['www.example.com'], key: 'ec-p256' }));
  certs.api = served('ref-api', pki.leaf({ cn: 'api.example.com', dnsNames: ['api.example.com', '*.api.example.com'], key: 'ec-p256' }));
  certs.noSan = served('ref-cn', pki.leaf({ cn: 'legacy.example.com', key: 'ec-p256' }));
});
after(() => pki.remove());

const summary = (probes: ReturnType<typeof probesFor>) => probes.map((p) => [p.serverName, p.accept.map((f) => Object.values(certs).find((c) => c.bundle.fingerprintSha256 === f)!.ref)]);

test('the default answers clients without a name; each name of each certificate, wildcards probed with a host they cover', () => {
  assert.deepEqual(summary(probesFor([certs.www!, certs.api!, certs.noSan!], null)), [
    [null, ['ref-www']],
    ['www.example.com', ['ref-www']],
    ['example.com', ['ref-www']],
    ['api.example.com', ['ref-api']],
    ['ostia-probe.api.example.com', ['ref-api']],
    ['legacy.example.com', ['ref-cn']],
  ]);
});

test('a name several certificates claim may be answered by any of them', () => {
  const probes = probesFor([certs.www!, certs.wwwOnly!], null);
  assert.deepEqual(summary(probes).find(([name]) => name === 'www.example.com'), ['www.example.com', ['ref-www', 'ref-www-only']]);
  assert.match(probes[1]!.expected, /^a certificate for www\.example\.com: ref-www \(www\.example\.com\) or ref-www-only/);
});

test('a renewal keeps every name of the certificate it replaces; a name no new certificate covers can never be answered right', () => {
  // Renewed with the same names: the probes are those of the new certificates.
  assert.deepEqual(summary(probesFor([certs.www2!, certs.api!], [certs.www!, certs.api!])), summary(probesFor([certs.www2!, certs.api!], null)));
  // Renewed with a certificate that drops example.com.
  const dropped = probesFor([certs.wwwOnly!, certs.api!], [certs.www!, certs.api!]);
  const lost = dropped.find((p) => p.serverName === 'example.com')!;
  assert.deepEqual(lost.accept, []);
  assert.equal(lost.expected, 'a certificate for example.com, which the replaced certificate served and no new one covers');
  // Another number of certificates is a reconfiguration: names may go.
  assert.equal(probesFor([certs.wwwOnly!], [certs.www!, certs.api!]).find((p) => p.serverName === 'example.com'), undefined);
});

test('a listener without certificates has nothing to probe', () => {
  assert.deepEqual(probesFor([], null), []);
});

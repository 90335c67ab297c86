import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { parseTlsBundle } from '../../tls/certificates.js';
import { createTestPki, type IssuedCert, type TestPki } from '../../../test/support/test-pki.js';
import { probesFor, UNCOVERED_PROBE_NAME, type Served } from './tls-expectations.js';

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
  certs.first = served('ref-first', pki.leaf({ cn: 'first.example', dnsNames: ['first.example'], key: 'ec-p256' }));
  certs.second = served('ref-second', pki.leaf({ cn: 'second.example', dnsNames: ['second.example'], key: 'ec-p256' }));
  certs.noSan = served('ref-cn', pki.leaf({ cn: 'legacy.example.com', key: 'ec-p256' }));
});
after(() => pki.remove());

/** Each probe as [server name, refs of the certificates it accepts]. */
const summary = (probes: ReturnType<typeof probesFor>) => probes.map((p) => [p.serverName, p.accept.map((f) => Object.values(certs).find((c) => c.bundle.fingerprintSha256 === f)!.ref)]);

test('the default answers clients without a name and names no certificate covers; each name of each certificate its own, wildcards probed with a host they cover', () => {
  const probes = probesFor([certs.www!, certs.api!, certs.noSan!], null);
  assert.deepEqual(summary(probes), [
    [null, ['ref-www']],
    ['www.example.com', ['ref-www']],
    ['example.com', ['ref-www']],
    ['api.example.com', ['ref-api']],
    ['ostia-probe.api.example.com', ['ref-api']],
    ['legacy.example.com', ['ref-cn']],
    [UNCOVERED_PROBE_NAME, ['ref-www']],
  ]);
  assert.equal(probes[0]!.expected, 'the default certificate ref-www (www.example.com)');
  assert.equal(probes.at(-1)!.expected, `the default certificate ref-www (www.example.com), as no certificate covers ${UNCOVERED_PROBE_NAME}`);
});

test('a name several certificates claim may be answered by any of them', () => {
  const probes = probesFor([certs.www!, certs.wwwOnly!], null);
  assert.deepEqual(summary(probes).find(([name]) => name === 'www.example.com'), ['www.example.com', ['ref-www', 'ref-www-only']]);
  assert.match(probes[1]!.expected, /^a certificate for www\.example\.com: ref-www \(www\.example\.com\) or ref-www-only/);
});

test('a renewal for the same names: every probe wants the renewed certificate, none the old one', () => {
  const renewed = probesFor([certs.www2!, certs.api!], [certs.www!, certs.api!]);
  assert.deepEqual(summary(renewed), summary(probesFor([certs.www2!, certs.api!], null)));
  assert.ok(renewed.every((p) => !p.accept.includes(certs.www!.bundle.fingerprintSha256)));
});

test('the default replaced by a certificate for other names: the new names get it, and so do the old ones, now covered by none', () => {
  assert.deepEqual(summary(probesFor([certs.second!], [certs.first!])), [
    [null, ['ref-second']],
    ['second.example', ['ref-second']],
    ['first.example', ['ref-second']],
    [UNCOVERED_PROBE_NAME, ['ref-second']],
  ]);
  // A renewal that drops a name is no different: the dropped name gets the default.
  assert.deepEqual(summary(probesFor([certs.wwwOnly!, certs.api!], [certs.www!, certs.api!])).find(([name]) => name === 'example.com'), ['example.com', ['ref-www-only']]);
});

test('SNI certificates added, removed or replaced: each name the certificate now covering it, names no longer covered the default', () => {
  // Added.
  assert.deepEqual(summary(probesFor([certs.first!, certs.api!], [certs.first!])), [
    [null, ['ref-first']],
    ['first.example', ['ref-first']],
    ['api.example.com', ['ref-api']],
    ['ostia-probe.api.example.com', ['ref-api']],
    [UNCOVERED_PROBE_NAME, ['ref-first']],
  ]);
  // Removed: its names must not be answered by it any more.
  assert.deepEqual(summary(probesFor([certs.first!], [certs.first!, certs.api!])), [
    [null, ['ref-first']],
    ['first.example', ['ref-first']],
    ['api.example.com', ['ref-first']],
    ['ostia-probe.api.example.com', ['ref-first']],
    [UNCOVERED_PROBE_NAME, ['ref-first']],
  ]);
  // Replaced by one for another name.
  assert.deepEqual(summary(probesFor([certs.first!, certs.second!], [certs.first!, certs.api!])), [
    [null, ['ref-first']],
    ['first.example', ['ref-first']],
    ['second.example', ['ref-second']],
    ['api.example.com', ['ref-first']],
    ['ostia-probe.api.example.com', ['ref-first']],
    [UNCOVERED_PROBE_NAME, ['ref-first']],
  ]);
});

test('a listener without certificates has nothing to probe', () => {
  assert.deepEqual(probesFor([], null), []);
  assert.deepEqual(probesFor([], [certs.www!]), []);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { acmeChallengeType, checkAcmeListener, checkHttp01Port, isAcmeDomain, normaliseAcmeDomains } from './acme.js';

const message = (fn: () => void) => {
  try {
    fn();
  } catch (e) {
    return (e as Error).message;
  }
  return null;
};

test('acme_domains are DNS names an ACME server can validate over HTTP-01', () => {
  for (const ok of ['www.example.com', 'a-b.example.org', 'x.io', 'xn--bcher-kva.example']) assert.ok(isAcmeDomain(ok), ok);
  for (const bad of ['localhost', '*.example.com', '-a.example.com', 'a-.example.com', 'a..example.com', '127.0.0.1', 'a_b.example.com', `${'a'.repeat(64)}.com`, 'www.example.com.'])
    assert.ok(!isAcmeDomain(bad), bad);
  assert.deepEqual(normaliseAcmeDomains(['WWW.Example.com', 'www.example.com', 'api.example.com']), ['www.example.com', 'api.example.com']);
  assert.equal(normaliseAcmeDomains(null), null);
  assert.match(message(() => normaliseAcmeDomains([]))!, /acme_domains/);
  assert.match(message(() => normaliseAcmeDomains(['*.example.com']))!, /wildcard needs DNS-01/);
  assert.match(message(() => normaliseAcmeDomains(Array.from({ length: 101 }, (_, i) => `n${i}.example.com`)))!, /at most 100/);
});

test('only TERMINATED_HTTPS listeners manage their default certificate, which the caller then does not set', () => {
  assert.equal(message(() => checkAcmeListener({ protocol: 'TERMINATED_HTTPS', acme_domains: ['a.example.com'] }, false)), null);
  assert.match(message(() => checkAcmeListener({ protocol: 'HTTP', acme_domains: ['a.example.com'] }, false))!, /TERMINATED_HTTPS listeners only/);
  assert.match(message(() => checkAcmeListener({ protocol: 'TERMINATED_HTTPS', acme_domains: ['a.example.com'] }, true))!, /managed by Ostia/);
  assert.equal(message(() => checkAcmeListener({ protocol: 'HTTP', acme_domains: null }, true)), null);
});

test('port 80 is left to HTTP-01 when validation cannot go to 443: an HTTP listener there answers it, any other TCP listener blocks it', () => {
  const acme = { protocol: 'TERMINATED_HTTPS', protocol_port: 8443, acme_domains: ['a.example.com'] };
  assert.equal(message(() => checkHttp01Port([acme, { protocol: 'HTTP', protocol_port: 80, acme_domains: null }])), null);
  assert.equal(message(() => checkHttp01Port([acme, { protocol: 'UDP', protocol_port: 80, acme_domains: null }])), null);
  assert.match(message(() => checkHttp01Port([acme, { id: 'l-1', protocol: 'TCP', protocol_port: 80, acme_domains: null }]))!, /a TCP listener \(l-1\) holds it/);
  assert.equal(message(() => checkHttp01Port([{ protocol: 'TCP', protocol_port: 80, acme_domains: null }])), null);
  const on443 = { ...acme, protocol_port: 443 };
  assert.equal(message(() => checkHttp01Port([on443, { protocol: 'TCP', protocol_port: 80, acme_domains: null }])), null);
});

test('the challenge: HTTP-01 in an HTTP listener on 80, else TLS-ALPN-01 on a TERMINATED_HTTPS 443, else HTTP-01 on an answerer of its own', () => {
  const managed = (port: number) => ({ protocol: 'TERMINATED_HTTPS', protocol_port: port, acme_domains: ['a.example.com'] });
  const plain = (protocol: string, port: number) => ({ protocol, protocol_port: port, acme_domains: null });
  assert.equal(acmeChallengeType([plain('TERMINATED_HTTPS', 443), plain('HTTP', 80)]), null);
  assert.equal(acmeChallengeType([managed(443), plain('HTTP', 80)]), 'http-01');
  assert.equal(acmeChallengeType([managed(443)]), 'tls-alpn-01');
  assert.equal(acmeChallengeType([managed(8443), plain('TERMINATED_HTTPS', 443), plain('TCP', 80)]), 'tls-alpn-01');
  assert.equal(acmeChallengeType([managed(8443), plain('TCP', 443)]), 'http-01');
  assert.equal(acmeChallengeType([managed(8443)]), 'http-01');
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AcmeAlpnCertificates, AcmeChallengeError } from './acme-challenges.js';

const pem = (n: number) => ({ certificate: `-----BEGIN CERTIFICATE-----\nQ${n}\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\nK${n}\n-----END PRIVATE KEY-----\n` });

/** An HAProxy without a runtime API that records when the relay is rendered in and out. */
const recording = () => {
  const answering: boolean[] = [];
  return { answering, haproxy: { runtime: () => null, answering: async (on: boolean) => void answering.push(on) } };
};

test('TLS-ALPN-01 certificates: a file per name listed in the crt-list, kept over a restart, removed with their entry; the relay rendered in for the first name and out after the last; bad names refused', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ostia-alpn-'));
  try {
    const crtList = join(dir, 'acme.crtlist');
    const first = recording();
    const certs = new AcmeAlpnCertificates(crtList, join(dir, 'certs'), first.haproxy);
    assert.equal(readFileSync(crtList, 'utf8'), '', 'the list exists before HAProxy first loads it');
    await certs.set('a.example.com', pem(1));
    await certs.set('b.example.com', pem(2));
    await certs.set('a.example.com', pem(3));
    const fileOf = (name: string) => join(dir, 'certs', `${name}.pem`);
    assert.equal(readFileSync(crtList, 'utf8'), `${fileOf('a.example.com')}\n${fileOf('b.example.com')}\n`);
    assert.equal(readFileSync(fileOf('a.example.com'), 'utf8'), pem(3).certificate);

    // No runtime API here, so every set asks for the relay; one with a relay rendered adds at run time instead.
    assert.deepEqual(first.answering, [true, true, true]);

    const second = recording();
    const restarted = new AcmeAlpnCertificates(crtList, join(dir, 'certs'), second.haproxy);
    assert.equal(restarted.size, 2);
    await restarted.remove('a.example.com');
    await restarted.remove('never-set.example.com');
    assert.equal(readFileSync(crtList, 'utf8'), `${fileOf('b.example.com')}\n`);
    assert.equal(existsSync(fileOf('a.example.com')), false);
    assert.deepEqual(second.answering, [], 'a name is left: the relay stays');
    await restarted.remove('b.example.com');
    assert.deepEqual(second.answering, [false], 'the last name gone: the relay is rendered out');
    assert.equal(readFileSync(crtList, 'utf8'), '');

    for (const bad of ['../escape', 'x', '*.example.com', 'a/b.example.com'])
      await assert.rejects(restarted.set(bad, pem(4)), AcmeChallengeError, bad);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

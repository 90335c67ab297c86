/**
 * Certificate references against the real embedded key manager, with real certificates from
 * openssl, stored by two projects: access, parsing (including expiry, with a clock moved
 * forward), CA/CRL pairing, and the graph create that checks the whole tree at once.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { startHarness, memberA, memberB, readerA, type Caller as HarnessCaller, type Harness } from '../../test/support/harness.js';
import { consumersOf, grantRead, storeContainer, storeSecret, WITH_KEY_MANAGER } from '../../test/support/tls-secrets.js';
import { VIP_SUBNET_ID } from '../config.js';
import { isApiError } from '../domain/errors.js';
import { createTestPki, type IssuedCert, type TestPki } from '../../test/support/test-pki.js';
import type { Caller } from '../keymanager/index.js';
import { forCreate, listenerTlsRefs, poolTlsRefs, verifyTlsRefs, type TlsChange } from './tls-refs.js';

let h: Harness;
let pki: TestPki;
let leaf: IssuedCert;
let other: IssuedCert;
let p12A: string;
let containerA: string;
let caA: string;
let crlA: string;
let p12B: string;

const ident = (c: HarnessCaller): Caller => ({ projectId: c.project ?? null, userId: 'u-test', roles: c.roles ?? [] });
const A = ident(memberA);
const B = ident(memberB);
const verify = (who: Caller, changes: TlsChange[], now?: Date) => verifyTlsRefs(h.runtime.keyManager, who, changes, now);

async function refused(p: Promise<unknown>, status: number, message: string | RegExp): Promise<string> {
  try {
    await p;
  } catch (e) {
    assert.ok(isApiError(e), String(e));
    assert.equal(e.status, status);
    if (typeof message === 'string') assert.equal(e.message, message);
    else assert.match(e.message, message);
    return e.message;
  }
  assert.fail('accepted');
}

before(async () => {
  h = await startHarness(WITH_KEY_MANAGER);
  pki = createTestPki();
  leaf = pki.leaf({ cn: 'www.project-a.example', dnsNames: ['www.project-a.example'], key: 'ec-p256' });
  other = pki.leaf({ cn: 'other.project-a.example', key: 'ec-p256' });
  p12A = await storeSecret(h, memberA, pki.pkcs12({ key: leaf, certs: [leaf, pki.intermediate] }));
  containerA = await storeContainer(h, memberA, { certificate: other.certPem, private_key: other.keyPem, intermediates: pki.intermediate.certPem });
  caA = await storeSecret(h, memberA, pki.root.certPem);
  crlA = await storeSecret(h, memberA, pki.crl(pki.root));
  const leafB = pki.leaf({ cn: 'www.project-b.example', key: 'ec-p256' });
  p12B = await storeSecret(h, memberB, pki.pkcs12({ key: leafB, certs: [leafB] }));
});
after(async () => {
  await h.close();
  pki.remove();
});

test('the owner may use its PKCS#12 secret, its container and its CA with CRL', async () => {
  await verify(A, [forCreate(listenerTlsRefs({ default_tls_container_ref: p12A, sni_container_refs: [containerA], client_ca_tls_container_ref: caA, client_crl_container_ref: crlA }))]);
  await verify(A, [forCreate(poolTlsRefs({ tls_container_ref: containerA, ca_tls_container_ref: caA, crl_container_ref: crlA }))]);
});

test('unreadable references are listed as Octavia lists them, every one of the request and nothing else', async () => {
  const missing = p12A.replace(/[0-9a-f]{12}$/, '000000000000');
  const message = await refused(
    verify(B, [forCreate(listenerTlsRefs({ default_tls_container_ref: p12B, sni_container_refs: [p12A, containerA] })), forCreate(poolTlsRefs({ ca_tls_container_ref: missing }))]),
    400,
    `Could not retrieve certificate: ['${p12A}', '${containerA}', '${missing}']`,
  );
  assert.ok(!message.includes(leaf.cn) && !message.includes(other.cn));
});

test('a reference to another key manager is refused, saying so', async () => {
  const foreign = 'https://barbican.example:9311/v1/secrets/0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9';
  const message = await refused(verify(A, [forCreate(listenerTlsRefs({ default_tls_container_ref: foreign, sni_container_refs: [p12A] }))]), 400, /^Could not retrieve certificate: \[/);
  assert.ok(message.startsWith(`Could not retrieve certificate: ['${foreign}'] ('${foreign}' is not a reference to this key manager: expected `), message);
});

test('a read ACL from the owner lets another project use the reference', async () => {
  const shared = await storeSecret(h, memberA, pki.pkcs12({ key: leaf, certs: [leaf] }));
  await refused(verify(B, [forCreate(poolTlsRefs({ tls_container_ref: shared }))]), 400, `Could not retrieve certificate: ['${shared}']`);
  await grantRead(h, memberA, shared, ['u-test']);
  await verify(B, [forCreate(poolTlsRefs({ tls_container_ref: shared }))]);
});

test('expired, mismatched or garbage material is a 400 naming the reference and the problem', async () => {
  const notAfter = new Date(new X509Certificate(leaf.certPem).validTo);
  await refused(verify(A, [forCreate(listenerTlsRefs({ default_tls_container_ref: p12A }))], new Date(notAfter.getTime() + 86_400_000)), 400,
    `Invalid TLS reference ${p12A}: the certificate expired on ${notAfter.toISOString()}`);
  const mismatched = await storeContainer(h, memberA, { certificate: leaf.certPem, private_key: other.keyPem });
  await refused(verify(A, [forCreate(listenerTlsRefs({ sni_container_refs: [mismatched] }))]), 400,
    `Invalid TLS reference ${mismatched}: the certificate and the private key do not match`);
  const garbage = await storeSecret(h, memberA, Buffer.from('not a certificate at all'));
  await refused(verify(A, [forCreate(listenerTlsRefs({ default_tls_container_ref: garbage }))]), 400, new RegExp(`^Invalid TLS reference ${garbage}: `));
});

test('a CA must be a secret of CA certificates, and a CRL must be signed by the object\'s CA, stored or new', async () => {
  await refused(verify(A, [forCreate(poolTlsRefs({ ca_tls_container_ref: containerA }))]), 400,
    `Invalid TLS reference ${containerA}: it is a certificate container; a CA certificate reference must be a secret`);
  const strangerCa = pki.ca('Stranger CA');
  const strangerCrl = await storeSecret(h, memberA, pki.crl(strangerCa));
  await refused(verify(A, [forCreate(listenerTlsRefs({ default_tls_container_ref: p12A, client_ca_tls_container_ref: caA, client_crl_container_ref: strangerCrl }))]), 400,
    `Invalid TLS reference ${strangerCrl}: the CRL is not signed by a CA certificate of ${caA}`);
  // An update naming only the CRL is checked against the CA the object already has...
  await verify(A, [{ named: poolTlsRefs({ crl_container_ref: crlA }), result: poolTlsRefs({ ca_tls_container_ref: caA, crl_container_ref: crlA }) }]);
  // ...and one naming only a new CA against the CRL the object keeps.
  const strangerCaRef = await storeSecret(h, memberA, strangerCa.certPem);
  await refused(verify(A, [{ named: poolTlsRefs({ ca_tls_container_ref: strangerCaRef }), result: poolTlsRefs({ ca_tls_container_ref: strangerCaRef, crl_container_ref: crlA }) }]), 400,
    `Invalid TLS reference ${crlA}: the CRL is not signed by a CA certificate of ${strangerCaRef}`);
});

test('graph create: the whole tree\'s unreadable references in one refusal, nothing written; a readable tree registers its consumers', async () => {
  const lbs = async () => (await h.runtime.db.kysely.selectFrom('load_balancer').select('id').execute()).length;
  const count = await lbs();
  const tree = (poolCert: string, listenerCert: string) => ({
    loadbalancer: {
      vip_subnet_id: VIP_SUBNET_ID,
      listeners: [{ protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: listenerCert, default_pool: { name: 'p' } }],
      pools: [{ name: 'p', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', tls_enabled: true, tls_container_ref: poolCert }],
    },
  });
  const denied = await h.request('POST', '/v2/lbaas/loadbalancers', { as: memberB, body: tree(containerA, p12A) });
  assert.equal(denied.statusCode, 400, denied.body);
  assert.deepEqual(denied.json(), { faultcode: 'Client', faultstring: `Could not retrieve certificate: ['${containerA}', '${p12A}']`, debuginfo: null });
  assert.ok(!denied.body.includes(leaf.cn) && !denied.body.includes(other.cn));
  assert.equal(await lbs(), count, 'nothing written');
  const reader = await h.request('POST', '/v2/lbaas/loadbalancers', { as: readerA, body: tree(containerA, p12A) });
  assert.equal(reader.statusCode, 403, 'who may create is judged before any certificate is read');

  const res = await h.request('POST', '/v2/lbaas/loadbalancers', { as: memberA, body: tree(containerA, p12A) });
  assert.equal(res.statusCode, 201, res.body);
  const lb = res.json().loadbalancer;
  assert.deepEqual(await consumersOf(h, memberA, p12A), [`octavia listener/${lb.listeners[0].id}`]);
  assert.ok((await consumersOf(h, memberA, containerA)).includes(`octavia pool/${lb.pools[0].id}`));
  assert.equal(await h.settled(lb.id), 'ACTIVE');
});

/**
 * The verify-certificates step against a real TLS endpoint standing in for the amphora's
 * HAProxy at the VIP: an "agent" that applies what it is pushed (or, to see a swap that did not
 * happen, ignores it), and the real key manager, database and probes.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate, randomUUID } from 'node:crypto';
import { createSecureContext, createServer, type Server } from 'node:tls';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { startHarness, memberA, type Harness } from '../../../test/support/harness.js';
import { insertAmphora } from '../../../test/support/health-rows.js';
import { WITH_KEY_MANAGER, storeContainer } from '../../../test/support/tls-secrets.js';
import type { StepContext } from '../../provider-contract/flow.js';
import { listenerRefColumns, type TlsChange } from '../../certificate-use/consumers.js';
import type { AmphoraConfig } from '../../domain/amphora-config.js';
import { createTestPki, type IssuedCert, type TestPki } from '../../../test/support/test-pki.js';
import { loopbackAddress } from '../../../test/support/amphora-fixtures.js';
import { VIP_SUBNET_ID } from '../../config.js';
import { LoopbackNetwork } from '../../network/loopback-network/loopback-network.js';
import { defaultConfig } from '../../config.js';
import type { AmphoraDeps } from './deps.js';
import { verifyCertificates } from './verify-certificates.js';

let h: Harness;
let pki: TestPki;
const refs: Record<string, string> = {};
const certs: Record<string, IssuedCert> = {};

/** What the stand-in HAProxy serves: PEMs as the agent gets them (certificate, chain, key), the first by default. */
let serving: string[] = [];
let honest = true;
const pushes: AmphoraConfig[] = [];
let server: Server;
let vip: string;
let port: number;

function contextFor(name: string | null) {
  const pem = serving.find((p) => name !== null && new X509Certificate(p).checkHost(name) !== undefined) ?? serving[0]!;
  return createSecureContext({ cert: pem, key: pem });
}

before(async () => {
  h = await startHarness({ ...WITH_KEY_MANAGER, api: { enabledProviders: ['noop', 'amphora'], defaultProvider: 'noop' } });
  await h.runtime.worker?.close();
  pki = createTestPki();
  for (const [name, host] of [['www', 'www.example.com'], ['www2', 'www.example.com'], ['other', 'other.example.com']] as const) {
    certs[name] = pki.leaf({ cn: host, dnsNames: [host], key: 'ec-p256' });
    refs[name] = await storeContainer(h, memberA, { certificate: certs[name]!.certPem, private_key: certs[name]!.keyPem, intermediates: pki.intermediate.certPem });
  }
  vip = loopbackAddress();
  server = createServer({ SNICallback: (name, cb) => cb(null, contextFor(name)) }, (socket) => socket.end());
  serving = [certs.www!.certPem + certs.www!.keyPem];
  // Without SNI the server's own context answers: the default certificate, as HAProxy does.
  server.setSecureContext({ cert: serving[0], key: serving[0] });
  await new Promise<void>((resolve) => server.listen(0, vip, resolve));
  port = (server.address() as AddressInfo).port;
});

after(async () => {
  server.close();
  pki.remove();
  await h.close();
});

const deps = (): AmphoraDeps =>
  ({
    keyManager: h.runtime.keyManager,
    dataPlane: true,
    activeStandby: false,
    settings: defaultConfig('/tmp/x').amphora,
    network: new LoopbackNetwork(defaultConfig('/tmp/x').amphora.managementNetwork),
    agent: async () => ({
      putConfig: async (config: AmphoraConfig) => {
        pushes.push(config);
        if (honest) {
          serving = config.listeners[0]!.tls!.certificates;
          server.setSecureContext({ cert: serving[0], key: serving[0] });
        }
        return { version: config.version, applied: 'runtime' as const };
      },
      close: () => undefined,
    }),
  }) as unknown as AmphoraDeps;

/** A TERMINATED_HTTPS listener serving `www` at the stand-in VIP, as the API leaves it before its job. */
async function listenerServingWww(): Promise<{ lbId: string; listenerId: string }> {
  // No worker runs here: the rows are settled by hand, as a job would leave them.
  const created = await h.request('POST', '/v2/lbaas/loadbalancers', { as: memberA, body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } } });
  assert.equal(created.statusCode, 201, created.body);
  const lb = created.json().loadbalancer as { id: string };
  await h.runtime.db.kysely.updateTable('load_balancer').set({ provisioning_status: 'ACTIVE' }).where('id', '=', lb.id).execute();
  const r = await h.request('POST', '/v2/lbaas/listeners', {
    as: memberA,
    body: { listener: { loadbalancer_id: lb.id, protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: refs.www } },
  });
  assert.equal(r.statusCode, 201, r.body);
  const db = h.runtime.db.kysely;
  await db.updateTable('load_balancer').set({ vip_address: vip }).where('id', '=', lb.id).execute();
  await db.updateTable('listener').set({ protocol_port: port }).where('id', '=', r.json().listener.id).execute();
  await insertAmphora(h, lb.id, { agent_url: 'https://127.80.0.10:9443' });
  serving = [certs.www!.certPem + certs.www!.keyPem];
  server.setSecureContext({ cert: serving[0], key: serving[0] });
  return { lbId: lb.id, listenerId: r.json().listener.id };
}

/** What the API does on a certificate change: the row names the new reference, the job payload both. */
async function changeCertificate(listenerId: string, ref: string): Promise<TlsChange> {
  const db = h.runtime.db.kysely;
  const before = await db.selectFrom('listener').selectAll().where('id', '=', listenerId).executeTakeFirstOrThrow();
  await db.updateTable('listener').set({ default_tls_container_ref: ref, provisioning_status: 'PENDING_UPDATE' }).where('id', '=', listenerId).execute();
  return { kind: 'listener', id: listenerId, previous: listenerRefColumns(before), requested: listenerRefColumns({ ...before, default_tls_container_ref: ref }) };
}

function stepContext(lbId: string, payload: Record<string, unknown>): StepContext {
  return { db: h.runtime.db, jobId: randomUUID(), loadBalancerId: lbId, operation: 'listener.update', payload, signal: new AbortController().signal, heartbeat: async () => {}, log: pino({ level: 'silent' }) };
}

const step = verifyCertificates(async () => deps(), 300);
const listenerRow = (id: string) => h.runtime.db.kysely.selectFrom('listener').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

test('a renewal the endpoint serves passes without a rollback', async () => {
  const { lbId, listenerId } = await listenerServingWww();
  const change = await changeCertificate(listenerId, refs.www2!);
  serving = [certs.www2!.certPem + certs.www2!.keyPem];
  server.setSecureContext({ cert: serving[0], key: serving[0] });
  pushes.length = 0;
  await step.run(stepContext(lbId, { tls_change: change }));
  assert.equal(pushes.length, 0);
  const row = await listenerRow(listenerId);
  assert.deepEqual([row.default_tls_container_ref, row.provisioning_status, row.status_reason], [refs.www2, 'PENDING_UPDATE', null]);
});

test('a swap that did not happen is rolled back: previous reference, pushed again, ERROR with the reason', async () => {
  const { lbId, listenerId } = await listenerServingWww();
  const change = await changeCertificate(listenerId, refs.www2!);
  honest = false;
  pushes.length = 0;
  try {
    await step.run(stepContext(lbId, { tls_change: change }));
  } finally {
    honest = true;
  }
  const row = await listenerRow(listenerId);
  assert.equal(row.default_tls_container_ref, refs.www);
  assert.equal(row.provisioning_status, 'ERROR');
  const served = new X509Certificate(certs.www!.certPem).fingerprint256;
  assert.equal(row.status_reason, `certificate change rolled back: listener ${listenerId} at ${vip}:${port} without a server name served the certificate with SHA-256 fingerprint ${served}, expected the default certificate ${refs.www2} (www.example.com)`);
  assert.equal(pushes.length, 1, 'the previous certificates were pushed again');
  assert.equal(new X509Certificate(pushes[0]!.listeners[0]!.tls!.certificates[0]!).fingerprint256, served);
});

test('a certificate for other names the endpoint serves passes: no rollback, whatever names the replaced one had', async () => {
  const { lbId, listenerId } = await listenerServingWww();
  const change = await changeCertificate(listenerId, refs.other!);
  serving = [certs.other!.certPem + certs.other!.keyPem];
  server.setSecureContext({ cert: serving[0], key: serving[0] });
  pushes.length = 0;
  await step.run(stepContext(lbId, { tls_change: change }));
  assert.equal(pushes.length, 0);
  const row = await listenerRow(listenerId);
  assert.deepEqual([row.default_tls_container_ref, row.provisioning_status, row.status_reason], [refs.other, 'PENDING_UPDATE', null]);
});

test('a replaced certificate still answering for its names is rolled back, and the previous one served again', async () => {
  const { lbId, listenerId } = await listenerServingWww();
  const change = await changeCertificate(listenerId, refs.other!);
  // The new default took, but www.example.com is still answered by the replaced certificate.
  serving = [certs.other!.certPem + certs.other!.keyPem, certs.www!.certPem + certs.www!.keyPem];
  server.setSecureContext({ cert: serving[0], key: serving[0] });
  pushes.length = 0;
  await step.run(stepContext(lbId, { tls_change: change }));
  const row = await listenerRow(listenerId);
  assert.equal(row.default_tls_container_ref, refs.www);
  assert.equal(row.provisioning_status, 'ERROR');
  const stale = new X509Certificate(certs.www!.certPem).fingerprint256;
  assert.equal(row.status_reason, `certificate change rolled back: listener ${listenerId} at ${vip}:${port} for www.example.com served the certificate with SHA-256 fingerprint ${stale}, expected the default certificate ${refs.other} (other.example.com), as no certificate covers www.example.com`);
  assert.equal(pushes.length, 1, 'the previous certificates were pushed again');
  assert.deepEqual(serving.map((p) => new X509Certificate(p).fingerprint256), [stale]);
});

test('a new listener that is not served as it should be fails the job; so does a rollback that does not take either', async () => {
  const { lbId, listenerId } = await listenerServingWww();
  await h.runtime.db.kysely.updateTable('listener').set({ default_tls_container_ref: refs.other! }).where('id', '=', listenerId).execute();
  await assert.rejects(step.run(stepContext(lbId, {})), /^Error: listener .* without a server name served the certificate with SHA-256 fingerprint .*, expected the default certificate/);

  const again = await listenerServingWww();
  const change = await changeCertificate(again.listenerId, refs.www2!);
  serving = [certs.other!.certPem + certs.other!.keyPem];
  server.setSecureContext({ cert: serving[0], key: serving[0] });
  honest = false;
  try {
    await assert.rejects(step.run(stepContext(again.lbId, { tls_change: change })), /certificate change rolled back: .*; the previous certificates are not served either: /);
  } finally {
    honest = true;
  }
});

test('nothing to verify: no TLS listener changed, or the load balancer is disabled', async () => {
  const { lbId, listenerId } = await listenerServingWww();
  await h.runtime.db.kysely.updateTable('listener').set({ provisioning_status: 'ACTIVE', default_tls_container_ref: refs.other! }).where('id', '=', listenerId).execute();
  await step.run(stepContext(lbId, {}));
  await h.runtime.db.kysely.updateTable('listener').set({ provisioning_status: 'PENDING_UPDATE' }).where('id', '=', listenerId).execute();
  await h.runtime.db.kysely.updateTable('load_balancer').set({ admin_state_up: 0 }).where('id', '=', lbId).execute();
  await step.run(stepContext(lbId, {}));
});

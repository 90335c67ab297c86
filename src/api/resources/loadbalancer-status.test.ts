import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate, randomUUID } from 'node:crypto';
import { startHarness, memberA, type Harness } from '../../../test/support/harness.js';
import { storeContainer, storeSecret, WITH_KEY_MANAGER } from '../../../test/support/tls-secrets.js';
import { activeLoadBalancer, seedListener } from '../../../test/support/seed-rows.js';
import { createTestPki, type TestPki } from '../../../test/support/test-pki.js';
import { timestamp } from '../../domain/time.js';

let h: Harness;
let pki: TestPki;
before(async () => {
  h = await startHarness(WITH_KEY_MANAGER);
  pki = createTestPki();
});
after(async () => {
  await h.close();
  pki.remove();
});

async function listener(lbId: string, body: Record<string, unknown>): Promise<string> {
  const r = await h.request('POST', '/v2/lbaas/listeners', { as: memberA, body: { listener: { loadbalancer_id: lbId, ...body } } });
  assert.equal(r.statusCode, 201, r.body);
  assert.equal(await h.settled(lbId), 'ACTIVE');
  return r.json().listener.id;
}

interface StatusListener {
  id: string;
  provisioning_status: string;
  certificate?: { not_after: string; days_to_expiry: number; warning: string | null };
  status_reason?: string;
}

async function statusListeners(lbId: string): Promise<Map<string, StatusListener>> {
  const r = await h.request('GET', `/v2/lbaas/loadbalancers/${lbId}/status`, { as: memberA });
  assert.equal(r.statusCode, 200, r.body);
  return new Map((r.json().statuses.loadbalancer.listeners as StatusListener[]).map((l) => [l.id, l]));
}

test('the status tree shows, for listeners serving certificates, the first to expire and its warning, and why a change was rolled back', async () => {
  const lb = await activeLoadBalancer(h);
  const www = pki.leaf({ cn: 'www.example.test', dnsNames: ['www.example.test'], key: 'ec-p256', days: 45 });
  const api = pki.leaf({ cn: 'api.example.test', dnsNames: ['api.example.test'], key: 'ec-p256', days: 10 });
  const p12 = await storeSecret(h, memberA, pki.pkcs12({ key: www, certs: [www] }));
  const container = await storeContainer(h, memberA, { certificate: api.certPem, private_key: api.keyPem });
  // A client CA expiring sooner is not what clients of the listener are served.
  const shortCa = pki.leaf({ cn: 'not served', key: 'ec-p256', days: 2 });
  const ca = await storeSecret(h, memberA, shortCa.certPem);

  const both = await listener(lb.id, { protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: p12, sni_container_refs: [container], client_authentication: 'OPTIONAL', client_ca_tls_container_ref: ca });
  const far = await listener(lb.id, { protocol: 'TERMINATED_HTTPS', protocol_port: 8443, default_tls_container_ref: p12 });
  const plain = await listener(lb.id, { protocol: 'HTTP', protocol_port: 80 });

  // The worker records once the job has finished, a moment after the tree settles.
  const deadline = Date.now() + 5000;
  let tree = await statusListeners(lb.id);
  while (!tree.get(both)?.certificate || !tree.get(far)?.certificate) {
    if (Date.now() > deadline) assert.fail(`no certificate in ${JSON.stringify([...tree.values()])}`);
    await new Promise((r) => setTimeout(r, 10));
    tree = await statusListeners(lb.id);
  }

  const soon = tree.get(both)!.certificate!;
  assert.equal(soon.not_after, timestamp(new Date(new X509Certificate(api.certPem).validTo)));
  assert.ok(soon.days_to_expiry > 9.9 && soon.days_to_expiry <= 10, String(soon.days_to_expiry));
  assert.match(soon.warning!, /^expires in (9|10) days$/);
  const later = tree.get(far)!.certificate!;
  assert.equal(later.not_after, timestamp(new Date(new X509Certificate(www.certPem).validTo)));
  assert.equal(later.warning, null);
  assert.deepEqual(Object.keys(tree.get(plain)!).sort(), ['id', 'name', 'operating_status', 'pools', 'provisioning_status', 'stats']);
  assert.equal(tree.get(both)!.status_reason, undefined);

  const reason = 'the served certificate did not match the new one; the previous one was put back';
  await h.runtime.db.kysely.updateTable('listener').set({ status_reason: reason }).where('id', '=', far).execute();
  assert.equal((await statusListeners(lb.id)).get(far)!.status_reason, reason);
});

test("the status tree gives each listener its statistics, the same sums as its own stats, and the load balancer's status_reason", async () => {
  const lb = await activeLoadBalancer(h);
  const busy = await seedListener(h, lb, 'HTTP', 80);
  const quiet = await seedListener(h, lb, 'TCP', 81);
  // What the health manager stores per (listener, amphora): the old amphora's history stays after a failover.
  const counters = (amphora: string, n: number) => ({ listener_id: busy, amphora_id: amphora, bytes_in: 1000 * n, bytes_out: 2000 * n, active_connections: n, total_connections: 10 * n, request_errors: n - 1, updated_at: Date.now() });
  await h.runtime.db.kysely.insertInto('listener_statistics').values([counters(randomUUID(), 1), counters(randomUUID(), 3)]).execute();

  const root = async () => {
    const r = await h.request('GET', `/v2/lbaas/loadbalancers/${lb.id}/status`, { as: memberA });
    assert.equal(r.statusCode, 200, r.body);
    return r.json().statuses.loadbalancer;
  };
  const listeners = new Map<string, { stats: object }>((await root()).listeners.map((l: { id: string; stats: object }) => [l.id, l]));
  const own = async (id: string) => (await h.request('GET', `/v2/lbaas/listeners/${id}/stats`, { as: memberA })).json().stats;
  assert.deepEqual(listeners.get(busy)!.stats, { bytes_in: 4000, bytes_out: 8000, active_connections: 4, total_connections: 40, request_errors: 2 });
  assert.deepEqual(listeners.get(busy)!.stats, await own(busy));
  assert.deepEqual(listeners.get(quiet)!.stats, { bytes_in: 0, bytes_out: 0, active_connections: 0, total_connections: 0, request_errors: 0 });
  assert.deepEqual(listeners.get(quiet)!.stats, await own(quiet));

  assert.equal((await root()).status_reason, undefined);
  const reason = 'failover failed: a new amphora could not be built; it is retried automatically, less and less often';
  await h.runtime.db.kysely.updateTable('load_balancer').set({ status_reason: reason }).where('id', '=', lb.id).execute();
  assert.equal((await root()).status_reason, reason);
});

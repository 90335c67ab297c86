import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { startHarness, memberA, type Harness } from '../../test/support/harness.js';
import { WITH_KEY_MANAGER, consumersOf, storeContainer } from '../../test/support/tls-secrets.js';
import { createTestPki, type TestPki } from '../../test/support/test-pki.js';
import { VIP_SUBNET_ID } from '../config.js';
import { consumerOf, listenerRefColumns, releaseReplaced, syncConsumers, type TlsChange } from './consumers.js';

let h: Harness;
let pki: TestPki;
const log = pino({ level: 'silent' });

before(async () => {
  h = await startHarness(WITH_KEY_MANAGER);
  pki = createTestPki();
});
after(async () => {
  pki.remove();
  await h.close();
});

async function certificate(cn: string): Promise<string> {
  const leaf = pki.leaf({ cn, dnsNames: [cn], key: 'ec-p256' });
  return storeContainer(h, memberA, { certificate: leaf.certPem, private_key: leaf.keyPem });
}

test('after an update’s job, the listener keeps consuming what it serves: the new reference, or the previous one after a rollback', async () => {
  const [previous, requested] = await Promise.all([certificate('www.example.com'), certificate('www.example.com')]);
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', {
    as: memberA,
    body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, listeners: [{ protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: previous }] } },
  });
  assert.equal(r.statusCode, 201, r.body);
  assert.equal(await h.settled(r.json().loadbalancer.id), 'ACTIVE');
  const db = h.runtime.db.kysely;
  const row = await db.selectFrom('listener').selectAll().where('load_balancer_id', '=', r.json().loadbalancer.id).executeTakeFirstOrThrow();
  const me = `octavia listener/${row.id}`;
  const change: TlsChange = { kind: 'listener', id: row.id, previous: listenerRefColumns(row), requested: { ...listenerRefColumns(row), default_tls_container_ref: requested } };
  // What the API does at the update: the new reference registered, the previous one kept.
  await syncConsumers(h.runtime.keyManager, log, consumerOf('listener', row.id), [], [requested]);
  assert.deepEqual([await consumersOf(h, memberA, previous), await consumersOf(h, memberA, requested)], [[me], [me]]);

  // Rolled back: the row names the previous reference again.
  await releaseReplaced(h.runtime.keyManager, h.runtime.db, log, change);
  assert.deepEqual([await consumersOf(h, memberA, previous), await consumersOf(h, memberA, requested)], [[me], []]);

  // Went through: the row names the new one.
  await syncConsumers(h.runtime.keyManager, log, consumerOf('listener', row.id), [], [requested]);
  await db.updateTable('listener').set({ default_tls_container_ref: requested }).where('id', '=', row.id).execute();
  await releaseReplaced(h.runtime.keyManager, h.runtime.db, log, change);
  assert.deepEqual([await consumersOf(h, memberA, previous), await consumersOf(h, memberA, requested)], [[], [me]]);

  // Without a change, or for an object gone meanwhile, nothing happens.
  await releaseReplaced(h.runtime.keyManager, h.runtime.db, log, null);
  await releaseReplaced(h.runtime.keyManager, h.runtime.db, log, { ...change, id: '00000000-0000-4000-8000-000000000000' });
  assert.deepEqual(await consumersOf(h, memberA, requested), [me]);
});

/**
 * A load balancer of the amphora provider (compute.driver noop: nothing boots) holding one object
 * of every kind whose fields reach haproxy.cfg: an HTTP listener with an L7 policy and rule, a
 * TERMINATED_HTTPS listener with a certificate, a pool that re-encrypts to its members with a
 * member and an HTTP monitor, and a second pool with neither. The field-grammar tests change
 * these objects through the API and check what an amphora would make of them.
 */
import assert from 'node:assert/strict';
import { MEMBER_SUBNET_ID, VIP_SUBNET_ID } from '../../src/config.js';
import type { TableName } from '../../src/db/schema.js';
import { createTestPki } from './test-pki.js';
import { memberA, startHarness, type Harness } from './harness.js';
import { storeContainer, WITH_KEY_MANAGER } from './tls-secrets.js';

export interface Scene {
  readonly h: Harness;
  readonly lb: string;
  readonly httpListener: string;
  readonly httpsListener: string;
  readonly pool: string;
  readonly barePool: string;
  readonly member: string;
  readonly monitor: string;
  readonly policy: string;
  readonly rule: string;
  readonly certificateRef: string;
  /** Sends a request as the load balancer's owner and waits until the load balancer settles. */
  send(method: string, url: string, body?: unknown): Promise<{ status: number; body: Record<string, any> }>;
}

export async function startScene(): Promise<Scene> {
  const h = await startHarness({ ...WITH_KEY_MANAGER, api: { enabledProviders: ['amphora'], defaultProvider: 'amphora' }, compute: { driver: 'noop' } });
  const pki = createTestPki();
  let certificateRef: string;
  try {
    const leaf = pki.leaf({ cn: 'www.example.com', dnsNames: ['www.example.com'], key: 'ec-p256' });
    certificateRef = await storeContainer(h, memberA, { certificate: leaf.certPem, private_key: leaf.keyPem, intermediates: pki.intermediate.certPem });
  } finally {
    pki.remove();
  }
  let lbId = '';
  const send: Scene['send'] = async (method, url, body) => {
    const r = await h.request(method, url, { body, as: memberA });
    if (lbId) await h.settled(lbId);
    return { status: r.statusCode, body: r.body ? r.json() : {} };
  };
  const made = async (method: string, url: string, body: unknown) => {
    const r = await send(method, url, body);
    assert.ok(r.status < 300, `${method} ${url}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const lb = (await made('POST', '/v2/lbaas/loadbalancers', { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } })).loadbalancer.id as string;
  lbId = lb;
  await h.settled(lb);
  const httpListener = (await made('POST', '/v2/lbaas/listeners', { listener: { loadbalancer_id: lb, protocol: 'HTTP', protocol_port: 80 } })).listener.id;
  const httpsListener = (await made('POST', '/v2/lbaas/listeners', { listener: { loadbalancer_id: lb, protocol: 'TERMINATED_HTTPS', protocol_port: 443, default_tls_container_ref: certificateRef } })).listener.id;
  const pool = (await made('POST', '/v2/lbaas/pools', { pool: { listener_id: httpsListener, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', tls_enabled: true } })).pool.id;
  const barePool = (await made('POST', '/v2/lbaas/pools', { pool: { listener_id: httpListener, protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' } })).pool.id;
  const member = (await made('POST', `/v2/lbaas/pools/${pool}/members`, { member: { address: '127.32.0.5', protocol_port: 8080, subnet_id: MEMBER_SUBNET_ID } })).member.id;
  const monitor = (await made('POST', '/v2/lbaas/healthmonitors', { healthmonitor: { pool_id: pool, type: 'HTTP', delay: 5, timeout: 3, max_retries: 2 } })).healthmonitor.id;
  const policy = (await made('POST', '/v2/lbaas/l7policies', { l7policy: { listener_id: httpListener, action: 'REDIRECT_TO_URL', redirect_url: 'https://example.com/' } })).l7policy.id;
  const rule = (await made('POST', `/v2/lbaas/l7policies/${policy}/rules`, { rule: { type: 'PATH', compare_type: 'STARTS_WITH', value: '/api' } })).rule.id;
  return { h, lb, httpListener, httpsListener, pool, barePool, member, monitor, policy, rule, certificateRef, send };
}

/** The tables a change could touch, parents first. */
const TABLES: TableName[] = ['load_balancer', 'listener', 'pool', 'member', 'health_monitor', 'l7policy', 'l7rule'];

export type Rows = Record<string, ReadonlyArray<Record<string, unknown>>>;

/** Every row of those tables, in a stable order. */
export async function snapshotRows(h: Harness): Promise<Rows> {
  const parts = await Promise.all(TABLES.map((t) => h.runtime.db.kysely.selectFrom(t).selectAll().orderBy('id').execute()));
  return Object.fromEntries(TABLES.map((t, i) => [t, parts[i] as Array<Record<string, unknown>>]));
}

/** Puts `rows` back in place of what the tables hold now. */
export async function restoreRows(h: Harness, rows: Rows): Promise<void> {
  await h.runtime.db.kysely.transaction().execute(async (tx) => {
    for (const t of [...TABLES].reverse()) await tx.deleteFrom(t).execute();
    for (const t of TABLES) if (rows[t]!.length) await tx.insertInto(t).values(rows[t] as never).execute();
  });
}

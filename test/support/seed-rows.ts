/**
 * Rows written straight into the database for tests of child resources (health monitors,
 * L7 policies and rules), so they do not depend on the listener and pool endpoints.
 */
import { randomUUID } from 'node:crypto';
import assert from 'node:assert/strict';
import { VIP_SUBNET_ID } from '../../src/config.js';
import { timestamp } from '../../src/domain/time.js';
import { ListenerDefaults } from '../../src/domain/defaults.js';
import type { ListenerProtocol, PoolProtocol } from '../../src/domain/enums.js';
import { memberA, type Caller, type Harness } from './harness.js';

export interface SeededLb {
  id: string;
  project_id: string;
}

/** A load balancer created through the API and settled ACTIVE. */
export async function activeLoadBalancer(h: Harness, as: Caller = memberA): Promise<SeededLb> {
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID } }, as });
  assert.equal(r.statusCode, 201, r.body);
  const lb = r.json().loadbalancer;
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  return lb;
}

const statuses = () => ({ provisioning_status: 'ACTIVE' as const, operating_status: 'ONLINE' as const, created_at: timestamp(), updated_at: null });

export async function seedPool(h: Harness, lb: SeededLb, protocol: PoolProtocol): Promise<string> {
  const id = randomUUID();
  await h.runtime.db.kysely
    .insertInto('pool')
    .values({
      id, project_id: lb.project_id, load_balancer_id: lb.id, name: '', description: '', admin_state_up: 1, protocol, lb_algorithm: 'ROUND_ROBIN',
      session_persistence: null, tls_enabled: 0, tls_container_ref: null, ca_tls_container_ref: null, crl_container_ref: null,
      tls_ciphers: null, tls_versions: null, alpn_protocols: null, ...statuses(),
    })
    .execute();
  return id;
}

export async function seedListener(h: Harness, lb: SeededLb, protocol: ListenerProtocol, port: number, defaultPoolId: string | null = null): Promise<string> {
  const id = randomUUID();
  await h.runtime.db.kysely
    .insertInto('listener')
    .values({
      id, project_id: lb.project_id, load_balancer_id: lb.id, name: '', description: '', admin_state_up: 1, protocol, protocol_port: port,
      connection_limit: -1, default_pool_id: defaultPoolId, insert_headers: '{}',
      timeout_client_data: ListenerDefaults.timeout_client_data, timeout_member_connect: ListenerDefaults.timeout_member_connect,
      timeout_member_data: ListenerDefaults.timeout_member_data, timeout_tcp_inspect: ListenerDefaults.timeout_tcp_inspect,
      default_tls_container_ref: null, sni_container_refs: '[]', client_authentication: 'NONE', client_ca_tls_container_ref: null,
      client_crl_container_ref: null, allowed_cidrs: null, tls_ciphers: null, tls_versions: null, alpn_protocols: null,
      hsts_max_age: null, hsts_include_subdomains: 0, hsts_preload: 0, ...statuses(),
    })
    .execute();
  return id;
}

/** provisioning_status of one row, to check §5.2's side effects. */
export async function statusOf(h: Harness, table: 'load_balancer' | 'listener' | 'pool' | 'health_monitor' | 'l7policy' | 'l7rule', id: string): Promise<string | undefined> {
  const row = await h.runtime.db.kysely.selectFrom(table).select('provisioning_status').where('id', '=', id).executeTakeFirst();
  return row?.provisioning_status;
}

/**
 * Keeps the worker off one load balancer (a leased "running" job blocks its queue), so the
 * pending statuses a request leaves behind can be observed. Returns the release function.
 */
export async function holdJobs(h: Harness, lbId: string): Promise<() => Promise<void>> {
  const id = randomUUID();
  await h.runtime.db.kysely
    .insertInto('job')
    .values({
      id, load_balancer_id: lbId, provider: 'noop', operation: 'loadbalancer.update', payload: '{}', state: 'running', next_step: 0, attempts: 1,
      lease_owner: 'test-hold', lease_expires_at: Date.now() + 3_600_000, error: null, created_at: '0000', updated_at: null,
    })
    .execute();
  return async () => {
    await h.runtime.db.kysely.deleteFrom('job').where('id', '=', id).execute();
    h.runtime.deps.jobs.notify();
  };
}

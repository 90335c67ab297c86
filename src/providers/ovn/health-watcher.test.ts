/**
 * The watcher against a real ovsdb-server holding the OVN Southbound schema, whose
 * Service_Monitor rows the test writes as northd and ovn-controller would, and Ostia's database
 * (SQLite, or PostgreSQL when OSTIA_TEST_DATABASE_URL names a server) holding the trees.
 */
import type { HealthMonitorType, ListenerProtocol, OperatingStatus, PoolProtocol } from '../../domain/enums.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { migrate, openDatabase, type Db } from '../../db/database.js';
import { ListenerDefaults } from '../../domain/defaults.js';
import type { StatusChange, StatusTable } from '../../operating-status/derivation.js';
import { OvsdbClient, type RowInput } from '../../ovn/ovsdb/index.js';
import { SB_SCHEMA, TestOvsdbServer } from '../../../test/support/ovsdb-server.js';
import { freshPostgresDatabase } from '../../../test/support/postgres.js';
import { SB_DB } from '../../ovn/connection.js';
import { OvnHealthWatcher } from './health-watcher.js';
import { unmet } from '../../../test/support/requirements.js';

const run = promisify(execFile);
const skip = unmet('ovsdb');
const fast = { backoffInitialMs: 50, backoffMaxMs: 400, connectTimeoutMs: 10_000, probeIntervalMs: 0 };
const PROJECT = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';

/** What a test opened, closed in reverse order after it. */
function cleanups(t: { after(fn: () => Promise<void>): void }): (close: () => unknown) => void {
  const list: Array<() => unknown> = [];
  t.after(async () => {
    for (const close of list.reverse()) await close();
  });
  return (close) => list.push(close);
}

/** SQLite in memory, or a fresh PostgreSQL database when OSTIA_TEST_DATABASE_URL names a server (npm test's second pass). */
async function database(onClose: (close: () => unknown) => void): Promise<Db> {
  const server = process.env.OSTIA_TEST_DATABASE_URL;
  const pg = server ? await freshPostgresDatabase(server) : null;
  onClose(() => pg?.drop());
  const db = await openDatabase(pg?.url ?? 'sqlite:');
  onClose(() => db.close());
  await migrate(db);
  return db;
}

/** How many monitors the server holds, by its own account (an oracle independent of our client). */
async function serverMonitors(server: TestOvsdbServer): Promise<number> {
  const { stdout } = await run('ovs-appctl', ['-t', join(server.dir, 'ctl'), 'memory/show']);
  return Number(/monitors:(\d+)/.exec(stdout)?.[1] ?? 0);
}

const common = (operating_status: OperatingStatus) => ({
  id: randomUUID(), project_id: PROJECT, name: '', admin_state_up: 1, provisioning_status: 'ACTIVE' as const, operating_status, created_at: '2026-01-01T00:00:00', updated_at: null,
});

/** Rows of one load balancer, written straight into the database as its provider would leave them. */
class Seed {
  constructor(private readonly db: Db) {}

  async lb(provider: string, operating_status: OperatingStatus = 'ONLINE'): Promise<string> {
    const row = {
      ...common(operating_status), description: '', vip_address: '10.0.0.100', vip_port_id: randomUUID(), vip_subnet_id: randomUUID(), vip_network_id: randomUUID(),
      vip_qos_policy_id: null, vip_sg_ids: '[]', vip_vnic_type: 'normal' as const, additional_vips: '[]', provider, flavor_id: null, availability_zone: null,
      status_reason: null, config_version: 1,
    };
    await this.db.kysely.insertInto('load_balancer').values(row).execute();
    return row.id;
  }

  async listener(lbId: string, protocol: ListenerProtocol, port: number, poolId: string): Promise<string> {
    const row = {
      ...common('ONLINE'), load_balancer_id: lbId, description: '', protocol, protocol_port: port, connection_limit: -1, default_pool_id: poolId, insert_headers: '{}',
      timeout_client_data: ListenerDefaults.timeout_client_data, timeout_member_connect: ListenerDefaults.timeout_member_connect,
      timeout_member_data: ListenerDefaults.timeout_member_data, timeout_tcp_inspect: ListenerDefaults.timeout_tcp_inspect,
      default_tls_container_ref: null, sni_container_refs: '[]', client_authentication: 'NONE', client_ca_tls_container_ref: null, client_crl_container_ref: null,
      allowed_cidrs: null, tls_ciphers: null, tls_versions: null, alpn_protocols: null, hsts_max_age: null, hsts_include_subdomains: 0, hsts_preload: 0, status_reason: null,
    };
    await this.db.kysely.insertInto('listener').values(row).execute();
    return row.id;
  }

  /** A pool, with a health monitor of this type unless null. */
  async pool(lbId: string, protocol: PoolProtocol, monitorType: HealthMonitorType | null, operating_status: OperatingStatus = 'ONLINE'): Promise<string> {
    const row = {
      ...common(operating_status), load_balancer_id: lbId, description: '', protocol, lb_algorithm: 'SOURCE_IP_PORT', session_persistence: null, tls_enabled: 0,
      tls_container_ref: null, ca_tls_container_ref: null, crl_container_ref: null, tls_ciphers: null, tls_versions: null, alpn_protocols: null,
    };
    await this.db.kysely.insertInto('pool').values(row).execute();
    if (monitorType) {
      await this.db.kysely
        .insertInto('health_monitor')
        .values({
          ...common('ONLINE'), pool_id: row.id, type: monitorType, delay: 5, timeout: 3, max_retries: 2, max_retries_down: 2,
          http_method: null, url_path: null, expected_codes: null, http_version: null, domain_name: null,
        })
        .execute();
    }
    return row.id;
  }

  async member(poolId: string, address: string, port: number, operating_status: OperatingStatus): Promise<string> {
    const row = { ...common(operating_status), pool_id: poolId, address, protocol_port: port, weight: 1, backup: 0, subnet_id: null, monitor_address: null, monitor_port: null, vnic_type: 'normal' as const };
    await this.db.kysely.insertInto('member').values(row).execute();
    return row.id;
  }
}

/** Operating status of each object, by id. */
async function statuses(db: Db, ids: Record<StatusTable, string[]>): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [table, list] of Object.entries(ids) as Array<[StatusTable, string[]]>) {
    if (!list.length) continue;
    for (const r of await db.kysely.selectFrom(table).select(['id', 'operating_status']).where('id', 'in', list).execute()) out[r.id] = r.operating_status;
  }
  return out;
}

/** Counts the watcher's passes, so a test can wait for the next one without sleeping. */
class Passes {
  count = 0;
  readonly applied: StatusChange[][] = [];
  private wake: (() => void) | undefined;

  constructor(watcher: OvnHealthWatcher) {
    watcher.on('applied', (changes: StatusChange[]) => {
      this.count++;
      this.applied.push(changes);
      this.wake?.();
    });
  }

  /** Resolves once a pass after the `seen`-th has finished; false after `ms` without one. */
  async after(seen: number, ms: number): Promise<boolean> {
    if (this.count > seen) return true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
  }
}

/** Waits, pass by pass (at most 50 passes and 20 s), until the database holds `expected`. */
async function settles(passes: Passes, db: Db, ids: Record<StatusTable, string[]>, expected: Record<string, string>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  let seen: Record<string, string> = {};
  for (let i = 0; i < 50 && Date.now() < deadline; i++) {
    const before = passes.count;
    seen = await statuses(db, ids);
    if (Object.entries(expected).every(([id, status]) => seen[id] === status)) return;
    await passes.after(before, deadline - Date.now());
  }
  assert.deepEqual(Object.fromEntries(Object.keys(expected).map((id) => [id, seen[id]])), expected, what);
}

const monitorRow = (logicalPort: string, ip: string, port: number, protocol: 'tcp' | 'udp', status: string[]): RowInput => ({
  ip, port, protocol, logical_port: logicalPort, src_ip: '10.0.0.2', src_mac: '0a:00:00:00:00:02', status,
});
const setStatus = (logicalPort: string, status: string): { op: 'update'; table: string; where: [string, '==', string][]; row: RowInput } => ({
  op: 'update', table: 'Service_Monitor', where: [['logical_port', '==', logicalPort]], row: { status: status ? [status] : [] },
});

test('Service_Monitor verdicts become member, pool and load balancer statuses of ovn load balancers only, across an ovsdb-server restart', { skip }, async (t) => {
  const onClose = cleanups(t);
  const db = await database(onClose);
  const seed = new Seed(db);

  // ovn LB: a TCP pool with a TCP monitor (a1, a2), a UDP pool with a UDP-CONNECT monitor whose
  // member has a1's address and port, and a pool without a monitor holding the same backend again.
  const lbA = await seed.lb('ovn');
  const tcpPool = await seed.pool(lbA, 'TCP', 'TCP');
  const listener = await seed.listener(lbA, 'TCP', 80, tcpPool);
  const a1 = await seed.member(tcpPool, '10.0.0.11', 8080, 'NO_MONITOR');
  const a2 = await seed.member(tcpPool, '10.0.0.12', 8080, 'NO_MONITOR');
  const udpPool = await seed.pool(lbA, 'UDP', 'UDP-CONNECT');
  const u1 = await seed.member(udpPool, '10.0.0.11', 8080, 'NO_MONITOR');
  const plainPool = await seed.pool(lbA, 'TCP', null);
  const n1 = await seed.member(plainPool, '10.0.0.11', 8080, 'NO_MONITOR');
  // A second ovn LB with an IPv6 member stored in a long form, its backend offline.
  const lbV = await seed.lb('ovn');
  const v6Pool = await seed.pool(lbV, 'TCP', 'TCP');
  const v1 = await seed.member(v6Pool, 'fd00:0:0:0::13', 8080, 'NO_MONITOR');
  // An amphora LB with a1's backend, its member in ERROR: OVN's verdicts are not about it.
  const lbB = await seed.lb('amphora', 'DEGRADED');
  const ampPool = await seed.pool(lbB, 'TCP', 'TCP', 'DEGRADED');
  const b1 = await seed.member(ampPool, '10.0.0.11', 8080, 'ERROR');
  const ids: Record<StatusTable, string[]> = {
    load_balancer: [lbA, lbV, lbB], listener: [listener], pool: [tcpPool, udpPool, plainPool, v6Pool, ampPool], member: [a1, a2, u1, n1, v1, b1],
  };

  const server = await TestOvsdbServer.start({ schemas: [SB_SCHEMA] });
  onClose(() => server.close());
  const sb = await OvsdbClient.connect(server.tcpRemote, fast);
  onClose(() => sb.close());
  await sb.transact(SB_DB, [
    { op: 'insert', table: 'Service_Monitor', row: monitorRow('lsp-a1', '10.0.0.11', 8080, 'tcp', []) },
    { op: 'insert', table: 'Service_Monitor', row: monitorRow('lsp-a2', '10.0.0.12', 8080, 'tcp', []) },
    { op: 'insert', table: 'Service_Monitor', row: monitorRow('lsp-a1', '10.0.0.11', 8080, 'udp', ['online']) },
    { op: 'insert', table: 'Service_Monitor', row: monitorRow('lsp-v1', 'fd00::13', 8080, 'tcp', ['offline']) },
    { op: 'insert', table: 'Service_Monitor', row: monitorRow('lsp-x', '10.0.0.99', 8080, 'tcp', ['offline']) },
  ]);

  const watcher = new OvnHealthWatcher({ db, sb, log: pino({ level: 'silent' }), batchMs: 20, retryMs: 100 });
  const passes = new Passes(watcher);
  onClose(() => watcher.close());
  await watcher.start();

  // The first pass: no verdict yet for a1 and a2 (empty status), so ONLINE as upstream; the
  // others as their rows say; unprobed and amphora members untouched.
  const unaffected = { [n1]: 'NO_MONITOR', [b1]: 'ERROR', [ampPool]: 'DEGRADED', [lbB]: 'DEGRADED' };
  assert.deepEqual(await statuses(db, ids), {
    [lbA]: 'ONLINE', [lbV]: 'ERROR', [listener]: 'ONLINE', [tcpPool]: 'ONLINE', [udpPool]: 'ONLINE', [plainPool]: 'ONLINE', [v6Pool]: 'ERROR',
    [a1]: 'ONLINE', [a2]: 'ONLINE', [u1]: 'ONLINE', [v1]: 'ERROR', ...unaffected,
  });

  await sb.transact(SB_DB, [setStatus('lsp-a1', 'online'), setStatus('lsp-a2', 'online')]);
  await sb.transact(SB_DB, [{ ...setStatus('lsp-a1', 'offline'), where: [['logical_port', '==', 'lsp-a1'], ['protocol', '==', 'tcp']] }]);
  await settles(passes, db, ids, { [a1]: 'ERROR', [tcpPool]: 'DEGRADED', [lbA]: 'DEGRADED' }, 'one member offline');
  assert.deepEqual(await statuses(db, ids), {
    [lbA]: 'DEGRADED', [lbV]: 'ERROR', [listener]: 'ONLINE', [tcpPool]: 'DEGRADED', [udpPool]: 'ONLINE', [plainPool]: 'ONLINE', [v6Pool]: 'ERROR',
    [a1]: 'ERROR', [a2]: 'ONLINE', [u1]: 'ONLINE', [v1]: 'ERROR', ...unaffected,
  });

  await sb.transact(SB_DB, [setStatus('lsp-a2', 'offline')]);
  await settles(passes, db, ids, { [a2]: 'ERROR', [tcpPool]: 'ERROR', [lbA]: 'ERROR' }, 'every member offline');
  assert.deepEqual(await statuses(db, { listener: [], load_balancer: [lbB], pool: [udpPool, ampPool], member: [u1, n1, b1] }), { [udpPool]: 'ONLINE', [u1]: 'ONLINE', ...unaffected });

  // Both back in one transaction: one notification, one pass for both.
  await sb.transact(SB_DB, [{ ...setStatus('lsp-a1', 'online'), where: [['logical_port', '==', 'lsp-a1'], ['protocol', '==', 'tcp']] }, setStatus('lsp-a2', 'online')]);
  await settles(passes, db, ids, { [a1]: 'ONLINE', [a2]: 'ONLINE', [tcpPool]: 'ONLINE', [lbA]: 'ONLINE' }, 'back online');
  assert.ok(passes.applied.some((c) => c.some((x) => x.id === a1) && c.some((x) => x.id === a2)), 'both members changed in one pass');
  assert.ok(passes.applied.every((c) => c.every((x) => !Object.keys(unaffected).includes(x.id))), 'amphora and unprobed rows never changed');

  // A verdict that changes while the server is down is picked up after the reconnect.
  const reconnected = once(sb, 'reconnected');
  await server.stop();
  await run('ovsdb-tool', ['transact', server.dbFiles[0]!, JSON.stringify([SB_DB, { op: 'update', table: 'Service_Monitor', where: [['logical_port', '==', 'lsp-a2']], row: { status: 'offline' } }])]);
  await server.restart();
  await reconnected;
  await settles(passes, db, ids, { [a2]: 'ERROR', [tcpPool]: 'DEGRADED', [lbA]: 'DEGRADED' }, 'offline while the server was down');
  assert.deepEqual(await statuses(db, { listener: [], load_balancer: [lbV, lbB], pool: [v6Pool, ampPool], member: [a1, v1, n1, b1] }), {
    [lbV]: 'ERROR', [v6Pool]: 'ERROR', [a1]: 'ONLINE', [v1]: 'ERROR', ...unaffected,
  });
});

test('a row deleted leaves the verdict unknown: an ERROR member stays ERROR; close() stops the watching', { skip }, async (t) => {
  const onClose = cleanups(t);
  const db = await database(onClose);
  const seed = new Seed(db);
  const lb = await seed.lb('ovn');
  const pool = await seed.pool(lb, 'TCP', 'TCP');
  const m1 = await seed.member(pool, '10.0.0.21', 80, 'ONLINE');
  const m2 = await seed.member(pool, '10.0.0.22', 80, 'ONLINE');
  const ids: Record<StatusTable, string[]> = { load_balancer: [lb], listener: [], pool: [pool], member: [m1, m2] };

  const server = await TestOvsdbServer.start({ schemas: [SB_SCHEMA] });
  onClose(() => server.close());
  const sb = await OvsdbClient.connect(server.unixRemote, fast);
  onClose(() => sb.close());
  await sb.transact(SB_DB, [
    { op: 'insert', table: 'Service_Monitor', row: monitorRow('lsp-1', '10.0.0.21', 80, 'tcp', ['offline']) },
    { op: 'insert', table: 'Service_Monitor', row: monitorRow('lsp-2', '10.0.0.22', 80, 'tcp', ['online']) },
  ]);
  const watcher = new OvnHealthWatcher({ db, sb, log: pino({ level: 'silent' }), batchMs: 20 });
  const passes = new Passes(watcher);
  onClose(() => watcher.close());
  await watcher.start();
  assert.equal(await serverMonitors(server), 1);
  assert.deepEqual(await statuses(db, ids), { [lb]: 'DEGRADED', [pool]: 'DEGRADED', [m1]: 'ERROR', [m2]: 'ONLINE' });

  await sb.transact(SB_DB, [{ op: 'delete', table: 'Service_Monitor', where: [['logical_port', '==', 'lsp-1']] }, setStatus('lsp-2', 'offline')]);
  await settles(passes, db, ids, { [m2]: 'ERROR', [pool]: 'ERROR', [lb]: 'ERROR' }, 'the deleted row keeps m1 ERROR, m2 offline');
  assert.equal((await statuses(db, ids))[m1], 'ERROR');

  await watcher.close();
  assert.equal(await serverMonitors(server), 0, 'the monitor is cancelled on the server');
});

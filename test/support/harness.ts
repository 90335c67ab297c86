/**
 * An in-process Ostia for API tests: real SQLite (or PostgreSQL when OSTIA_TEST_DATABASE_URL
 * is set), real worker, and Octavia's "testing" auth strategy (identity.mode testing) — the
 * caller's project and roles come from X-Project-Id / X-Roles headers, with RBAC enforced.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { defaultConfig, deepMerge, validateConfig, type Config } from '../../src/config.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { createAuthenticator } from '../../src/identity/index.js';
import { freshPostgresDatabase } from './postgres.js';

export const PROJECT_A = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
export const PROJECT_B = 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';

/** The user id every harness caller has. */
const HARNESS_USER = 'u-test';

export interface Caller {
  project?: string;
  roles?: string[];
}
// Roles as the embedded Keystone grants its users: enough for every policy mode (api.policy).
export const admin: Caller = { project: PROJECT_A, roles: ['admin', 'member', 'reader'] };
export const memberA: Caller = { project: PROJECT_A, roles: ['member', 'reader', 'load-balancer_member'] };
export const memberB: Caller = { project: PROJECT_B, roles: ['member', 'reader', 'load-balancer_member'] };
export const readerA: Caller = { project: PROJECT_A, roles: ['reader', 'load-balancer_observer'] };

export interface Harness {
  runtime: Runtime;
  config: Config;
  request(method: string, url: string, opts?: { body?: unknown; as?: Caller; headers?: Record<string, string> }): Promise<LightMyRequestResponse>;
  /** Resolves when the load balancer leaves every PENDING_* state (event-free: polls the DB briefly). */
  settled(lbId: string): Promise<string>;
  close(): Promise<void>;
}

/** API tests need no data plane: tests of the amphora provider enable it in their overrides. */
export const NOOP_PROVIDERS = { api: { enabledProviders: ['noop'], defaultProvider: 'noop' } } as const;

/** The amphora provider with Octavia's no-op compute and agents: rows, certificates and addresses, nothing booted. */
export const NOOP_COMPUTE_AMPHORA = { api: { enabledProviders: ['noop', 'amphora'] }, compute: { driver: 'noop' } } as const;

/** The heartbeat secret of harness runtimes: tests sign heartbeats with heartbeatKey(TEST_HEARTBEAT_SECRET, id). */
export const TEST_HEARTBEAT_SECRET = 'test-heartbeat-secret-'.padEnd(64, '0');

export async function startHarness(overrides: unknown = {}): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'ostia-test-'));
  const pgUrl = process.env.OSTIA_TEST_DATABASE_URL ? await freshPostgresDatabase(process.env.OSTIA_TEST_DATABASE_URL) : null;
  const base = defaultConfig(dir);
  const config = validateConfig(deepMerge(deepMerge(base, { database: { url: pgUrl?.url ?? 'sqlite::memory:' }, log: { level: 'silent' }, worker: { leaseSeconds: 5, concurrency: 2 }, api: NOOP_PROVIDERS.api, amphora: { heartbeatSecret: TEST_HEARTBEAT_SECRET }, identity: { mode: 'testing' } }), overrides));
  const runtime = await createRuntime(config, { api: true, worker: true, authenticate: createAuthenticator(config), logger: false });
  runtime.worker?.start();
  await runtime.app!.ready();
  return {
    runtime,
    config,
    request(method, url, opts = {}) {
      const as = opts.as ?? admin;
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      if (as.project) headers['x-project-id'] = as.project;
      if (as.roles) headers['x-roles'] = as.roles.join(',');
      // Every caller is one user (key manager ACLs name it); `as: {}` sends no identity at all.
      if (as.project || as.roles) headers['x-user-id'] = HARNESS_USER;
      return runtime.app!.inject({ method: method as 'GET', url, headers, ...(opts.body === undefined ? {} : { payload: opts.body as object }) });
    },
    async settled(lbId) {
      const deadline = Date.now() + 10000;
      for (;;) {
        const lb = await runtime.db.kysely.selectFrom('load_balancer').select('provisioning_status').where('id', '=', lbId).executeTakeFirst();
        const status = lb?.provisioning_status ?? 'DELETED';
        // A job's last step sets the status and the job is marked done just after: settled waits for both.
        const unfinished = await runtime.db.kysely
          .selectFrom('job').select('id').where('load_balancer_id', '=', lbId).where('state', 'in', ['queued', 'running']).executeTakeFirst();
        if (!status.startsWith('PENDING_') && !unfinished) return status;
        if (Date.now() > deadline) throw new Error(`load balancer ${lbId} still ${status} after 10 s`);
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    async close() {
      await runtime.close();
      await pgUrl?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

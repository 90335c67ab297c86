/**
 * An in-process Ostia for the key manager's tests: the real runtime (the key manager mounted
 * as `ostia up` mounts it), real SQLite (or PostgreSQL when OSTIA_TEST_DATABASE_URL is set),
 * and callers that differ by user as well as project, which ACLs need (the shared harness
 * gives every caller the same user). The caller comes from X-Project-Id / X-User-Id / X-Roles.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { defaultConfig, deepMerge, validateConfig } from '../../src/config.js';
import type { PolicyMode, RequestContext } from '../../src/domain/context.js';
import { apiError } from '../../src/domain/errors.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';
import { freshPostgresDatabase } from './postgres.js';

export const PROJECT_A = 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
export const PROJECT_B = 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';
/** Fixed so tests can decrypt rows themselves; never a deployment's key. */
export const TEST_KEY = Buffer.alloc(32, 7).toString('base64');

export interface Who {
  project: string | null;
  user: string;
  roles: string[];
}
export const alice: Who = { project: PROJECT_A, user: 'alice', roles: ['member', 'reader'] };
export const abe: Who = { project: PROJECT_A, user: 'abe', roles: ['member', 'reader'] };
export const carol: Who = { project: PROJECT_A, user: 'carol', roles: ['admin', 'member', 'reader'] };
export const rita: Who = { project: PROJECT_A, user: 'rita', roles: ['reader'] };
export const bob: Who = { project: PROJECT_B, user: 'bob', roles: ['member', 'reader'] };
export const bea: Who = { project: PROJECT_B, user: 'bea', roles: ['admin', 'member', 'reader'] };

/** The Octavia API's policy still applies to these callers, so they carry the configured one. */
const headerAuth = (policy: PolicyMode) => async (headers: Record<string, string | string[] | undefined>): Promise<RequestContext> => {
  const h = (k: string) => {
    const v = headers[k];
    return Array.isArray(v) ? v[0] : v;
  };
  if (!h('x-user-id')) throw apiError('UNAUTHORIZED');
  const roles = (h('x-roles') ?? '').split(',').filter(Boolean);
  return { userId: h('x-user-id')!, userName: h('x-user-id')!, projectId: h('x-project-id') || null, roles, isAdmin: false, policy };
};

export interface RequestOptions {
  as?: Who | null;
  /** An object is sent as JSON; a string or Buffer as is, with `headers['content-type']`. */
  body?: unknown;
  headers?: Record<string, string>;
}

export interface KeyManagerFixture {
  runtime: Runtime;
  /** `${publicUrl}/key-manager/v1` */
  base: string;
  request(method: string, path: string, opts?: RequestOptions): Promise<LightMyRequestResponse>;
  /** POSTs a secret as `as`, expects 201, returns its ref. */
  store(as: Who, body: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

export async function startKeyManager(overrides: unknown = {}): Promise<KeyManagerFixture> {
  const dir = mkdtempSync(join(tmpdir(), 'ostia-km-'));
  const pg = process.env.OSTIA_TEST_DATABASE_URL ? await freshPostgresDatabase(process.env.OSTIA_TEST_DATABASE_URL) : null;
  const config = validateConfig(
    deepMerge(deepMerge(defaultConfig(dir), { database: { url: pg?.url ?? 'sqlite::memory:' }, log: { level: 'silent' }, keyManager: { encryptionKey: TEST_KEY } }), overrides),
  );
  const runtime = await createRuntime(config, { api: true, worker: false, authenticate: headerAuth(config.api.policy), logger: false });
  await runtime.app!.ready();
  const base = `${runtime.deps.publicUrl()}/key-manager/v1`;
  const request = (method: string, path: string, opts: RequestOptions = {}) => {
    const as = opts.as === undefined ? alice : opts.as;
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (as) Object.assign(headers, { 'x-user-id': as.user, 'x-roles': as.roles.join(','), ...(as.project && { 'x-project-id': as.project }) });
    let payload: string | Buffer | undefined;
    if (typeof opts.body === 'string' || Buffer.isBuffer(opts.body)) payload = opts.body;
    else if (opts.body !== undefined) {
      payload = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    return runtime.app!.inject({ method: method as 'GET', url: path.startsWith('http') ? new URL(path).pathname : path, headers, ...(payload !== undefined && { payload }) });
  };
  return {
    runtime,
    base,
    request,
    async store(as, body) {
      const res = await request('POST', '/key-manager/v1/secrets', { as, body });
      if (res.statusCode !== 201) throw new Error(`store as ${as.user}: HTTP ${res.statusCode} ${res.body}`);
      return (res.json() as { secret_ref: string }).secret_ref;
    },
    async close() {
      await runtime.close();
      await pg?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The two deployments the soak (bench/soak.ts) runs against: one `ostia up` (SQLite, in-process
 * worker), and the production shape — two `ostia api` and two `ostia worker` processes on a fresh
 * PostgreSQL database, the APIs signing tokens with one shared secret. Both with the noop provider:
 * the soak measures the control plane. Each gives API clients with the demo project's token, the
 * pids whose memory is judged (API and workers) and PostgreSQL's, which is reported apart.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { parse as parseYaml } from 'yaml';
import { deepMerge } from '../../src/config.js';
import { tempDir } from '../../test/support/amphora-fixtures.js';
import { NOOP_PROVIDERS } from '../../test/support/harness.js';
import { keystoneToken, startOstia, type CloudAuth } from '../../test/support/ostia-process.js';
import { freshPostgresDatabase } from '../../test/support/postgres.js';
import { startRole, stopRole, type Role } from '../../test/support/role-process.js';
import { ApiClient } from './lifecycle-api.js';
import { procInfo, processTree } from './processes.js';
import { progress } from './progress.js';

export interface Deployment {
  /** What runs, for the report's first line. */
  readonly description: string;
  /** One client per API process, with the demo project's token; the soak spreads its requests over them. */
  readonly apis: readonly ApiClient[];
  /** The API and worker processes: the memory judged flat or not. */
  serverPids(): number[];
  /** PostgreSQL's processes (postmaster and backends); none on SQLite. */
  databasePids(): number[];
  /** Server processes that are no longer running, named. */
  gone(): string[];
  stop(): Promise<void>;
}

/** The stops of the deployments started and not stopped yet, a half-started one's included: what a signal must undo. */
const unstopped = new Set<() => Promise<void>>();

/** Stops every deployment still running (on SIGINT or SIGTERM). */
export async function stopAll(): Promise<void> {
  await Promise.all([...unstopped].map((stop) => stop()));
}

/** `stop`, run once, and known to stopAll until it has run. */
function tracked(stop: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  const once = () => {
    unstopped.delete(once);
    return (done ??= stop());
  };
  unstopped.add(once);
  return once;
}

/** `ostia up` on a temporary directory: API, worker and SQLite in one process. */
export async function startUp(): Promise<Deployment> {
  const ostia = await startOstia();
  const apis: ApiClient[] = [];
  const stop = tracked(async () => {
    for (const api of apis) api.close();
    await ostia.stop();
  });
  try {
    apis.push(new ApiClient('ostia up', ostia.url, { 'x-auth-token': await ostia.token('ostia-demo') }, true));
    return {
      description: 'ostia up (API, worker and SQLite in one process)',
      apis,
      serverPids: () => processTree(ostia.pid),
      databasePids: () => [],
      gone: () => (procInfo(ostia.pid) ? [] : [`ostia up (pid ${ostia.pid})`]),
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** Two `ostia api` and two `ostia worker` on a fresh database of the PostgreSQL server `serverUrl`. */
export async function startSplit(serverUrl: string, counts = { apis: 2, workers: 2 }): Promise<Deployment> {
  const database = await freshPostgresDatabase(serverUrl);
  const work = tempDir('soak');
  const roles: Array<{ name: string; role: Role }> = [];
  const apis: ApiClient[] = [];
  const stop = tracked(async () => {
    for (const api of apis) api.close();
    await Promise.all(roles.map((r) => stopRole(r.role)));
    work.remove();
    await database.drop();
  });
  try {
    // Every API process must validate the tokens the others issue.
    const config = join(work.path, 'ostia.json');
    writeFileSync(config, JSON.stringify(deepMerge(NOOP_PROVIDERS, { identity: { tokenSecret: randomBytes(32).toString('hex') } })));
    const start = async (role: 'api' | 'worker', i: number) => {
      const args = [role, '--config', config, '--data-dir', join(work.path, `${role}-${i}`), '--database-url', database.url, ...(role === 'api' ? ['--port', '0'] : [])];
      // One after the other: the first runs the schema's migrations.
      const started = await startRole(args);
      roles.push({ name: `ostia ${role} #${i}`, role: started });
      return started;
    };
    const apiRoles: Role[] = [];
    for (let i = 1; i <= counts.apis; i++) apiRoles.push(await start('api', i));
    for (let i = 1; i <= counts.workers; i++) await start('worker', i);
    const token = await keystoneToken(demoCloud(apiRoles[0]!));
    for (const [i, role] of apiRoles.entries()) apis.push(new ApiClient(`ostia api #${i + 1}`, role.announced.url!, { 'x-auth-token': token }, true));
    const postmaster = await postmasterOf(database.url);
    progress(`${counts.apis} ostia api (${apis.map((a) => a.base).join(', ')}) and ${counts.workers} ostia worker on ${new URL(database.url).pathname.slice(1)}`);
    return {
      description: `${counts.apis} × ostia api + ${counts.workers} × ostia worker on PostgreSQL (requests round-robin over the APIs)`,
      apis,
      serverPids: () => roles.map((r) => r.role.child.pid!),
      databasePids: () => processTree(postmaster),
      gone: () => roles.filter((r) => r.role.child.exitCode !== null || r.role.child.signalCode !== null).map((r) => `${r.name} (pid ${r.role.child.pid})`),
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** The demo project's cloud of the clouds.yaml an `ostia api` wrote. */
function demoCloud(api: Role): CloudAuth {
  const file = api.announced.clouds_yaml;
  if (!file) throw new Error('ostia api announced no clouds.yaml: the soak needs the embedded Keystone');
  return (parseYaml(readFileSync(file, 'utf8')) as { clouds: Record<string, { auth: CloudAuth }> }).clouds['ostia-demo']!.auth;
}

/** The pid of the PostgreSQL server behind `url`: the parent of a backend it runs for us. */
async function postmasterOf(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const backend = procInfo(rows[0]!.pid);
    if (!backend) throw new Error(`PostgreSQL backend ${rows[0]!.pid} is not a process of this machine: the soak measures a local server only`);
    return backend.ppid;
  } finally {
    await client.end();
  }
}

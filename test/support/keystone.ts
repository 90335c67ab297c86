/**
 * Debian's real Keystone (the `keystone` package), run standalone for a test: SQLite in a
 * temp dir, fernet tokens, wsgiref's server on a free 127.0.0.1 port, then users, projects
 * and role assignments provisioned through its v3 API. Recipe and its two mandatory fixes
 * (SQLite WAL, the in-process dogpile cache): /work/shared/reference/clients.md §4.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from '@rocicorp/zero-sqlite3';
import type { CloudAuth } from './ostia-process.js';

export const KEYSTONE_MANAGE = '/usr/bin/keystone-manage';
const KEYSTONE_WSGI_PUBLIC = '/usr/bin/keystone-wsgi-public';
export const KEYSTONE_REGION = 'RegionOne';
const DEFAULT_DOMAIN = 'Default';
const BRING_UP_TIMEOUT_MS = 120_000;
const REGISTER_TIMEOUT_MS = 30_000;
const LOG_TAIL_BYTES = 8_192;

/** A user with project-scoped roles, ready for a clouds.yaml `auth` block. */
export interface KeystoneAccount extends CloudAuth {
  readonly userId: string;
  readonly projectId: string;
}

export interface Accounts {
  /** The bootstrap admin, on the `admin` project. */
  admin: KeystoneAccount;
  /** What Ostia validates tokens with: `admin` on the `service` project. */
  service: KeystoneAccount;
  /** `member` and `load-balancer_member` (which Ostia's default api.policy asks for) on tenant project 1. */
  member1: KeystoneAccount;
  /** `member` and `load-balancer_member` on tenant project 2. */
  member2: KeystoneAccount;
  /** `reader` and `load-balancer_observer` on tenant project 1. */
  reader1: KeystoneAccount;
  /** Keystone's plain `member` only, on tenant project 1: Octavia's default policy grants it nothing. */
  plainMember1: KeystoneAccount;
}

export interface RealKeystone {
  /** e.g. http://127.0.0.1:41234 (no trailing slash). */
  readonly url: string;
  /** `url` + /v3, what clients and Ostia are configured with. */
  readonly authUrl: string;
  readonly accounts: Accounts;
  /** Registers `load-balancer` and `network` public endpoints at `serviceUrl`, so clients find Ostia in the catalog. */
  registerOstia(serviceUrl: string): Promise<void>;
  /** What the server and keystone-manage wrote (bounded), for failure messages. */
  logTail(): string;
  close(): Promise<void>;
}

const ADMIN_PASSWORD = 'secret';

/** Servers still running when this process exits are killed, so a crashed test leaves none behind. */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Brings Keystone up and provisions its accounts, or fails within ~2 minutes saying which step hung. */
export async function startKeystone(): Promise<RealKeystone> {
  const dir = mkdtempSync(join(tmpdir(), 'ostia-keystone-'));
  const deadline = new Deadline(BRING_UP_TIMEOUT_MS);
  let server: KeystoneServer | undefined;
  try {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const configFile = writeKeystoneConf(dir);
    await initialise(dir, configFile, `${url}/v3`, deadline);
    server = startServer(dir, configFile, port);
    await server.ready(`${url}/v3`, deadline);
    const admin = await KeystoneAdmin.login(`${url}/v3`, deadline);
    const accounts = await provisionAccounts(admin);
    const started = server;
    return {
      url,
      authUrl: `${url}/v3`,
      accounts,
      registerOstia: (serviceUrl) => registerOstia(admin.within(new Deadline(REGISTER_TIMEOUT_MS)), serviceUrl),
      logTail: () => started.logTail(),
      async close() {
        await started.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    const tail = server?.logTail() ?? '';
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`real Keystone did not come up: ${(e as Error).message}${tail ? `\n--- keystone output ---\n${tail}` : ''}`);
  }
}

class Deadline {
  private readonly at: number;
  constructor(private readonly totalMs: number) {
    this.at = Date.now() + totalMs;
  }
  /** Milliseconds left for `step`; throws once the whole bring-up is over budget. */
  left(step: string): number {
    const ms = this.at - Date.now();
    if (ms <= 0) throw new Error(`exceeded its ${this.totalMs / 1000} s budget (at: ${step})`);
    return ms;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

function writeKeystoneConf(dir: string): string {
  mkdirSync(join(dir, 'log'));
  const file = join(dir, 'keystone.conf');
  writeFileSync(
    file,
    `[DEFAULT]
log_dir = ${dir}/log
[database]
connection = sqlite:///${dir}/keystone.db
[identity]
# bcrypt cost 4 instead of 12: tests only
password_hash_rounds = 4
[token]
provider = fernet
expiration = 86400
[fernet_tokens]
key_repository = ${dir}/fernet-keys
[fernet_receipts]
key_repository = ${dir}/fernet-keys
[credential]
key_repository = ${dir}/credential-keys
[cache]
# in-process: without it every request re-reads SQLite for token validation and policy (~1.5 s each)
enabled = true
backend = dogpile.cache.memory
`,
  );
  return file;
}

/** Schema, WAL, key repositories and the bootstrap admin (admin/secret on project admin, region RegionOne). */
async function initialise(dir: string, configFile: string, publicUrl: string, deadline: Deadline): Promise<void> {
  const manage = (step: string, ...args: string[]) => run(KEYSTONE_MANAGE, ['--config-file', configFile, ...args], keystoneEnv(configFile), step, deadline);
  await manage('db_sync', 'db_sync');
  // Without WAL the wsgi server's writes fail at random with "database is locked" (HTTP 500).
  const db = new Database(join(dir, 'keystone.db'));
  try {
    db.pragma('journal_mode = WAL');
  } finally {
    db.close();
  }
  const owner = ['--keystone-user', String(process.getuid!()), '--keystone-group', String(process.getgid!())];
  await manage('fernet_setup', 'fernet_setup', ...owner);
  await manage('credential_setup', 'credential_setup', ...owner);
  await manage(
    'bootstrap',
    'bootstrap',
    '--bootstrap-password', ADMIN_PASSWORD,
    '--bootstrap-username', 'admin',
    '--bootstrap-project-name', 'admin',
    '--bootstrap-role-name', 'admin',
    '--bootstrap-service-name', 'keystone',
    '--bootstrap-region-id', KEYSTONE_REGION,
    '--bootstrap-public-url', publicUrl,
  );
}

/** Keystone's Python processes must not pick up the caller's OpenStack credentials. */
function keystoneEnv(configFile: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('OS_')) env[k] = v;
  return { ...env, OS_KEYSTONE_CONFIG_FILES: configFile, PYTHONWARNINGS: 'ignore' };
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv, step: string, deadline: Deadline): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { env, timeout: deadline.left(step), killSignal: 'SIGKILL', maxBuffer: 16 * 1024 * 1024 }, (err, _stdout, stderr) => {
      if (!err) return resolve();
      const why = err.killed ? 'still running when the bring-up budget ran out' : `exited ${String(err.code)}`;
      reject(new Error(`keystone-manage ${step}: ${why}\n${stderr.slice(-LOG_TAIL_BYTES)}`));
    });
  });
}

interface KeystoneServer {
  ready(versionUrl: string, deadline: Deadline): Promise<void>;
  logTail(): string;
  stop(): Promise<void>;
}

/** wsgiref's single-threaded server ("for testing only"), enough for one test's traffic. */
function startServer(dir: string, configFile: string, port: number): KeystoneServer {
  const child = spawn(KEYSTONE_WSGI_PUBLIC, ['--host', '127.0.0.1', '--port', String(port)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: keystoneEnv(configFile),
  });
  running.add(child);
  let output = '';
  const remember = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-LOG_TAIL_BYTES);
  };
  child.stdout!.on('data', remember);
  child.stderr!.on('data', remember);
  const exited = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve(signal ? `signal ${signal}` : `code ${code}`);
    }),
  );
  let gone: string | null = null;
  void exited.then((how) => (gone = how));

  const logTail = () => {
    const log = join(dir, 'log', 'keystone.log');
    const file = existsSync(log) ? readFileSync(log, 'utf8').slice(-LOG_TAIL_BYTES) : '';
    return `${output}${file ? `\n--- ${log} ---\n${file}` : ''}`;
  };
  return {
    logTail,
    async ready(versionUrl, deadline) {
      for (;;) {
        if (gone) throw new Error(`keystone-wsgi-public exited (${gone}) before answering on port ${port}`);
        const timeoutMs = Math.min(5_000, deadline.left('waiting for keystone-wsgi-public to answer GET /v3'));
        const status = await fetch(versionUrl, { signal: AbortSignal.timeout(timeoutMs) }).then(
          async (res) => (await res.arrayBuffer(), res.status),
          () => 0,
        );
        if (status === 200) return;
        await new Promise((r) => setTimeout(r, 250));
      }
    },
    async stop() {
      if (gone) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Keystone's v3 admin API with the bootstrap admin's project-scoped token. */
class KeystoneAdmin {
  private constructor(
    readonly authUrl: string,
    private readonly token: string,
    private readonly deadline: Deadline,
  ) {}

  static async login(authUrl: string, deadline: Deadline): Promise<KeystoneAdmin> {
    const res = await fetch(`${authUrl}/auth/tokens?nocatalog`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(passwordAuth('admin', ADMIN_PASSWORD, 'admin')),
      signal: AbortSignal.timeout(deadline.left('admin login')),
    });
    const body = await res.text();
    const token = res.headers.get('x-subject-token');
    if (res.status !== 201 || !token) throw new Error(`bootstrap admin login: HTTP ${res.status} ${body}`);
    return new KeystoneAdmin(authUrl, token, deadline);
  }

  /** The same token under another time budget (the bring-up's is spent once it returns). */
  within(deadline: Deadline): KeystoneAdmin {
    return new KeystoneAdmin(this.authUrl, this.token, deadline);
  }

  async call<T = Record<string, unknown>>(method: string, path: string, expected: number, body?: unknown): Promise<T> {
    const res = await fetch(this.authUrl + path, {
      method,
      headers: { 'x-auth-token': this.token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(this.deadline.left(`${method} ${path}`)),
    });
    const text = await res.text();
    if (res.status !== expected) throw new Error(`${method} /v3${path}: HTTP ${res.status} (expected ${expected}) ${text}`);
    return (text ? JSON.parse(text) : {}) as T;
  }

  async idOf(collection: 'roles' | 'projects' | 'users', name: string): Promise<string> {
    const found = await this.call<Record<string, Array<{ id: string }>>>('GET', `/${collection}?name=${encodeURIComponent(name)}`, 200);
    const [only, ...more] = found[collection] ?? [];
    if (!only || more.length) throw new Error(`expected exactly one of ${collection} named ${name}`);
    return only.id;
  }

  async createProject(name: string): Promise<string> {
    const { project } = await this.call<{ project: { id: string } }>('POST', '/projects', 201, { project: { name, domain_id: 'default', description: `Ostia test project ${name}` } });
    return project.id;
  }

  async createRole(name: string): Promise<string> {
    const { role } = await this.call<{ role: { id: string } }>('POST', '/roles', 201, { role: { name } });
    return role.id;
  }

  /** A user with `roleIds` on one project, as an account to log in with. */
  async createAccount(username: string, project: { id: string; name: string }, ...roleIds: string[]): Promise<KeystoneAccount> {
    const password = `${username}-password`;
    const { user } = await this.call<{ user: { id: string } }>('POST', '/users', 201, { user: { name: username, password, domain_id: 'default', default_project_id: project.id } });
    for (const roleId of roleIds) await this.call('PUT', `/projects/${project.id}/users/${user.id}/roles/${roleId}`, 204);
    return account(this.authUrl, { id: user.id, name: username, password }, project);
  }
}

function passwordAuth(user: string, password: string, project: string) {
  return {
    auth: {
      identity: { methods: ['password'], password: { user: { name: user, password, domain: { name: DEFAULT_DOMAIN } } } },
      scope: { project: { name: project, domain: { name: DEFAULT_DOMAIN } } },
    },
  };
}

function account(authUrl: string, user: { id: string; name: string; password: string }, project: { id: string; name: string }): KeystoneAccount {
  return {
    auth_url: authUrl,
    username: user.name,
    password: user.password,
    project_name: project.name,
    user_domain_name: DEFAULT_DOMAIN,
    project_domain_name: DEFAULT_DOMAIN,
    userId: user.id,
    projectId: project.id,
  };
}

/**
 * `keystone-manage bootstrap` made the admin, member and reader roles and the admin user and
 * project; Octavia's load-balancer_* roles are created here, as a deployment of Octavia does.
 */
async function provisionAccounts(admin: KeystoneAdmin): Promise<Accounts> {
  const [adminRole, memberRole, readerRole, lbMemberRole, lbObserverRole, adminUser, adminProject] = await Promise.all([
    admin.idOf('roles', 'admin'),
    admin.idOf('roles', 'member'),
    admin.idOf('roles', 'reader'),
    admin.createRole('load-balancer_member'),
    admin.createRole('load-balancer_observer'),
    admin.idOf('users', 'admin'),
    admin.idOf('projects', 'admin'),
  ]);
  const [service, tenant1, tenant2] = await Promise.all(
    ['service', 'ostia-tenant-1', 'ostia-tenant-2'].map(async (name) => ({ name, id: await admin.createProject(name) })),
  );
  const [serviceAccount, member1, member2, reader1, plainMember1] = await Promise.all([
    admin.createAccount('ostia', service!, adminRole),
    admin.createAccount('tenant1-member', tenant1!, memberRole, lbMemberRole),
    admin.createAccount('tenant2-member', tenant2!, memberRole, lbMemberRole),
    admin.createAccount('tenant1-reader', tenant1!, readerRole, lbObserverRole),
    admin.createAccount('tenant1-plain-member', tenant1!, memberRole),
  ]);
  return {
    admin: account(admin.authUrl, { id: adminUser, name: 'admin', password: ADMIN_PASSWORD }, { id: adminProject, name: 'admin' }),
    service: serviceAccount,
    member1,
    member2,
    reader1,
    plainMember1,
  };
}

/** Unversioned URLs: octaviaclient appends /v2.0 itself, neutronclient likewise. */
async function registerOstia(admin: KeystoneAdmin, serviceUrl: string): Promise<void> {
  const url = serviceUrl.replace(/\/+$/, '');
  for (const [type, name] of [['load-balancer', 'octavia'], ['network', 'neutron']] as const) {
    const { service } = await admin.call<{ service: { id: string } }>('POST', '/services', 201, { service: { type, name, enabled: true } });
    await admin.call('POST', '/endpoints', 201, { endpoint: { service_id: service.id, interface: 'public', region_id: KEYSTONE_REGION, url, enabled: true } });
  }
}

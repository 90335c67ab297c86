/**
 * A real `ostia up` child process on a throw-away data dir, for tests and benchmarks that
 * drive Ostia the way users do: over HTTP with Keystone tokens, or with the real Python
 * clients through the clouds.yaml it writes. And any other `ostia` command run to its end.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';

export interface CloudAuth {
  auth_url: string;
  username: string;
  password: string;
  project_name: string;
  user_domain_name?: string;
  project_domain_name?: string;
}

/** A running `ostia up`, in any identity mode. */
export interface OstiaServer {
  /** Where the API listens, e.g. http://127.0.0.1:40123 (no trailing slash). */
  readonly url: string;
  readonly dataDir: string;
  readonly pid: number;
  /** Output the process wrote so far (bounded), for failure messages. */
  logTail(): string;
  /** SIGTERM, then the data directory is removed unless the caller passed it (StartOptions.dataDir). */
  stop(): Promise<void>;
  /** SIGKILL, as a crash would: nothing is cleaned up. Resolves once the process has exited. */
  kill(): Promise<void>;
}

/** An `ostia up` with its embedded Keystone and the clouds.yaml it wrote. */
export interface OstiaProcess extends OstiaServer {
  readonly cloudsYaml: string;
  /** The `auth` block of one cloud of the generated clouds.yaml. */
  cloud(name: string): CloudAuth;
  /** A project-scoped Keystone token for a cloud of clouds.yaml. */
  token(cloud: string): Promise<string>;
  /** The id of a subnet of the embedded network service, looked up by name as clients do. */
  subnetId(name: string): Promise<string>;
}

interface Announcement {
  url: string;
  /** null in external and testing identity modes, where Ostia writes no clouds.yaml. */
  clouds_yaml: string | null;
  pid: number;
}

export interface StartOptions {
  /** How long to wait for the JSON line announcing the listening URL. */
  readyTimeoutMs?: number;
  /** Flags for `ostia up`. Without a `--config` among them, Ostia runs with the noop provider only. */
  extraArgs?: readonly string[];
  /**
   * Run on this existing data directory (e.g. the one a killed `ostia up` left) instead of a
   * fresh temporary one. The caller owns it: stop() leaves it in place.
   */
  dataDir?: string;
  /** Another build's bin/ostia.js to run (a bench's baseline version); this checkout's by default. */
  bin?: string;
}

const LOG_TAIL_BYTES = 16_384;

/** The checkout root: the nearest directory above this file whose package.json names ostia. */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'ostia') return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('ostia checkout not found above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
}

/** The caller's OSTIA_* settings must not leak into the commands under test. */
export function cliEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OSTIA_')));
}

export interface CliOutcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `ostia ARGS` (bin/ostia.js) run to its end, or killed after 30 s, with what it wrote. */
export function runOstia(...args: string[]): Promise<CliOutcome> {
  return runOstiaWithin(30_000, ...args);
}

/** runOstia for a command that takes longer (one that runs load): killed after `timeoutMs`. */
export function runOstiaWithin(timeoutMs: number, ...args: string[]): Promise<CliOutcome> {
  const child = spawn(process.execPath, [join(repoRoot(), 'bin', 'ostia.js'), ...args], { env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => (out.stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (out.stderr += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, ...out })));
}

/** Children still running when this process exits are killed, so a crashed test leaves none behind. */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export async function startOstia(opts: StartOptions = {}): Promise<OstiaProcess> {
  const { server, cloudsYaml } = await launch(opts);
  if (!cloudsYaml) {
    await server.stop();
    throw new Error('ostia up announced no clouds.yaml: use startOstiaServer for external or testing identity mode');
  }
  const clouds = (parseYaml(readFileSync(cloudsYaml, 'utf8')) as { clouds: Record<string, { auth: CloudAuth }> }).clouds;
  const cloud = (name: string): CloudAuth => {
    const entry = clouds[name];
    if (!entry) throw new Error(`cloud ${name} is not in ${cloudsYaml} (has ${Object.keys(clouds).join(', ')})`);
    return entry.auth;
  };
  const token = (name: string) => keystoneToken(cloud(name));
  async function subnetId(name: string): Promise<string> {
    const res = await fetch(`${server.url}/v2.0/subnets?name=${encodeURIComponent(name)}`, { headers: { 'x-auth-token': await token('ostia') } });
    const found = ((await res.json()) as { subnets?: Array<{ id: string }> }).subnets ?? [];
    if (res.status !== 200 || found.length !== 1) throw new Error(`subnet ${name}: HTTP ${res.status}, ${found.length} matches`);
    return found[0]!.id;
  }
  return { ...server, cloudsYaml, cloud, token, subnetId };
}

/** Environment for the Python clients: the given clouds.yaml and no inherited OS_* overrides. */
export function pythonClientEnv(cloudsYaml: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('OS_')) env[k] = v;
  env.OS_CLIENT_CONFIG_FILE = cloudsYaml;
  env.PYTHONWARNINGS = 'ignore';
  return env;
}

/** Any identity mode; pass `--config FILE` in extraArgs to choose one. */
export async function startOstiaServer(opts: StartOptions = {}): Promise<OstiaServer> {
  return (await launch(opts)).server;
}

let noopConfig: string | undefined;
/**
 * Without a --config, a noop-provider Ostia: API and client tests need no data plane, and two
 * amphora-enabled `ostia up`s would compete for the health manager's default UDP port.
 */
function noopConfigFile(): string {
  if (!noopConfig) {
    const dir = mkdtempSync(join(tmpdir(), 'ostia-noop-config-'));
    noopConfig = join(dir, 'ostia.json');
    writeFileSync(noopConfig, JSON.stringify({ api: { enabledProviders: ['noop'], defaultProvider: 'noop' } }));
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return noopConfig;
}

async function launch(opts: StartOptions): Promise<{ server: OstiaServer; cloudsYaml: string | null }> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'ostia-e2e-'));
  const removeDataDir = () => {
    if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
  };
  const bin = opts.bin ?? join(repoRoot(), 'bin', 'ostia.js');
  const child = spawn(process.execPath, [bin, 'up', '--json', '--data-dir', dataDir, '--port', '0', ...(opts.extraArgs ?? [])], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1', ...(!opts.extraArgs?.includes('--config') && { OSTIA_CONFIG: noopConfigFile() }) },
  });
  running.add(child);
  let tail = '';
  const remember = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-LOG_TAIL_BYTES);
  };
  child.stderr!.on('data', remember);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : null))));
  exited.then(() => running.delete(child));

  let announced: Announcement;
  try {
    announced = await readAnnouncement(child, remember, exited, opts.readyTimeoutMs ?? 60_000);
  } catch (err) {
    child.kill('SIGKILL');
    await exited;
    removeDataDir();
    throw new Error(`${(err as Error).message}\n--- ostia up output ---\n${tail}`);
  }

  const alive = () => child.exitCode === null && child.signalCode === null;
  const server: OstiaServer = {
    url: announced.url.replace(/\/+$/, ''),
    dataDir,
    pid: announced.pid,
    logTail: () => tail,
    async stop() {
      if (alive()) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      removeDataDir();
    },
    async kill() {
      if (alive()) child.kill('SIGKILL');
      await exited;
    },
  };
  return { server, cloudsYaml: announced.clouds_yaml };
}

/** Reads stdout until the one JSON line `ostia up --json` prints once it listens. */
function readAnnouncement(
  child: ChildProcess,
  remember: (chunk: Buffer) => void,
  exited: Promise<number | null>,
  timeoutMs: number,
): Promise<Announcement> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => reject(new Error(`ostia up printed no JSON line within ${timeoutMs} ms`)), timeoutMs);
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`ostia up exited with ${code} before announcing its URL`));
    });
    child.stdout!.on('data', (chunk: Buffer) => {
      remember(chunk);
      buffered += chunk.toString('utf8');
      let newline: number;
      while ((newline = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, newline).trim();
        buffered = buffered.slice(newline + 1);
        const parsed = parseAnnouncement(line);
        if (parsed) {
          clearTimeout(timer);
          resolve(parsed);
        }
      }
    });
  });
}

function parseAnnouncement(line: string): Announcement | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const v = JSON.parse(line) as Record<string, unknown>;
    const clouds = v.clouds_yaml;
    if (typeof v.url === 'string' && (typeof clouds === 'string' || clouds === null) && typeof v.pid === 'number') return { url: v.url, clouds_yaml: clouds, pid: v.pid };
  } catch {
    // a log line that merely starts with "{" is not the announcement
  }
  return undefined;
}

export async function keystoneToken(auth: CloudAuth): Promise<string> {
  const res = await fetch(`${auth.auth_url.replace(/\/+$/, '')}/auth/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      auth: {
        identity: { methods: ['password'], password: { user: { name: auth.username, password: auth.password, domain: { name: auth.user_domain_name ?? 'Default' } } } },
        scope: { project: { name: auth.project_name, domain: { name: auth.project_domain_name ?? 'Default' } } },
      },
    }),
  });
  const token = res.headers.get('x-subject-token');
  if (res.status !== 201 || !token) throw new Error(`token for ${auth.username}@${auth.project_name}: HTTP ${res.status} ${await res.text()}`);
  return token;
}

/**
 * Pids of processes whose command line names `dir`: under DATA_DIR/amphorae, the agents and
 * HAProxies of the amphorae, which outlive the `ostia up` that started them by design; a HAProxy
 * a bench started on a file in `dir`.
 */
export function processesUnder(dir: string): number[] {
  try {
    // pgrep leaves itself out, but not this process, whose own command line may name `dir`.
    return execFileSync('pgrep', ['-f', dir], { encoding: 'utf8' }).trim().split('\n').map(Number).filter((pid) => pid !== process.pid);
  } catch {
    // pgrep exits 1 when nothing matches
    return [];
  }
}

export function killAll(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

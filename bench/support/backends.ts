/**
 * Member backends for the data-plane bench: two processes, fast enough not to be the
 * bottleneck. nginx when it is installed (worker_processes 1, `return 200`, access log off, as
 * in reference/dataplane.md §2), otherwise Node servers (./node-backend.ts), which are slower
 * and which the report names. Each process serves one of the two "primary" members (body
 * "ok\n") and half of the "extra" members the change phase adds (body: the member's name, so
 * a response shows which member answered).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { eventually, httpGet } from '../../test/support/amphora-fixtures.js';
import { killAll } from '../../test/support/ostia-process.js';
import { processTree } from './processes.js';

export interface Endpoint {
  /** What the endpoint answers, trimmed. */
  name: string;
  address: string;
  port: number;
}

export interface BackendFarm {
  kind: 'nginx' | 'node';
  /** The members both load balancers start with, one per process. */
  primaries: Endpoint[];
  /** Members the change phase adds, spread over the two processes. */
  extras: Endpoint[];
  pids(): number[];
  stop(): Promise<void>;
}

const PRIMARY_BODY = 'ok';
const PROCESSES = 2;
const READY_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 3_000;

export function nginxPath(): string | undefined {
  try {
    return execFileSync('sh', ['-c', 'command -v nginx'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

const children = new Set<ChildProcess>();
/**
 * The process and what it started: SIGKILL on an nginx master alone would leave its worker serving. The master goes
 * first, so that it cannot replace a worker killed before it.
 */
function killTree(child: ChildProcess): void {
  if (child.pid) killAll(processTree(child.pid));
}
process.on('exit', () => {
  for (const child of children) killTree(child);
});

/** Which endpoints process `i` serves: its primary, then every other extra. */
function plan(prefix: string, port: number, extras: number): Endpoint[][] {
  return Array.from({ length: PROCESSES }, (_, i) => [
    { name: PRIMARY_BODY, address: `${prefix}.${11 + i}`, port },
    ...Array.from({ length: extras }, (_, x) => x)
      .filter((x) => x % PROCESSES === i)
      .map((x) => ({ name: `x${x + 1}`, address: `${prefix}.${21 + x}`, port })),
  ]);
}

function nginxConfig(dir: string, i: number, endpoints: readonly Endpoint[]): string {
  const temp = (kind: string) => `${kind}_temp_path ${join(dir, `nginx${i}-${kind}`)};`;
  return [
    'worker_processes 1;',
    'daemon off;',
    `pid ${join(dir, `nginx${i}.pid`)};`,
    `error_log ${join(dir, `nginx${i}.err`)} warn;`,
    'events { worker_connections 4096; }',
    'http {',
    '  access_log off;',
    '  default_type text/plain;',
    '  keepalive_requests 1000000;',
    ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((k) => `  ${temp(k)}`),
    ...endpoints.map((e) => `  server { listen ${e.address}:${e.port}; return 200 "${e.name}\\n"; }`),
    '}',
    '',
  ].join('\n');
}

function track(child: ChildProcess): Promise<void> {
  children.add(child);
  return new Promise((resolve) =>
    child.once('exit', () => {
      children.delete(child);
      resolve();
    }),
  );
}

async function stopAll(procs: ReadonlyArray<{ child: ChildProcess; exited: Promise<void> }>): Promise<void> {
  await Promise.all(
    procs.map(async ({ child, exited }) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => killTree(child), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    }),
  );
}

async function answering(endpoints: readonly Endpoint[], exited: () => string | null): Promise<void> {
  for (const e of endpoints) {
    await eventually(
      async () => {
        const why = exited();
        if (why) throw new Error(why);
        return (await httpGet(e.address, e.port)).body.trim() === e.name;
      },
      `backend ${e.name} on ${e.address}:${e.port}`,
      READY_TIMEOUT_MS,
      50,
    );
  }
}

async function startNginx(binary: string, dir: string, layout: Endpoint[][]): Promise<BackendFarm> {
  const procs = layout.map((endpoints, i) => {
    const conf = join(dir, `nginx${i}.conf`);
    writeFileSync(conf, nginxConfig(dir, i, endpoints));
    // -e: the error log before the config is read, else nginx opens /var/log/nginx/error.log first.
    const child = spawn(binary, ['-p', dir, '-e', join(dir, `nginx${i}.err`), '-c', conf], { stdio: 'ignore' });
    return { child, exited: track(child), endpoints, errorLog: join(dir, `nginx${i}.err`) };
  });
  try {
    for (const p of procs) {
      await answering(p.endpoints, () => {
        if (p.child.exitCode === null && p.child.signalCode === null) return null;
        let log = '';
        try {
          log = readFileSync(p.errorLog, 'utf8').trim().split('\n').slice(-3).join(' | ');
        } catch {
          // no log written
        }
        return `nginx exited (${p.child.signalCode ?? `code ${p.child.exitCode}`}): ${log}`;
      });
    }
  } catch (e) {
    await stopAll(procs);
    throw e;
  }
  return farm('nginx', layout, procs);
}

async function startNode(layout: Endpoint[][]): Promise<BackendFarm> {
  const script = fileURLToPath(new URL('./node-backend.js', import.meta.url));
  const procs = layout.map((endpoints) => {
    const child = spawn(process.execPath, [script, JSON.stringify(endpoints.map(({ name, address }) => ({ name: `${name}\n`, address })))], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = track(child);
    const announced = new Promise<Endpoint[]>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('a Node backend did not announce its ports')), READY_TIMEOUT_MS);
      createInterface({ input: child.stdout! }).once('line', (line) => {
        clearTimeout(timer);
        resolve((JSON.parse(line) as Endpoint[]).map((e) => ({ ...e, name: e.name.trim() })));
      });
      void exited.then(() => reject(new Error('a Node backend exited before announcing its ports')));
    });
    return { child, exited, announced };
  });
  try {
    const served = await Promise.all(procs.map((p) => p.announced));
    for (const endpoints of served) await answering(endpoints, () => null);
    return farm('node', served, procs);
  } catch (e) {
    await stopAll(procs);
    throw e;
  }
}

function farm(kind: BackendFarm['kind'], layout: Endpoint[][], procs: ReadonlyArray<{ child: ChildProcess; exited: Promise<void> }>): BackendFarm {
  return {
    kind,
    primaries: layout.map((endpoints) => endpoints[0]!),
    extras: layout.flatMap((endpoints) => endpoints.slice(1)).sort((a, b) => Number(a.name.slice(1)) - Number(b.name.slice(1))),
    pids: () => procs.map((p) => p.child.pid ?? -1).filter((pid) => pid > 0),
    stop: () => stopAll(procs),
  };
}

/**
 * Two backend processes on `<prefix>.11`, `<prefix>.12` (primaries) and `<prefix>.21…`
 * (extras), nginx if it is on PATH; `dir` holds their configs and logs.
 */
export async function startBackendFarm(dir: string, prefix: string, port: number, extras: number): Promise<BackendFarm> {
  const nginx = nginxPath();
  const layout = plan(prefix, port, extras);
  return nginx ? startNginx(nginx, dir, layout) : startNode(layout);
}

/** What a report says of the backends: which, where, and when they are the slower kind, that they may be the bottleneck. */
export function farmNote(farm: BackendFarm): string {
  return farm.kind === 'nginx'
    ? `2 × nginx (worker_processes 1) on ${farm.primaries.map((e) => `${e.address}:${e.port}`).join(', ')}`
    : `2 × Node (test/support/amphora-fixtures.ts startBackend, one process each) because nginx is not installed — slower than nginx, so the backends may be the bottleneck; install it with apt-get install -y nginx wrk`;
}

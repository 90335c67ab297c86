/**
 * Runs the real `openstack` CLI (python-openstackclient + octaviaclient) against a clouds.yaml.
 * A fresh `openstack` process spends ~4 s of CPU importing its plug-ins before it sends a request
 * (8 s a call beside a CPU hog, 150 calls in one test file), so each call runs the entry point's own
 * `OpenStackShell().run(argv)` in a long-lived Python process of the entry point's interpreter
 * (openstack-runner.py); `binary` runs the installed `openstack` itself, which a test compares with.
 * Calls from independent lifecycles may overlap, one runner each, up to a bound that keeps a 2-core
 * machine responsive.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { pythonClientEnv } from './ostia-process.js';

export const OPENSTACK_BIN = '/usr/bin/openstack';
const RUNNER = fileURLToPath(new URL('../../../test/support/openstack-runner.py', import.meta.url));

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly command: string;
}

/** Counts slots; `run` waits for one before spawning. */
class Slots {
  private free: number;
  private readonly waiting: Array<() => void> = [];
  constructor(size: number) {
    this.free = size;
  }
  async take(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
  give(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}

/** The interpreter named by the entry point's #! line, so the runner imports the same openstackclient. */
function entryPointPython(): string {
  const shebang = readFileSync(OPENSTACK_BIN, 'utf8').split('\n')[0]!;
  const match = /^#!\s*(\S+)/.exec(shebang);
  if (!match) throw new Error(`${OPENSTACK_BIN} has no #! line naming its Python`);
  return match[1]!;
}

/** One Python process running one command at a time; it ends when its stdin closes (the test process exits). */
class Runner {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly answers: string[] = [];
  private waiter: ((line: string | null) => void) | null = null;
  private ended = false;

  constructor(env: NodeJS.ProcessEnv) {
    this.child = spawn(entryPointPython(), [RUNNER], { stdio: ['pipe', 'pipe', 'pipe'], env });
    let stderr = '';
    this.child.stderr.on('data', (c: Buffer) => (stderr = (stderr + c.toString('utf8')).slice(-4000)));
    createInterface({ input: this.child.stdout }).on('line', (line) => this.deliver(line));
    this.child.on('close', (code) => {
      this.ended = true;
      this.deliver(null, `openstack runner exited ${code}: ${stderr}`);
    });
    this.child.on('error', () => undefined);
    // Idle runners must not keep a finished test file's process alive.
    this.child.unref();
    for (const stream of [this.child.stdin, this.child.stdout, this.child.stderr]) (stream as unknown as { unref(): void }).unref();
  }

  get usable(): boolean {
    return !this.ended;
  }

  private deliver(line: string | null, why?: string): void {
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w(line ?? JSON.stringify({ crashed: why }));
    } else if (line !== null) this.answers.push(line);
  }

  async run(argv: readonly string[], timeoutMs: number): Promise<{ code: number; stdout: string; stderr: string }> {
    const ref = [this.child.stdout, this.child.stdin] as unknown as Array<{ ref(): void; unref(): void }>;
    for (const s of ref) s.ref();
    try {
      this.child.stdin.write(JSON.stringify({ argv }) + '\n');
      const line = await new Promise<string | null>((resolve, reject) => {
        const queued = this.answers.shift();
        if (queued !== undefined) return resolve(queued);
        const timer = setTimeout(() => {
          this.waiter = null;
          this.child.kill('SIGKILL');
          reject(new Error(`did not finish within ${timeoutMs} ms`));
        }, timeoutMs);
        this.waiter = (l) => {
          clearTimeout(timer);
          resolve(l);
        };
      });
      const answer = JSON.parse(line!) as { code: number; stdout: string; stderr: string; crashed?: string };
      if (answer.crashed !== undefined) throw new Error(answer.crashed);
      return answer;
    } finally {
      for (const s of ref) s.unref();
    }
  }
}

export class OpenstackCli {
  private readonly slots: Slots;
  private readonly idle: Runner[] = [];
  private readonly timeoutMs: number;
  /** Every call made, with its wall time, for the summary a slow run needs. */
  readonly calls: Array<{ command: string; ms: number; code: number | null }> = [];

  constructor(
    private readonly cloudsYaml: string,
    opts: { concurrency?: number; timeoutMs?: number } = {},
  ) {
    this.slots = new Slots(opts.concurrency ?? 4);
    this.timeoutMs = opts.timeoutMs ?? 120_000;
  }

  async run(cloud: string, args: readonly string[]): Promise<CliResult> {
    const argv = ['--os-cloud', cloud, ...args];
    const command = `openstack ${argv.map(shellQuote).join(' ')}`;
    await this.slots.take();
    const started = Date.now();
    try {
      const result = await this.inRunner(argv, command);
      this.calls.push({ command, ms: Date.now() - started, code: result.code });
      return result;
    } finally {
      this.slots.give();
    }
  }

  /** Runs a show/list/create command with `-f json`, requires success and parses stdout. */
  async json<T = Record<string, unknown>>(cloud: string, args: readonly string[]): Promise<T> {
    const r = await this.ok(cloud, [...args, '-f', 'json']);
    try {
      return JSON.parse(r.stdout) as T;
    } catch {
      throw new Error(`${r.command}: stdout is not JSON:\n${r.stdout}\n${r.stderr}`);
    }
  }

  async ok(cloud: string, args: readonly string[]): Promise<CliResult> {
    const r = await this.run(cloud, args);
    if (r.code !== 0) throw new Error(`${r.command} exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    return r;
  }

  /** Requires failure; returns what the CLI printed (its error message is on stderr). */
  async fails(cloud: string, args: readonly string[]): Promise<string> {
    const r = await this.run(cloud, args);
    if (r.code === 0) throw new Error(`${r.command} was expected to fail but succeeded:\n${r.stdout}`);
    return `${r.stderr}\n${r.stdout}`;
  }

  private async inRunner(argv: readonly string[], command: string): Promise<CliResult> {
    let runner = this.idle.pop();
    while (runner && !runner.usable) runner = this.idle.pop();
    runner ??= new Runner(pythonClientEnv(this.cloudsYaml));
    try {
      const r = await runner.run(argv, this.timeoutMs);
      return { ...r, command };
    } catch (e) {
      throw new Error(`${command}: ${(e as Error).message}`);
    } finally {
      if (runner.usable) this.idle.push(runner);
    }
  }

  /** The installed `openstack` as a user runs it: a process of its own. */
  async binary(cloud: string, args: readonly string[]): Promise<CliResult> {
    const argv = ['--os-cloud', cloud, ...args];
    const command = `openstack ${argv.map(shellQuote).join(' ')}`;
    await this.slots.take();
    try {
      return await this.spawnOnce(argv, command);
    } finally {
      this.slots.give();
    }
  }

  private spawnOnce(argv: readonly string[], command: string): Promise<CliResult> {
    return new Promise((resolve, reject) => {
      const child = spawn(OPENSTACK_BIN, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: pythonClientEnv(this.cloudsYaml) });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`${command} did not finish within ${this.timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
      }, this.timeoutMs);
      child.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr, command });
      });
    });
  }
}

/**
 * Polls `loadbalancer show` until the load balancer is ACTIVE, for steps whose own `--wait` is
 * unusable or absent. ERROR never turns ACTIVE by itself, so it ends the wait at once; a status
 * still not ACTIVE after `timeoutMs` (generous: the machine may be loaded) ends it too, naming it.
 */
export async function waitActive(cli: OpenstackCli, cloud: string, lbId: string, timeoutMs = 180_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = String((await cli.json(cloud, ['loadbalancer', 'show', lbId])).provisioning_status);
    if (status === 'ACTIVE') return;
    if (status === 'ERROR') throw new Error(`load balancer ${lbId} went to ERROR instead of ACTIVE`);
    if (Date.now() > deadline) throw new Error(`load balancer ${lbId} still ${status} after ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

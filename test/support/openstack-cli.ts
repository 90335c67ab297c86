/**
 * Runs the real `openstack` CLI (python-openstackclient + octaviaclient) against a clouds.yaml.
 * Each call is a fresh Python process (~1 s of start-up), so calls from independent
 * lifecycles may overlap, up to a bound that keeps a 2-core machine responsive.
 */
import { spawn } from 'node:child_process';
import { pythonClientEnv } from './ostia-process.js';

export const OPENSTACK_BIN = '/usr/bin/openstack';

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

export class OpenstackCli {
  private readonly slots: Slots;
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
      const result = await this.spawnOnce(argv, command);
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

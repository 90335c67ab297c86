/**
 * Supervises the amphora's keepalived, a child of the agent like HAProxy: started on the first config
 * with a `vrrp` section, reloaded (SIGHUP) when the rendered file changes, stopped with the agent or
 * when a config without `vrrp` arrives, and restarted with backoff whenever it exits on its own.
 *
 * What keepalived 2.2.7 needs to run as the amphora's uid, with only the ambient CAP_NET_ADMIN and
 * CAP_NET_RAW of the amphora's network namespace (measured here):
 * - its pid files away from /run (`-p`, `-r`): the amphora's /run is root's private tmpfs;
 * - `--dont-fork` and `--log-console --no-syslog`: it stays the agent's child and logs on its output,
 *   which the agent reads into its own log (there is no syslog socket in the amphora);
 * - `--vrrp` only, and `--dont-respawn`: when the VRRP child dies the parent exits, and this supervisor,
 *   not keepalived, restarts the pair (a respawned child would not be seen here);
 * - no `vrrp_script` (./render.ts says why), hence neither `script_user` nor `enable_script_security`,
 *   which would need a passwd entry for the uid;
 * - nothing else: raw VRRP sockets and the VIP's netlink changes are what the two capabilities allow.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { ExitListeners } from '../exit-listeners.js';
import { OneAtATime } from '../one-at-a-time.js';
import { livePid } from '../pid-file.js';
import { Restarts, type RestartBackoff } from '../restarts.js';

const run = promisify(execFile);

export const KEEPALIVED_BINARY = '/usr/sbin/keepalived';

export interface KeepalivedFiles {
  config: string;
  pidFile: string;
  vrrpPidFile: string;
}

export interface KeepalivedProcessOptions {
  binary?: string;
  files: KeepalivedFiles;
  log: Pick<Console, 'info' | 'warn' | 'error'>;
  restartBackoff?: RestartBackoff;
  /** How long a start may take to report `Startup complete`, and a stop to end. */
  timeoutMs?: number;
}

export class KeepalivedProcess {
  private child: ChildProcess | null = null;
  private readonly exitListeners = new ExitListeners<string>();
  private readonly lineListeners = new Set<(line: string) => void>();
  /** apply/stop and crash restarts run one at a time. */
  private readonly operations = new OneAtATime();
  private readonly restarts: Restarts;

  constructor(private readonly options: KeepalivedProcessOptions) {
    this.restarts = new Restarts({ ...options, name: 'keepalived', operations: this.operations, running: () => this.child !== null, spawn: () => this.spawnAndWait() });
  }

  private get binary(): string {
    return this.options.binary ?? KEEPALIVED_BINARY;
  }

  private get timeoutMs(): number {
    return this.options.timeoutMs ?? 10_000;
  }

  get running(): boolean {
    return this.child !== null;
  }

  /** The pid of the VRRP child (the process that holds the VIP and sends adverts), if it runs. */
  vrrpPid(): number | null {
    return this.child ? livePid(this.options.files.vrrpPidFile, this.options.files.config) : null;
  }

  /** `keepalived -t` on a candidate file: keepalived's own words when it refuses it, else null. */
  async validate(file: string): Promise<string | null> {
    try {
      await run(this.binary, ['--config-test', '-f', file], { timeout: 30_000 });
      return null;
    } catch (e) {
      const failure = e as { stdout?: string; stderr?: string; message: string };
      return `${failure.stdout ?? ''}${failure.stderr ?? ''}`.trim() || failure.message;
    }
  }

  /** Starts keepalived on the config file, or has a running one re-read it; then keeps it running until `stop`. */
  apply(): Promise<void> {
    return this.operations.run(async () => {
      this.restarts.keepRunning();
      if (this.child) this.child.kill('SIGHUP');
      else await this.spawnAndWait();
    });
  }

  /** SIGTERM: the VRRP child gives the VIP up with a priority-0 advert, so the peer takes over at once. */
  stop(): Promise<void> {
    return this.operations.run(async () => {
      this.restarts.letStop();
      const child = this.child;
      if (!child) return;
      for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
        const exited = this.exitListeners.within(this.timeoutMs);
        child.kill(signal);
        if (await exited) return;
      }
      throw new Error(`keepalived ${child.pid} did not exit after SIGKILL`);
    });
  }

  private async spawnAndWait(): Promise<void> {
    const { files } = this.options;
    // A keepalived of this amphora left by a previous agent (or a VRRP child whose parent was killed) would
    // answer adverts beside the new one; the new one removes the VIPs it finds at startup.
    for (const pidFile of [files.pidFile, files.vrrpPidFile]) {
      const pid = livePid(pidFile, files.config);
      if (pid) {
        this.options.log.warn(`stopping keepalived ${pid} left running by a previous agent`);
        process.kill(pid, 'SIGKILL');
      }
    }
    const args = ['--dont-fork', '--log-console', '--no-syslog', '--vrrp', '--dont-respawn', '-f', files.config, '-p', files.pidFile, '-r', files.vrrpPidFile];
    const child = spawn(this.binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.restarts.spawned();
    const started = this.startedWithin(this.timeoutMs);
    for (const stream of [child.stdout!, child.stderr!]) createInterface({ input: stream }).on('line', (line) => this.onLine(line));
    child.on('exit', (code, signal) => this.onExit(child, signal ?? `code ${code}`));
    child.on('error', (e) => this.onExit(child, e.message));
    const outcome = await started;
    if (outcome !== 'started') {
      if (this.child === child) child.kill('SIGKILL');
      throw new Error(`keepalived did not start: ${outcome}`);
    }
  }

  /** 'started' on keepalived's `Startup complete`, otherwise why not. */
  private startedWithin(ms: number): Promise<string> {
    return new Promise((resolve) => {
      const finish = (outcome: string) => {
        clearTimeout(timer);
        this.lineListeners.delete(onLine);
        this.exitListeners.delete(onExit);
        resolve(outcome);
      };
      const onLine = (line: string) => {
        if (/Startup complete/.test(line)) finish('started');
      };
      const onExit = () => finish('it exited');
      const timer = setTimeout(() => finish(`no 'Startup complete' within ${ms} ms`), ms);
      this.lineListeners.add(onLine);
      this.exitListeners.add(onExit);
    });
  }

  private onLine(line: string): void {
    // With --log-console every line starts with keepalived's own timestamp: the agent's log has one.
    const text = line.replace(/^\w{3} \w{3} +\d+ [\d:]+ \d{4}: /, '');
    this.options.log.info(`keepalived: ${text}`);
    for (const listener of [...this.lineListeners]) listener(text);
  }

  private onExit(child: ChildProcess, how: string): void {
    if (this.child !== child) return;
    this.child = null;
    this.exitListeners.notify(how);
    if (!this.restarts.keptRunning) return;
    this.options.log.error(`keepalived ${child.pid} exited unexpectedly (${how}); restarting it`);
    this.restarts.schedule();
  }
}

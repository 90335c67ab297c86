/**
 * Supervises the one HAProxy of an amphora: a master-worker HAProxy (`-W`, master CLI on
 * `-S`) kept in the foreground as a child of the agent, so its exit is an event here.
 *
 * - `start` spawns it and resolves when the master reports `Loading success.`; once started,
 *   HAProxy is wanted running until `stop`: a crash is restarted with exponential backoff and,
 *   until it is back, `running` is false (the heartbeat then reports no listeners, which the
 *   health manager sees).
 * - `reload` is the master CLI's `reload` (hitless, reference/dataplane.md §4), after dumping
 *   `show servers state` into the server-state file so member health, weight and admin state
 *   set at runtime survive it; its outcome is the master's next `Loading success.` or
 *   `Loading failure!` line, on which the old worker keeps serving.
 * - An HAProxy left running by a previous agent (the agent was killed, HAProxy was not) is
 *   taken over with `-sf`: the new master binds, then tells the old one to finish softly.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { writeFileAtomically } from '../atomic-file.js';
import { ExitListeners } from '../exit-listeners.js';
import { OneAtATime } from '../one-at-a-time.js';
import { livePid } from '../pid-file.js';
import { Restarts, type RestartBackoff } from '../restarts.js';
import { HaproxyRuntime } from './runtime.js';

const run = promisify(execFile);

export interface HaproxyFiles {
  config: string;
  masterSocket: string;
  statsSocket: string;
  pidFile: string;
  stateFile: string;
}

export interface HaproxyProcessOptions {
  binary: string;
  /** A command prefix HAProxy is started through (../capabilities.ts: without the agent's capabilities). */
  launcher?: readonly string[];
  files: HaproxyFiles;
  log: Pick<Console, 'info' | 'warn' | 'error'>;
  /** How long start and reload may take before they count as failed. */
  readyTimeoutMs?: number;
  /** Graceful stop budget before the hard stop. */
  stopTimeoutMs?: number;
  restartBackoff?: RestartBackoff;
}

export interface ExitRecord {
  code: number | null;
  signal: NodeJS.Signals | null;
  at: number;
}

export interface HaproxyStatus {
  /** The master is up and a worker of it serves (after a failed reload: the previous one). */
  running: boolean;
  masterPid: number | null;
  restarts: number;
  lastExit: ExitRecord | null;
}

export class HaproxyError extends Error {
  constructor(
    message: string,
    /** HAProxy's own words: what it logged since the (re)load was asked for. */
    readonly output: string,
  ) {
    super(message);
  }
}

/** The last lines HAProxy logged, quoted when it exits unexpectedly. */
const LOG_LINES_KEPT = 3;

interface LoadWatch {
  /** The master's `Loading success.`/`Loading failure!` line, or why there is none. */
  outcome: Promise<string>;
  /** What HAProxy logged while the load was watched. */
  lines: string[];
  cancel(reason: string): void;
}

export class HaproxyProcess {
  private child: ChildProcess | null = null;
  private loaded = false;
  /**
   * Settles once the master's CLI answers after the last load: the master takes signals and
   * commands only then, a moment (150–250 ms here) after its workers already serve. Loads do not
   * wait for it; the next reload or stop does.
   */
  private masterReady: Promise<void> = Promise.resolve();
  private lastExit: ExitRecord | null = null;
  private readonly recentLines: string[] = [];
  private readonly lineListeners = new Set<(line: string) => void>();
  private readonly exitListeners = new ExitListeners<ExitRecord>();
  /** start/reload/stop and crash restarts run one at a time. */
  private readonly operations = new OneAtATime();
  private readonly restarts: Restarts;
  readonly runtime: HaproxyRuntime;

  constructor(private readonly options: HaproxyProcessOptions) {
    this.runtime = new HaproxyRuntime(options.files.statsSocket);
    this.restarts = new Restarts({ ...options, name: 'haproxy', operations: this.operations, running: () => this.child !== null, spawn: () => this.spawnAndWait() });
  }

  get running(): boolean {
    return this.child !== null && this.loaded;
  }

  status(): HaproxyStatus {
    return { running: this.running, masterPid: this.child?.pid ?? null, restarts: this.restarts.count, lastExit: this.lastExit };
  }

  /** `haproxy -v`'s version number, e.g. `2.6.12-1+deb12u4`. */
  async version(): Promise<string> {
    const { stdout } = await run(this.options.binary, ['-v'], { timeout: 10_000 });
    const found = /version (\S+)/i.exec(stdout);
    if (!found) throw new Error(`cannot read the version in '${stdout.split('\n')[0]}'`);
    return found[1]!;
  }

  /** Runs `haproxy -c` on `text`; resolves with HAProxy's output when it refuses it, else null. */
  async validate(text: string): Promise<string | null> {
    // Beside the real file, so relative paths in it resolve the same way.
    const candidate = join(dirname(this.options.files.config), `.haproxy-check-${randomBytes(6).toString('hex')}.cfg`);
    writeFileSync(candidate, text, { mode: 0o600 });
    try {
      await run(this.options.binary, ['-c', '-f', candidate], { timeout: 30_000 });
      return null;
    } catch (e) {
      const failure = e as { stdout?: string; stderr?: string; message: string };
      const output = `${failure.stdout ?? ''}${failure.stderr ?? ''}`.trim() || failure.message;
      return output.split(candidate).join('haproxy.cfg');
    } finally {
      rmSync(candidate, { force: true });
    }
  }

  /** Starts HAProxy on the config file (if it is not running) and keeps it running until `stop`. */
  start(): Promise<void> {
    return this.load(false);
  }

  /** Hitless reload of the config file; starts HAProxy instead if it is not running. */
  reload(): Promise<void> {
    return this.load(true);
  }

  /** Soft stop (connections finish) within stopTimeoutMs, then a hard stop, then SIGKILL. */
  stop(): Promise<void> {
    return this.operations.run(async () => {
      this.restarts.letStop();
      const child = this.child;
      // An open CLI connection would hold the soft-stopping worker until the hard stop.
      this.runtime.forgetSession();
      if (!child) return;
      await this.masterReady;
      const budget = this.options.stopTimeoutMs ?? 5000;
      for (const [signal, waitMs] of [['SIGUSR1', budget], ['SIGTERM', 2000], ['SIGKILL', 2000]] as const) {
        const exit = this.exitListeners.within(waitMs);
        child.kill(signal);
        if (await exit) return;
      }
      throw new Error(`haproxy master ${child.pid} did not exit after SIGKILL`);
    });
  }

  private load(reloadIfRunning: boolean): Promise<void> {
    return this.operations.run(async () => {
      this.restarts.keepRunning();
      if (!this.child) await this.spawnAndWait();
      else if (reloadIfRunning) await this.reloadNow();
    });
  }

  private async spawnAndWait(): Promise<void> {
    const { files } = this.options;
    const takeOver = this.orphanMasterPid();
    // No -p: the config's `pidfile` names files.pidFile (both at once make HAProxy warn).
    const args = ['-W', '-S', files.masterSocket, '-f', files.config, ...(takeOver ? ['-sf', String(takeOver)] : [])];
    const [file, ...prefix] = [...(this.options.launcher ?? []), this.options.binary];
    const child = spawn(file!, [...prefix, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    this.child = child;
    this.loaded = false;
    this.restarts.spawned();
    const watch = this.watchLoad();
    createInterface({ input: child.stderr! }).on('line', (line) => this.onLine(line));
    child.on('exit', (code, signal) => this.onExit(child, { code, signal, at: Date.now() }));
    child.on('error', (e) => {
      this.onLine(`[spawn] ${e.message}`);
      this.onExit(child, { code: null, signal: null, at: Date.now() });
    });
    if (takeOver) this.options.log.info(`taking over haproxy master ${takeOver} left by a previous agent`);
    try {
      await this.judge('start', watch);
    } catch (e) {
      // A master that hangs is made into one that exited, so the crash path restarts it.
      if (this.child === child) child.kill('SIGKILL');
      throw e;
    }
  }

  private async reloadNow(): Promise<void> {
    await this.masterReady;
    await this.saveServerState();
    const watch = this.watchLoad();
    await masterCommand(this.options.files.masterSocket, 'reload', this.readyTimeoutMs).catch((e: Error) => watch.cancel(e.message));
    await this.judge('reload', watch);
  }

  private get readyTimeoutMs(): number {
    return this.options.readyTimeoutMs ?? 15_000;
  }

  /** The `show servers state` dump, written where `server-state-file` points; best effort. */
  private async saveServerState(): Promise<void> {
    if (!this.loaded) return;
    try {
      writeFileAtomically(this.options.files.stateFile, await this.runtime.showServersState());
    } catch (e) {
      this.options.log.warn(`haproxy server state not saved before reload, runtime member state will reset: ${(e as Error).message}`);
    }
  }

  /** Watches for the master's verdict on the load about to be triggered, its exit, or the timeout. */
  private watchLoad(): LoadWatch {
    let cancel: (reason: string) => void = () => undefined;
    const lines: string[] = [];
    const outcome = new Promise<string>((resolve) => {
      const finish = (result: string): void => {
        clearTimeout(timer);
        this.lineListeners.delete(onLine);
        this.exitListeners.delete(onExit);
        resolve(result);
      };
      const onLine = (line: string): void => {
        lines.push(line);
        if (/Loading (success|failure)/.test(line)) finish(line);
      };
      const onExit = (exit: ExitRecord): void => finish(`exited (${exit.signal ?? `code ${exit.code}`})`);
      const timer = setTimeout(() => finish(`gave no verdict within ${this.readyTimeoutMs} ms`), this.readyTimeoutMs);
      this.lineListeners.add(onLine);
      this.exitListeners.add(onExit);
      cancel = finish;
    });
    return { outcome, lines, cancel: (reason) => cancel(reason) };
  }

  private async judge(what: 'start' | 'reload', watch: LoadWatch): Promise<void> {
    const outcome = await watch.outcome;
    if (/Loading success/.test(outcome)) {
      this.loaded = true;
      this.runtime.forgetSession();
      // A master whose CLI never answers is left for the next reload or stop to find out about.
      this.masterReady = masterCommand(this.options.files.masterSocket, 'show proc', this.readyTimeoutMs, /\bmaster\b/).then(
        () => undefined,
        (e: Error) => this.options.log.warn(`haproxy master CLI did not answer after the ${what}: ${e.message}`),
      );
      return;
    }
    // A failed reload leaves the previous worker serving; anything else leaves nothing.
    if (what === 'start' || !/Loading failure/.test(outcome)) this.loaded = false;
    throw new HaproxyError(`haproxy ${what} failed: ${outcome.replace(/^\[\w+\]\s+\(\d+\) : /, '')}`, watch.lines.join('\n'));
  }

  private onLine(line: string): void {
    // HAProxy's own account (checks failing, servers going down) belongs in the agent's log.
    this.options.log.info(`haproxy: ${line}`);
    this.recentLines.push(line);
    if (this.recentLines.length > LOG_LINES_KEPT) this.recentLines.shift();
    for (const listener of [...this.lineListeners]) listener(line);
  }

  private onExit(child: ChildProcess, exit: ExitRecord): void {
    if (this.child !== child) return;
    this.child = null;
    this.loaded = false;
    this.runtime.forgetSession();
    this.lastExit = exit;
    this.exitListeners.notify(exit);
    if (!this.restarts.keptRunning) return;
    this.options.log.error(`haproxy master ${child.pid} exited unexpectedly (${exit.signal ?? `code ${exit.code}`}): ${this.recentLines.join(' | ')}`);
    this.restarts.schedule();
  }

  /** The pid in the pid file, if it is a live HAProxy master of this very amphora (its master socket). */
  private orphanMasterPid(): number | null {
    return livePid(this.options.files.pidFile, this.options.files.masterSocket);
  }
}

/**
 * One command on the master CLI, resolving with its reply. The master listens there a moment
 * after it reports a load (and again after each re-execution), so until `timeoutMs` a refused
 * connection is retried, as is an empty reply when `replied` asks for one.
 */
async function masterCommand(socketPath: string, command: string, timeoutMs: number, replied?: RegExp): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 1; ; attempt++) {
    let retry: unknown;
    try {
      const reply = await sendOnce(socketPath, command, timeoutMs);
      if (!replied || replied.test(reply)) return reply;
      retry = new Error(`haproxy master socket ${socketPath}: unexpected reply to '${command}': ${reply.slice(0, 200) || '(none)'}`);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // Not listening yet, or closed before taking the command.
      if (!['ECONNREFUSED', 'ENOENT', 'EPIPE', 'ECONNRESET'].includes(code ?? '')) throw e;
      retry = e;
    }
    if (Date.now() > deadline || attempt >= 1000) throw retry;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The master closes the connection after answering, sometimes with a reset: either ends the reply. */
function sendOnce(socketPath: string, command: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let connected = false;
    let reply = '';
    const socket = createConnection(socketPath);
    socket.setEncoding('utf8');
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`haproxy master socket ${socketPath}: no answer to '${command}' within ${timeoutMs} ms`)));
    socket.on('connect', () => {
      connected = true;
      socket.end(`${command}\n`);
    });
    socket.on('data', (chunk: string) => (reply += chunk));
    socket.on('error', (e: NodeJS.ErrnoException) => (connected && e.code === 'ECONNRESET' ? resolve(reply) : reject(e)));
    socket.on('close', () => resolve(reply));
  });
}

/**
 * What the `local` and `netns` compute drivers share: an amphora is `ostia agent --dir <rootDir>/<amphoraId>`
 * (the bundle dist/ostia-agent.mjs) started detached, in its own process group with its output in agent.log,
 * so it keeps serving when the controller that booted it stops or restarts, as a VM would. Everything about
 * an amphora lives in its directory; the directory is the amphora's only record here.
 *
 *   agent.json              AgentBootConfig (holds the heartbeat key: 0600)
 *   server.pem, server.key  the agent's TLS identity (0600)
 *   client-ca.pem           the CA controllers' client certs chain to (0600)
 *   agent.pid               { pid, startTime } of the group leader
 *   agent.log               the agent's stdout and stderr
 *
 * The agent gets a pipe on file descriptor READY_FD and writes a line to it once it listens, so
 * a boot is awaited, not polled. A driver says what surrounds the agent: what it prepares before the
 * start, how the command is wrapped, which processes are the amphora's, what it removes after them.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import type { Socket } from 'node:net';
import { once } from 'node:events';
import { accessSync, closeSync, constants, existsSync, openSync, statSync } from 'node:fs';
import { chmod, mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isUuid } from '../domain/net.js';
import type { AgentBootConfig, AmphoraSpec, ComputeDriver, ComputeStatus } from './compute-driver.js';
import { leaderRunning, startTimeOf, stopGroup, type GroupRecord } from './process-group.js';

export interface ProcessComputeOptions {
  /**
   * The program an amphora runs; default `ostia agent --dir <dir> --ready-fd 3` (bundled) under this Node. Tests
   * substitute their own, which must write a line to READY_FD once serving.
   */
  command?: (dir: string) => Command;
  /** How long an amphora's processes get after SIGTERM before SIGKILL (HAProxy finishes its connections). */
  stopGraceMs?: number;
}

export interface Command {
  file: string;
  args: string[];
}

export const AMPHORA_FILES = {
  config: 'agent.json',
  cert: 'server.pem',
  key: 'server.key',
  clientCa: 'client-ca.pem',
  pid: 'agent.pid',
  log: 'agent.log',
} as const;
const DEFAULT_STOP_GRACE_MS = 10_000;
export const READY_FD = 3;
/** The bundled `ostia agent` that `npm run build` writes (scripts/bundle-agent.mjs). */
const AGENT_BUNDLE = fileURLToPath(new URL('../../ostia-agent.mjs', import.meta.url));

export function defaultAgentCommand(dir: string): Command {
  return { file: process.execPath, args: [AGENT_BUNDLE, '--dir', dir, '--ready-fd', String(READY_FD)] };
}

export abstract class ProcessCompute implements ComputeDriver {
  readonly rootDir: string;
  private readonly command: (dir: string) => Command;
  protected readonly stopGraceMs: number;
  /** Amphorae this process booted whose readiness nobody has awaited yet. */
  private readonly starting = new Map<string, Readiness>();

  /** `name` is the driver's (`compute.driver`), and its compute ids are `<name>:<amphora id>`. */
  constructor(
    private readonly name: string,
    rootDir: string,
    opts: ProcessComputeOptions,
  ) {
    this.rootDir = resolve(rootDir);
    this.command = opts.command ?? defaultAgentCommand;
    this.stopGraceMs = opts.stopGraceMs ?? DEFAULT_STOP_GRACE_MS;
  }

  /** Sets up what the amphora runs in, after its boot files are written and before its agent starts. */
  protected abstract prepare(spec: AmphoraSpec, dir: string, agent: Command): Promise<void>;
  /** The command that starts `agent` inside what prepare() set up. */
  protected abstract wrap(agent: Command, amphoraId: string, dir: string): Command;
  /** The amphora's process groups, besides the recorded one (a crashed agent's HAProxy, a group spawned and not recorded). */
  protected abstract groupsOf(amphoraId: string, dir: string): Promise<GroupRecord[]>;
  /** Removes what prepare() set up, once the amphora's processes are gone. */
  protected abstract teardown(amphoraId: string): Promise<void>;

  /** Where an amphora's directory must be (AmphoraSpec.dir). */
  amphoraDir(amphoraId: string): string {
    return join(this.rootDir, amphoraId);
  }

  async boot(spec: AmphoraSpec, signal: AbortSignal): Promise<string> {
    signal.throwIfAborted();
    const dir = this.checkedDir(spec);
    const computeId = `${this.name}:${spec.amphoraId}`;
    const previous = await readRecord(dir);
    if (previous && leaderRunning(previous)) return computeId;
    // A crashed agent may have left its HAProxy holding the VIP ports, and a controller that died right after
    // spawning left a group with no pid file: clear them before starting anew.
    await this.stopGroups(spec.amphoraId, dir, previous);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await chmod(dir, 0o700);
    await writeBootFiles(dir, spec);
    await this.prepare(spec, dir, this.command(dir));
    signal.throwIfAborted();
    const { record, readiness } = await this.start(spec.amphoraId, dir);
    this.starting.set(computeId, readiness);
    await writeAtomically(join(dir, AMPHORA_FILES.pid), JSON.stringify(record));
    return computeId;
  }

  async started(computeId: string, signal: AbortSignal): Promise<void> {
    const readiness = this.starting.get(computeId);
    if (!readiness) return;
    // Only while awaited does the pipe keep this process alive: a stopping controller never waits for a boot.
    readiness.pipe.ref();
    readiness.child.ref();
    try {
      await raceAbort(readiness.started, signal);
    } finally {
      readiness.pipe.unref();
      readiness.child.unref();
      this.starting.delete(computeId);
    }
  }

  async status(computeId: string): Promise<ComputeStatus> {
    const record = await readRecord(this.amphoraDir(this.parseComputeId(computeId)));
    return record && leaderRunning(record) ? 'running' : 'stopped';
  }

  async delete(computeId: string): Promise<void> {
    this.starting.delete(computeId);
    const amphoraId = this.parseComputeId(computeId);
    const dir = this.amphoraDir(amphoraId);
    await this.stopGroups(amphoraId, dir, await readRecord(dir));
    await this.teardown(amphoraId);
    await rm(dir, { recursive: true, force: true });
  }

  async list(): Promise<Array<{ computeId: string; amphoraId: string }>> {
    let entries;
    try {
      entries = await readdir(this.rootDir, { withFileTypes: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
    return entries
      .filter((e) => e.isDirectory() && isUuid(e.name))
      .map((e) => ({ computeId: `${this.name}:${e.name}`, amphoraId: e.name }))
      .sort((a, b) => a.amphoraId.localeCompare(b.amphoraId));
  }

  parseComputeId(computeId: string): string {
    const prefix = `${this.name}:`;
    const amphoraId = computeId.startsWith(prefix) ? computeId.slice(prefix.length) : '';
    if (!isUuid(amphoraId)) throw new Error(`'${computeId}' is not a compute id of the ${this.name} driver (${prefix}<amphora id>)`);
    return amphoraId;
  }

  /** The recorded group and any other the driver finds. */
  private async stopGroups(amphoraId: string, dir: string, recorded: GroupRecord | null): Promise<void> {
    const groups = (await this.groupsOf(amphoraId, dir)).filter((g) => g.pid !== recorded?.pid);
    if (recorded) groups.push(recorded);
    await Promise.all(groups.map((g) => stopGroup(g, this.stopGraceMs)));
  }

  private checkedDir(spec: AmphoraSpec): string {
    if (!isUuid(spec.amphoraId)) throw new Error(`cannot boot amphora '${spec.amphoraId}': the id must be a UUID`);
    const expected = this.amphoraDir(spec.amphoraId);
    if (resolve(spec.dir) !== expected)
      throw new Error(`cannot boot amphora ${spec.amphoraId} in ${spec.dir}: the ${this.name} compute driver keeps amphorae in ${expected}`);
    return expected;
  }

  private async start(amphoraId: string, dir: string): Promise<{ record: GroupRecord; readiness: Readiness }> {
    const { file, args } = this.wrap(this.command(dir), amphoraId, dir);
    const log = openSync(join(dir, AMPHORA_FILES.log), 'a', 0o600);
    try {
      // detached: a new session and process group, so signals to the controller's group never reach it
      // and delete can signal the agent and its HAProxy together.
      const stdio: StdioOptions = ['ignore', log, log];
      stdio[READY_FD] = 'pipe';
      const child = spawn(file, args, { cwd: dir, detached: true, stdio, env: amphoraEnv() });
      await once(child, 'spawn');
      const readiness = readinessOf(child, dir);
      child.unref();
      const pid = child.pid!;
      return { record: { pid, startTime: startTimeOf(pid) }, readiness };
    } finally {
      closeSync(log);
    }
  }
}

interface Readiness {
  child: ChildProcess;
  pipe: Socket;
  started: Promise<void>;
}

/** Settles on the first line on the ready pipe (then closed) or on the child's exit. */
function readinessOf(child: ChildProcess, dir: string): Readiness {
  const pipe = child.stdio[READY_FD] as Socket;
  pipe.unref();
  const started = new Promise<void>((resolve, reject) => {
    const done = () => {
      child.off('exit', exited);
      pipe.destroy();
    };
    const exited = (code: number | null, signal: NodeJS.Signals | null) => {
      done();
      reject(new Error(`the processes of amphora in ${dir} exited (${signal ?? `code ${code}`}) before its agent listened; see ${join(dir, AMPHORA_FILES.log)}`));
    };
    child.once('exit', exited);
    pipe.once('data', () => {
      done();
      resolve();
    });
    pipe.on('error', () => undefined);
  });
  // Observed now so that an early exit nobody awaits is not an unhandled rejection; `started()` rethrows it.
  started.catch(() => undefined);
  return { child, pipe, started };
}

function raceAbort(promise: Promise<void>, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  return new Promise<void>((resolve, reject) => {
    const aborted = () => reject(signal.reason);
    signal.addEventListener('abort', aborted, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', aborted));
  });
}

/** The amphora gets none of the controller's environment (database URL, tokens): only where to find programs. */
function amphoraEnv(): NodeJS.ProcessEnv {
  return { PATH: amphoraPath() };
}

/** The controller's PATH plus the sbin directories, where Debian installs haproxy (a user's PATH often lacks them). */
export function amphoraPath(): string {
  const dirs = (process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin').split(':').filter(Boolean);
  for (const sbin of ['/usr/local/sbin', '/usr/sbin', '/sbin']) if (!dirs.includes(sbin)) dirs.push(sbin);
  return dirs.join(':');
}

/** Where an amphora would find `program` (a name looked up on amphoraPath(), or a path), or null. */
export function findAmphoraProgram(program: string): string | null {
  const candidates = program.includes('/') ? [resolve(program)] : amphoraPath().split(':').map((dir) => join(dir, program));
  for (const file of candidates) {
    try {
      accessSync(file, constants.X_OK);
      if (statSync(file).isFile()) return file;
    } catch {
      // not there, or not executable: try the next
    }
  }
  return null;
}

async function writeBootFiles(dir: string, spec: AmphoraSpec): Promise<void> {
  const config: AgentBootConfig = {
    amphoraId: spec.amphoraId,
    managementAddress: spec.managementAddress,
    agentPort: spec.agentPort,
    certFile: join(dir, AMPHORA_FILES.cert),
    keyFile: join(dir, AMPHORA_FILES.key),
    clientCaFile: join(dir, AMPHORA_FILES.clientCa),
    heartbeat: spec.heartbeat,
    haproxyBinary: spec.haproxyBinary,
    maxconn: spec.maxconn,
  };
  await writeAtomically(config.certFile, spec.certPem);
  await writeAtomically(config.keyFile, spec.keyPem);
  await writeAtomically(config.clientCaFile, spec.clientCaPem);
  await writeAtomically(join(dir, AMPHORA_FILES.config), JSON.stringify(config, null, 2) + '\n');
}

/** A fresh 0600 file renamed into place: a re-boot never leaves a half-written or looser-moded secret. */
async function writeAtomically(file: string, content: string): Promise<void> {
  const temp = `${file}.tmp-${process.pid}`;
  await writeFile(temp, content, { mode: 0o600 });
  await rename(temp, file);
}

async function readRecord(dir: string): Promise<GroupRecord | null> {
  const file = join(dir, AMPHORA_FILES.pid);
  if (!existsSync(file)) return null;
  const parsed = JSON.parse(await readFile(file, 'utf8')) as Partial<GroupRecord>;
  if (!Number.isInteger(parsed.pid) || (parsed.pid as number) <= 1) throw new Error(`${file} does not hold a pid record; delete the file if no agent runs there`);
  return { pid: parsed.pid as number, startTime: typeof parsed.startTime === 'string' ? parsed.startTime : null };
}

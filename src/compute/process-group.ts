/**
 * An amphora of the local and netns drivers is a process group: the agent leads it and HAProxy runs inside it. The
 * controller that started it may be long gone, so the group is found again from a pid
 * file and checked before it is signalled: a pid file that outlived a reboot must not make
 * us kill whatever process now has that number.
 *
 * On Linux /proc tells a process's start time (to detect pid reuse), its group and whether
 * it is a zombie (an exited process nobody reaped still answers kill(pid, 0)). Elsewhere
 * kill(pid, 0) is the best available answer.
 */
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export interface GroupRecord {
  /** The group leader's pid, which is also the group id (it was spawned detached). */
  pid: number;
  /** From /proc/<pid>/stat when it was started; null where /proc is absent. */
  startTime: string | null;
}

/** A process as /proc/<pid>/stat shows it. */
export interface ProcStat {
  pid: number;
  /** The executable's name as the kernel keeps it (15 characters at most): `node`, `haproxy`. */
  comm: string;
  state: string;
  ppid: number;
  pgrp: number;
  /** utime + stime, in clock ticks. */
  cpuTicks: number;
  startTime: string;
}

const HAS_PROC = existsSync('/proc/self/stat');
/** A process that exited no longer has a pid to wait on for us, so exit is observed by polling. */
const POLL_MS = 50;
/** After SIGKILL the kernel needs only moments; longer means the group is stuck (e.g. in D state). */
const KILL_WAIT_MS = 5_000;

/** null when the process is gone. */
export function readStat(pid: number): ProcStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name (field 2) may contain spaces and parentheses: fields resume after the last ')'.
  const close = text.lastIndexOf(')');
  const fields = text.slice(close + 2).split(' ');
  return {
    pid,
    comm: text.slice(text.indexOf('(') + 1, close),
    state: fields[0]!,
    ppid: Number(fields[1]),
    pgrp: Number(fields[2]),
    cpuTicks: Number(fields[11]) + Number(fields[12]),
    startTime: fields[19]!,
  };
}

export function startTimeOf(pid: number): string | null {
  return HAS_PROC ? (readStat(pid)?.startTime ?? null) : null;
}

/** A process (or, negative, a process group) exists that a signal could reach. */
export function signalExists(target: number): boolean {
  try {
    process.kill(target, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The leader is alive and is the process we started (not a later one with its pid). */
export function leaderRunning(record: GroupRecord): boolean {
  if (!HAS_PROC) return signalExists(record.pid);
  const stat = readStat(record.pid);
  return stat !== null && stat.state !== 'Z' && (record.startTime === null || stat.startTime === record.startTime);
}

/** The group's non-zombie processes, found one by one in /proc. */
export function* groupProcesses(pgid: number): Generator<ProcStat> {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(Number(entry));
    if (stat && stat.pgrp === pgid && stat.state !== 'Z') yield stat;
  }
}

/** Some non-zombie process is still in the group (HAProxy may outlive a crashed agent). */
function groupAlive(pgid: number): boolean {
  if (!HAS_PROC) return signalExists(-pgid);
  return !groupProcesses(pgid).next().done;
}

/**
 * Groups with a process working in `dir` (the agent is started there and HAProxy inherits it):
 * how a group is found when the controller died between spawning it and writing its pid file.
 */
export function groupsWorkingIn(dir: string): GroupRecord[] {
  if (!HAS_PROC) return [];
  const working = readdirSync('/proc').filter((entry) => {
    if (!/^\d+$/.test(entry)) return false;
    try {
      const cwd = readlinkSync(`/proc/${entry}/cwd`);
      // A directory removed under a running process reads as "<path> (deleted)".
      return cwd === dir || cwd === `${dir} (deleted)`;
    } catch {
      return false;
    }
  });
  return groupsOf(working.map(Number));
}

/** The live (non-zombie) processes of the group `record` leads: none once it is gone or its pid reused. */
export function groupMembers(record: GroupRecord): number[] {
  return HAS_PROC && leaderRunning(record) ? [...groupProcesses(record.pid)].map((p) => p.pid) : [];
}

/** The groups the live (non-zombie) processes among `pids` belong to. */
export function groupsOf(pids: readonly number[]): GroupRecord[] {
  const groups = new Map<number, GroupRecord>();
  for (const pid of pids) {
    const stat = readStat(pid);
    if (stat && stat.state !== 'Z' && !groups.has(stat.pgrp)) groups.set(stat.pgrp, { pid: stat.pgrp, startTime: startTimeOf(stat.pgrp) });
  }
  return [...groups.values()];
}

async function waitGone(pgid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (groupAlive(pgid)) {
    if (Date.now() >= deadline) return false;
    await sleep(POLL_MS);
  }
  return true;
}

function signalGroup(pgid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pgid, sig);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
  }
}

/**
 * SIGTERM to the leader only, so the agent soft-stops its HAProxy (open connections finish;
 * a SIGTERM straight to HAProxy would cut them), then SIGKILL to the whole group after
 * `graceMs`; resolves once no member is left.
 */
export async function stopGroup(record: GroupRecord, graceMs: number): Promise<void> {
  const stat = HAS_PROC ? readStat(record.pid) : null;
  // Linux never hands out a pid that still names a live group, so a reused leader pid means our group is gone.
  if (stat && record.startTime !== null && stat.startTime !== record.startTime) return;
  try {
    process.kill(record.pid, 'SIGTERM');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
  }
  if (await waitGone(record.pid, graceMs)) return;
  signalGroup(record.pid, 'SIGKILL');
  if (!(await waitGone(record.pid, KILL_WAIT_MS)))
    throw new Error(`process group ${record.pid} survived SIGKILL for ${KILL_WAIT_MS} ms; check it with 'ps -g ${record.pid}'`);
}

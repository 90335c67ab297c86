/**
 * What Linux's /proc tells of processes: their state, group and CPU time. Shared by `ostia baseline` (the
 * CPU an amphora's processes spend under load) and the benches (bench/support/processes.ts), so both count
 * CPU time one way.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcInfo {
  pid: number;
  /** The executable's name as the kernel keeps it (15 characters at most): `node`, `haproxy`. */
  comm: string;
  state: string;
  ppid: number;
  pgrp: number;
  /** utime + stime, in clock ticks. */
  cpuTicks: number;
}

/** null when the process is gone. */
export function procInfo(pid: number): ProcInfo | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // The command name may hold spaces and parentheses: the other fields resume after the last ')'.
  const close = text.lastIndexOf(')');
  const fields = text.slice(close + 2).split(' ');
  return {
    pid,
    comm: text.slice(text.indexOf('(') + 1, close),
    state: fields[0]!,
    ppid: Number(fields[1]),
    pgrp: Number(fields[2]),
    cpuTicks: Number(fields[11]) + Number(fields[12]),
  };
}

export function pids(): number[] {
  return readdirSync('/proc').filter((e) => /^\d+$/.test(e)).map(Number);
}

/** Live (non-zombie) members of a process group: an amphora is the group its agent leads. */
export function groupMembers(pgid: number): ProcInfo[] {
  const found: ProcInfo[] = [];
  for (const pid of pids()) {
    const info = procInfo(pid);
    if (info && info.pgrp === pgid && info.state !== 'Z') found.push(info);
  }
  return found;
}

let ticksPerSecond: number | undefined;
export function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** CPU seconds the processes have used so far; a process that ended counts 0, so many amphorae survive one going. */
export function cpuSecondsOfLive(list: readonly number[]): number {
  let ticks = 0;
  for (const pid of list) ticks += procInfo(pid)?.cpuTicks ?? 0;
  return ticks / clockTicks();
}

/**
 * The children a module spawns and tracks while they run (wrk, s_time): killAll() SIGKILLs them, for the cleanup
 * after a failure or a signal, and so does the process's exit, as a last resort.
 */
export function runningChildren(): Set<ChildProcess> & { killAll(): void } {
  const running = new Set<ChildProcess>();
  const killAll = () => {
    for (const child of running) child.kill('SIGKILL');
  };
  process.on('exit', killAll);
  return Object.assign(running, { killAll });
}

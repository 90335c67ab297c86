/**
 * What Linux's /proc tells of processes: their state, group and CPU time. Shared by `ostia baseline` (the
 * CPU an amphora's processes spend under load) and the benches (bench/support/processes.ts), so both count
 * CPU time one way; a process's stat line is read as the compute drivers read it (compute/process-group.ts).
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { groupProcesses, readStat, type ProcStat } from '../../compute/process-group.js';

/** A process as /proc/<pid>/stat shows it; null when it is gone. */
export type ProcInfo = ProcStat;
export const procInfo = readStat;

export function pids(): number[] {
  return readdirSync('/proc').filter((e) => /^\d+$/.test(e)).map(Number);
}

/** Live (non-zombie) members of a process group: an amphora is the group its agent leads. */
export const groupMembers = (pgid: number): ProcInfo[] => [...groupProcesses(pgid)];

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

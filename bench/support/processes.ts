/**
 * What the benches read from Linux's /proc: processes (by group, by ancestry, HAProxies under a
 * directory), their CPU time, memory (RSS and PSS from smaps_rollup), threads and open files, and
 * the machine-wide limits those are weighed against. Finding and killing processes by directory is
 * test/support/ostia-process.ts's (processesUnder, killAll).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { clockTicks, pids, procInfo } from '../../src/cli/baseline/proc-stat.js';
import { processesUnder } from '../../test/support/ostia-process.js';

export { cpuSecondsOfLive, groupMembers, procInfo, runningChildren, type ProcInfo } from '../../src/cli/baseline/proc-stat.js';

/** The HAProxy master and workers whose command line names `dir`. */
export function haproxyPidsUnder(dir: string): number[] {
  return processesUnder(dir).filter((pid) => procInfo(pid)?.comm === 'haproxy');
}

/** `root` and every process below it (children, their children…). */
export function processTree(root: number): number[] {
  const byParent = new Map<number, number[]>();
  for (const pid of pids()) {
    const info = procInfo(pid);
    // a process that ended while we looked has no children left either
    if (info) byParent.set(info.ppid, [...(byParent.get(info.ppid) ?? []), pid]);
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) tree.push(...(byParent.get(tree[i]!) ?? []));
  return tree;
}

/** utime + stime of the processes, in seconds; null if there are none or any of them ended, as the sum would then undercount. */
export function cpuSeconds(list: readonly number[]): number | null {
  if (!list.length) return null;
  let ticks = 0;
  for (const pid of list) {
    const info = procInfo(pid);
    if (!info) return null;
    ticks += info.cpuTicks;
  }
  return ticks / clockTicks();
}

/**
 * Starts counting the CPU time of `list` (an HAProxy's master and workers, read before its load starts); the
 * function returned gives the µs spent per request since then, or null if a process went away or nothing was served.
 */
export function cpuMeter(list: readonly number[]): (requests: number) => number | null {
  const before = cpuSeconds(list);
  return (requests) => {
    const after = cpuSeconds(list);
    return before === null || after === null || !requests ? null : ((after - before) * 1e6) / requests;
  };
}

export interface Memory {
  rssKiB: number;
  pssKiB: number;
}

/** RSS and PSS from smaps_rollup; PSS divides shared pages among their sharers, so it sums up honestly. */
export function memoryOf(pid: number): Memory | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  } catch {
    return null;
  }
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
  return { rssKiB: field('Rss'), pssKiB: field('Pss') };
}

export function threadsOf(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/task`).length;
  } catch {
    return 0;
  }
}

export function openFilesOf(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
}

/** Threads of every process on the machine: they and processes share the kernel's pid space. */
export function tasksInUse(): number {
  let n = 0;
  for (const pid of pids()) n += threadsOf(pid);
  return n;
}

/** /proc/meminfo in KiB. */
export function meminfo(): { totalKiB: number; availableKiB: number } {
  const text = readFileSync('/proc/meminfo', 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN);
  return { totalKiB: field('MemTotal'), availableKiB: field('MemAvailable') };
}

export interface KernelLimits {
  /** fs.file-max: open files of all processes together. */
  fileMax: number;
  /** fs.file-nr's first field: open now. */
  filesOpen: number;
  /** kernel.pid_max: every process and thread takes one. */
  pidMax: number;
  /** kernel.threads-max. */
  threadsMax: number;
  /** This process's RLIMIT_NOFILE (soft/hard), which the amphorae inherit: a cap per process. */
  nofile: { soft: number | null; hard: number | null };
}

export function kernelLimits(): KernelLimits {
  const num = (file: string) => Number(readFileSync(file, 'utf8').trim().split(/\s+/)[0]);
  const limits = readFileSync('/proc/self/limits', 'utf8');
  const nofile = /^Max open files\s+(\S+)\s+(\S+)/m.exec(limits);
  const value = (v: string | undefined) => (v === undefined || v === 'unlimited' ? null : Number(v));
  return {
    fileMax: num('/proc/sys/fs/file-max'),
    filesOpen: num('/proc/sys/fs/file-nr'),
    pidMax: num('/proc/sys/kernel/pid_max'),
    threadsMax: num('/proc/sys/kernel/threads-max'),
    nofile: { soft: value(nofile?.[1]), hard: value(nofile?.[2]) },
  };
}

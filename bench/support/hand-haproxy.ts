/**
 * The baseline of the amphora benches: the same HAProxy binary the amphora runs, started on a
 * config written by hand, master-worker with a master CLI (reloads as an operator does them),
 * and in a session of its own, as an amphora's HAProxy is.
 *
 * Why the session matters: an amphora's HAProxy runs in the session of its agent, which the
 * compute driver starts detached, and so does any daemonized HAProxy (-D calls setsid). With the
 * kernel's autogroup scheduling (sched_autogroup_enabled=1 here) a session is a scheduling group
 * of its own, and on this loaded machine that alone changed req/s by tens of percent for one and
 * the same config: the hand-written HAProxy gets a session of its own too, through a wrapper
 * script that execs it under setsid.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HaproxyProcess, type HaproxyFiles } from '../../src/amphora-agent/haproxy/process.js';
import type { HaproxyRuntime } from '../../src/amphora-agent/haproxy/runtime.js';
import { haproxyPidsUnder } from './processes.js';

export interface HandHaproxy {
  readonly dir: string;
  readonly files: HaproxyFiles;
  readonly process: HaproxyProcess;
  readonly runtime: HaproxyRuntime;
  /** The master and its workers (old workers finishing after a reload included). */
  pids(): number[];
  /** Writes the config file; a `process.reload()` makes it effective. */
  writeConfig(text: string): void;
}

/**
 * Starts HAProxy on the config `render(files)` returns; its own lines (loads, reloads) go to
 * `lines`, for a failure message. `dir` must be a directory no other process names in its command line.
 */
export async function startHandHaproxy(dir: string, render: (files: HaproxyFiles) => string, lines: string[]): Promise<HandHaproxy> {
  mkdirSync(dir, { recursive: true });
  const files: HaproxyFiles = {
    config: join(dir, 'hand.cfg'),
    masterSocket: join(dir, 'master.sock'),
    statsSocket: join(dir, 'hand.sock'),
    pidFile: join(dir, 'hand.pid'),
    stateFile: join(dir, 'hand.state'),
  };
  const ownSession = join(dir, 'haproxy-own-session');
  writeFileSync(ownSession, '#!/bin/sh\nexec setsid haproxy "$@"\n', { mode: 0o755 });
  const log = { info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m), error: (m: string) => lines.push(m) };
  const process = new HaproxyProcess({ binary: ownSession, files, log });
  const hand: HandHaproxy = {
    dir,
    files,
    process,
    runtime: process.runtime,
    pids: () => haproxyPidsUnder(dir),
    writeConfig: (text) => writeFileSync(files.config, text),
  };
  hand.writeConfig(render(files));
  await process.start();
  return hand;
}

/**
 * The global section of a hand-written config: the amphora's limits (read from its `show info`), the stats
 * socket and pid file the bench reads, and a bound on how long old workers may finish after a reload.
 */
export function handGlobal(files: HaproxyFiles, limits: { maxconn: number; nbthread: number }): string[] {
  return [
    'global',
    `    maxconn ${limits.maxconn}`,
    `    nbthread ${limits.nbthread}`,
    `    stats socket ${files.statsSocket} mode 600 level admin expose-fd listeners`,
    `    pidfile ${files.pidFile}`,
    '    hard-stop-after 60s',
  ];
}

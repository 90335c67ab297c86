/**
 * wrk (https://github.com/wg/wrk) as the load generator of `ostia baseline` and the data-plane benches. Its
 * figures are read from a Lua `done` hook that prints one JSON line, not scraped from the human summary.
 * A run can be cut short with SIGINT, on which wrk stops its threads and still reports.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runningChildren } from './proc-stat.js';

export interface WrkResult {
  connections: number;
  requests: number;
  seconds: number;
  rps: number;
  p50_ms: number;
  p99_ms: number;
  /** Socket errors by kind, and `status`: responses with a status of 400 or more (wrk's "Non-2xx or 3xx"). */
  errors: { connect: number; read: number; write: number; timeout: number; status: number };
  /** Every request that did not get a good answer: all socket errors plus `status`. */
  failed: number;
}

export interface WrkRun {
  readonly pid: number;
  /** Resolves when wrk exits and has reported. */
  readonly result: Promise<WrkResult>;
  /** True once wrk has exited. */
  exited(): boolean;
  /** Ends the run early (SIGINT: wrk reports what it measured so far). */
  finish(): void;
  /** Ends it without a report, for cleanup. */
  kill(): void;
}

const MARK = 'WRK-RESULT ';
// wrk's Lua is LuaJIT: format every number with %.0f (%d refuses non-integers).
const DONE_HOOK = `
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('${MARK}{"requests":%.0f,"duration_us":%.0f,"connect":%.0f,"read":%.0f,"write":%.0f,"timeout":%.0f,"status":%.0f,"p50_us":%.0f,"p99_us":%.0f}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.timeout, e.status, latency:percentile(50), latency:percentile(99)))
end
`;

/** Writes the reporting hook into `dir`; pass the path to every run. */
export function writeWrkScript(dir: string): string {
  const path = join(dir, 'report.lua');
  writeFileSync(path, DONE_HOOK);
  return path;
}

/** The reporting hook, and the same with a new connection per request (`Connection: close`), written into `dir`. */
export function writeWrkScripts(dir: string): { keepalive: string; close: string } {
  const keepalive = writeWrkScript(dir);
  const close = join(dir, 'close.lua');
  // Read by wrk.init when it builds the request, so every request says it, and wrk reconnects after each response.
  writeFileSync(close, `wrk.headers["Connection"] = "close"\n${DONE_HOOK}`);
  return { keepalive, close };
}

const running = runningChildren();

/** Kills every wrk still running (cleanup after a failure or SIGINT). */
export function killAllWrk(): void {
  running.killAll();
}

/** `wrk -t1 -c<connections> -d<seconds>s --latency -s <script> <url>` (reference/dataplane.md §2). */
export function startWrk(url: string, connections: number, seconds: number, script: string): WrkRun {
  const child = spawn('wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, url], { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString('utf8')));
  let done = false;
  const result = new Promise<WrkResult>((resolve, reject) => {
    child.on('error', (e) => reject(new Error(`cannot run wrk: ${e.message} (install it: apt-get install -y wrk)`)));
    child.on('exit', (code, signal) => {
      done = true;
      running.delete(child);
      const line = out.split('\n').find((l) => l.startsWith(MARK));
      if (!line) {
        reject(new Error(`wrk ${url} exited (${signal ?? `code ${code}`}) without a report: ${(err || out).trim().slice(0, 500)}`));
        return;
      }
      const r = JSON.parse(line.slice(MARK.length)) as Record<string, number>;
      const errors = { connect: r.connect!, read: r.read!, write: r.write!, timeout: r.timeout!, status: r.status! };
      const secs = r.duration_us! / 1e6;
      resolve({
        connections,
        requests: r.requests!,
        seconds: secs,
        rps: r.requests! / secs,
        p50_ms: r.p50_us! / 1000,
        p99_ms: r.p99_us! / 1000,
        errors,
        failed: errors.connect + errors.read + errors.write + errors.timeout + errors.status,
      });
    });
  });
  // A run killed during cleanup rejects while nobody may be waiting for it yet; a caller that awaits still sees it.
  result.catch(() => undefined);
  return {
    pid: child.pid ?? -1,
    result,
    exited: () => done,
    finish: () => {
      if (!done) child.kill('SIGINT');
    },
    kill: () => {
      if (!done) child.kill('SIGKILL');
    },
  };
}

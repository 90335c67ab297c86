/**
 * Full TLS handshakes as a load: `openssl s_time -new`, several processes at once. Each process
 * opens one connection at a time, makes a full handshake (it never resumes a session: that is what
 * `-new` times), fetches `/` and closes, for `-time` seconds. wrk, by contrast, keeps the session
 * of a connection it reopens, so its new connections are mostly resumed handshakes.
 *
 * s_time prints its wall time in whole seconds; the rate is taken from the count it prints and
 * the processes' lifetimes measured here instead. It sends no SNI (the listener's default
 * certificate answers) and verifies nothing.
 */
import { spawn } from 'node:child_process';
import { runningChildren } from './processes.js';

export interface STimeResult {
  clients: number;
  /** Handshakes + requests completed, all processes together. */
  connections: number;
  /** Sum over the processes of their connections ÷ their lifetime. */
  rps: number;
  /** Processes that reported an error (s_time stops at its first failure) or exited non-zero. */
  failed: number;
  errors: string[];
}

const running = runningChildren();

/** Kills every s_time still running (cleanup after a failure or SIGINT). */
export function killAllSTime(): void {
  running.killAll();
}

function one(address: string, port: number, seconds: number): Promise<{ connections: number; seconds: number; error: string | null }> {
  const started = performance.now();
  const child = spawn('openssl', ['s_time', '-connect', `${address}:${port}`, '-new', '-time', String(seconds), '-www', '/'], { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString('utf8')));
  return new Promise((resolve, reject) => {
    child.on('error', (e) => {
      running.delete(child);
      reject(new Error(`cannot run openssl s_time: ${e.message}`));
    });
    child.on('exit', (code, signal) => {
      running.delete(child);
      const elapsed = (performance.now() - started) / 1000;
      const counted = /^(\d+) connections in [\d.]+s;/m.exec(out);
      const failure = /ERROR|error/.test(out) || code !== 0 ? (out.trim().split('\n').find((l) => /error/i.test(l)) ?? `exit ${signal ?? code}`) : null;
      resolve({ connections: counted ? Number(counted[1]) : 0, seconds: elapsed, error: failure });
    });
  });
}

/** `clients` × `openssl s_time -connect address:port -new -time seconds -www /`, started together. */
export async function runSTime(address: string, port: number, clients: number, seconds: number): Promise<STimeResult> {
  const runs = await Promise.all(Array.from({ length: clients }, () => one(address, port, seconds)));
  const errors = runs.map((r) => r.error).filter((e): e is string => e !== null);
  return {
    clients,
    connections: runs.reduce((s, r) => s + r.connections, 0),
    rps: runs.reduce((s, r) => s + r.connections / r.seconds, 0),
    failed: errors.length,
    errors: [...new Set(errors)].slice(0, 3),
  };
}

/**
 * One `ostia api|worker|health|housekeeping` role as a child process, the production shape on
 * PostgreSQL: started with --json, ready once it prints the line announcing itself.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from './ostia-process.js';

const BIN = join(repoRoot(), 'bin', 'ostia.js');
/** The caller's OSTIA_* settings must not leak into the commands under test. */
export const ROLE_ENV = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OSTIA_')));

export interface Role {
  child: ChildProcess;
  announced: { url: string | null; clouds_yaml: string | null; pid: number };
  exited: Promise<number | null>;
  stderr(): string;
}

/** Roles still running when this process exits are killed, so a crash or a signal (while one starts too) leaves none behind. */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Starts a role with --json and waits for the line it prints once running; `bin` is another build's bin/ostia.js (a bench's baseline). */
export async function startRole(args: string[], bin = BIN): Promise<Role> {
  const child = spawn(process.execPath, [bin, ...args, '--json'], { env: ROLE_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  exited.then(() => running.delete(child));
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
    });
    exited.then((code) => reject(new Error(`ostia ${args[0]} exited with ${code} before announcing itself:\n${stderr}`)));
  });
  return { child, announced: JSON.parse(line), exited, stderr: () => stderr };
}

/** SIGTERM; resolves to its exit code. */
export async function stopRole(role: Role): Promise<number | null> {
  role.child.kill('SIGTERM');
  return role.exited;
}

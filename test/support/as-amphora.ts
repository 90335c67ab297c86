/**
 * A command run as a netns amphora runs its programs: in the network and mount namespaces of one of its
 * processes (`pid`), under its uid and gid; rejects with the command's error output.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { amphoraUid } from '../../src/compute/netns-compute/netns-compute.js';

const run = promisify(execFile);
/** Bounds one command; a loaded machine included. */
const COMMAND_TIMEOUT_MS = 15_000;

export function asAmphora(amphoraId: string, pid: number, ...argv: string[]): Promise<{ stdout: string; stderr: string }> {
  const uid = String(amphoraUid(amphoraId));
  return run('/usr/bin/nsenter', ['-t', String(pid), '-m', '-n', '-S', uid, '-G', uid, '--', ...argv], { timeout: COMMAND_TIMEOUT_MS });
}

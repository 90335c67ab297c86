import { existsSync, readFileSync } from 'node:fs';

/**
 * The pid in `pidFile` if that process is alive and its command line has `argument` (a file or
 * socket of this very amphora), so a pid the kernel reused for another process is not taken for it.
 */
export function livePid(pidFile: string, argument: string): number | null {
  if (!existsSync(pidFile)) return null;
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 1) return null;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(argument) ? pid : null;
  } catch {
    return null;
  }
}

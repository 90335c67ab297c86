/** What a data directory holds, with modes: the private-state checks walk it. */
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export interface PathMode {
  path: string;
  kind: 'directory' | 'file' | 'socket' | 'other';
  /** Permission bits only (e.g. 0o600). */
  mode: number;
}

/** Every path under `root`, itself included; symbolic links are not followed (nor listed). */
export function pathModes(root: string): PathMode[] {
  const found: PathMode[] = [];
  const walk = (path: string) => {
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) return;
    const kind = stat.isDirectory() ? 'directory' : stat.isFile() ? 'file' : stat.isSocket() ? 'socket' : 'other';
    found.push({ path, kind, mode: stat.mode & 0o777 });
    if (stat.isDirectory()) for (const entry of readdirSync(path)) walk(join(path, entry));
  };
  walk(root);
  return found;
}

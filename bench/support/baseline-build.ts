/**
 * Another version of Ostia to measure beside this one: a git commit of this checkout, exported
 * (git archive) and built once into a directory of its own under the system's temporary directory,
 * with this checkout's node_modules. Its bin/ostia.js runs the roles of that version.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../../test/support/ostia-process.js';
import { progress } from './progress.js';

/** The path of bin/ostia.js of `ref` built, building it when no earlier run did. */
export function builtVersion(ref: string): { commit: string; bin: string } {
  const repo = repoRoot();
  const commit = execFileSync('git', ['rev-parse', '--verify', `${ref}^{commit}`], { cwd: repo, encoding: 'utf8' }).trim();
  const dir = join(tmpdir(), `ostia-build-${commit.slice(0, 12)}`);
  const bin = join(dir, 'bin', 'ostia.js');
  // Written last: a build that was interrupted is redone.
  const done = join(dir, 'dist', 'ostia-agent.mjs');
  if (existsSync(done)) return { commit, bin };
  progress(`building ${ref} (${commit.slice(0, 12)}) into ${dir}: once, a minute or two`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execFileSync('bash', ['-c', 'git -C "$1" archive "$2" | tar -x -C "$3"', 'archive', repo, commit, dir], { stdio: 'inherit' });
  symlinkSync(join(repo, 'node_modules'), join(dir, 'node_modules'));
  execFileSync(process.execPath, [join(repo, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], { cwd: dir, stdio: 'inherit' });
  execFileSync(process.execPath, ['scripts/bundle-agent.mjs'], { cwd: dir, stdio: 'inherit' });
  return { commit, bin };
}

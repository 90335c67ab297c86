/**
 * Another version of Ostia to measure beside this one: a git commit of this checkout, exported
 * (git archive) and built once into a directory of its own under the system's temporary directory.
 * It uses this checkout's node_modules when its package-lock.json is the same, and installs its own
 * otherwise (an older version may need a package this one replaced). Its bin/ostia.js runs the
 * roles of that version.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
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
  if (sameLockfile(repo, dir)) symlinkSync(join(repo, 'node_modules'), join(dir, 'node_modules'));
  else {
    progress(`${ref} has other dependencies than this checkout: npm ci of its own (a few minutes when one compiles)`);
    execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'inherit' });
  }
  execFileSync(process.execPath, [join(dir, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], { cwd: dir, stdio: 'inherit' });
  execFileSync(process.execPath, ['scripts/bundle-agent.mjs'], { cwd: dir, stdio: 'inherit' });
  return { commit, bin };
}

function sameLockfile(repo: string, dir: string): boolean {
  const lock = (root: string) => readFileSync(join(root, 'package-lock.json'), 'utf8');
  return existsSync(join(dir, 'package-lock.json')) && lock(repo) === lock(dir);
}

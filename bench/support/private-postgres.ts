/**
 * A PostgreSQL server for a bench: the one a URL names (a user that may CREATE DATABASE), or a
 * private throw-away one started as the tests start theirs (scripts/lib/postgres.sh) and stopped
 * by the function returned.
 */
import { execFileSync } from 'node:child_process';
import { repoRoot } from '../../test/support/ostia-process.js';
import { progress } from './progress.js';

const LIBS = 'source scripts/lib/system.sh; source scripts/lib/postgres.sh';

export function postgresServer(url: string | undefined): { url: string; stop(): void } {
  if (url) return { url, stop: () => undefined };
  progress('starting a private PostgreSQL (scripts/lib/postgres.sh)');
  const out = execFileSync('bash', ['-c', `${LIBS}; start_private_postgres >&2 || exit 1; printf '%s\\n' "$OSTIA_TEST_PG_URL" "$pg_root" "$pg_bin_dir"`], {
    cwd: repoRoot(),
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [serverUrl, root, bin] = out.trim().split('\n');
  return {
    url: serverUrl!,
    stop: () => execFileSync('bash', ['-c', `${LIBS}; pg_root=$1; pg_bin_dir=$2; stop_private_postgres`, 'stop', root!, bin!], { cwd: repoRoot(), stdio: 'inherit' }),
  };
}

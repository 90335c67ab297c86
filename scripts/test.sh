#!/usr/bin/env bash
# `npm test`: set up what the tests need, build, then run every compiled test file with node's
# runner (one summary per pass), first on SQLite, then the database tests on PostgreSQL.
#
# As root (or with passwordless sudo) it installs the Debian packages of scripts/packages.txt that
# are missing; it starts a private PostgreSQL for the second pass unless OSTIA_TEST_PG_URL names a
# server (whose user may CREATE DATABASE). Whatever it cannot set up, the tests that need it skip,
# and the run ends with one line per skipped group: what is missing, the command that enables it.
#   --require-all           fail instead of skipping (.ci/run passes it)
#   OSTIA_TEST_CONCURRENCY  test files run at once (default: 2, sized for a 2-core box: 3 measured no faster)
#   other arguments         passed to `node --test`, e.g. npm test -- --test-name-pattern=quota
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/system.sh
source scripts/lib/postgres.sh

require_all=0
args=()
for a in "$@"; do
  if [ "$a" = --require-all ]; then require_all=1; else args+=("$a"); fi
done

install_missing || echo "test.sh: running the tests this machine can run; the summary at the end names what was skipped" >&2
[ -d node_modules ] || npm ci --no-audit --no-fund </dev/null >&2

status=0
# tsc still emits on type errors: report them, run the tests anyway, and fail at the end.
if ! npm run --silent build; then
  echo "test.sh: the build reported errors (above); running the tests anyway, npm test will fail" >&2
  status=1
fi

trap stop_private_postgres EXIT
if [ -z "${OSTIA_TEST_PG_URL:-}" ]; then
  start_private_postgres || echo "test.sh: no PostgreSQL for the second pass" >&2
fi

if [ $require_all -eq 1 ]; then
  export OSTIA_TEST_REQUIRE_ALL=1
  if ! node dist/test/support/requirements.js --require-all >&2; then
    echo "test.sh: --require-all, and the lines above cannot run here; nothing was run" >&2
    exit 1
  fi
fi

# Only files whose source still exists: dist/ may hold the output of since-deleted tests.
# (Node 20's --test takes no globs, hence find.) The end-to-end files of test/ first: they are the
# long ones, and the many short unit files after them fill the gaps, so no long file starts last.
mapfile -t all_tests < <(
  { find dist/test -name '*.test.js' | sort; find dist/src -name '*.test.js' | sort; } 2>/dev/null | while read -r js; do
    src=${js#dist/}
    [ -f "${src%.js}.ts" ] && echo "$js"
  done
)
if [ ${#all_tests[@]} -eq 0 ]; then
  echo "test.sh: no compiled test files under dist/src or dist/test; did the build run?" >&2
  exit 1
fi

run_tests() {
  node --test --test-reporter=spec --test-concurrency="${OSTIA_TEST_CONCURRENCY:-2}" "$@"
}

echo "== ${#all_tests[@]} test files, SQLite =="
run_tests "${args[@]}" "${all_tests[@]}" || status=1

if [ -n "${OSTIA_TEST_PG_URL:-}" ]; then
  # The files that open a database: directly, or through the in-process harness, or through a
  # module that uses it (followed until no new module turns up).
  patterns=$(mktemp)
  echo '/harness.js' >"$patterns"
  while :; do
    before=$(wc -l <"$patterns")
    grep -rlF -f "$patterns" dist/src dist/test --include='*.js' | grep -v '\.test\.js$' | sed 's#.*/#/#' | cat "$patterns" - | sort -u >"$patterns.next"
    mv "$patterns.next" "$patterns"
    [ "$(wc -l <"$patterns")" -eq "$before" ] && break
  done
  # In the first pass's order.
  mapfile -t db_tests < <({ grep -lF -f "$patterns" "${all_tests[@]}"; grep -l 'OSTIA_TEST_DATABASE_URL' "${all_tests[@]}"; } | sort -u | grep -xF -f - <(printf '%s\n' "${all_tests[@]}"))
  rm -f "$patterns"
  if [ ${#db_tests[@]} -eq 0 ]; then
    echo "test.sh: no database test files found for the PostgreSQL pass" >&2
    status=1
  else
    echo "== ${#db_tests[@]} database test files, PostgreSQL =="
    # The property test's rounds are about rendering, which the first pass covered: here a few check the storage.
    OSTIA_FUZZ_RUNS="${OSTIA_FUZZ_RUNS:-5}" OSTIA_TEST_DATABASE_URL="$OSTIA_TEST_PG_URL" run_tests "${args[@]}" "${db_tests[@]}" || status=1
  fi
fi

# What did not run, one line a group, last, where a reader of the run looks.
node dist/test/support/requirements.js || true
exit $status

#!/usr/bin/env bash
# `npm test`: build, then run every compiled test file with node's runner (one summary per
# pass). With OSTIA_TEST_PG_URL (a PostgreSQL server URL whose user may CREATE DATABASE),
# the database-backed test files run a second time against PostgreSQL.
#   OSTIA_TEST_CONCURRENCY  test files run at once (default: 2, sized for a 2-core box)
#   extra arguments         passed to `node --test`, e.g. npm test -- --test-name-pattern=quota
set -euo pipefail
cd "$(dirname "$0")/.."

status=0
# tsc still emits on type errors: report them, run the tests anyway, and fail at the end.
if ! npm run --silent build; then
  echo "test.sh: the build reported errors (above); running the tests anyway, npm test will fail" >&2
  status=1
fi

# Only files whose source still exists: dist/ may hold the output of since-deleted tests.
# (Node 20's --test takes no globs, hence find.)
mapfile -t all_tests < <(
  find dist/src dist/test -name '*.test.js' 2>/dev/null | sort | while read -r js; do
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
run_tests "$@" "${all_tests[@]}" || status=1

if [ -n "${OSTIA_TEST_PG_URL:-}" ]; then
  # The files that open a database: through the in-process harness, or directly.
  mapfile -t db_tests < <(grep -l -e 'support/harness.js' -e 'OSTIA_TEST_DATABASE_URL' "${all_tests[@]}")
  if [ ${#db_tests[@]} -eq 0 ]; then
    echo "test.sh: no database test files found for the PostgreSQL pass" >&2
    status=1
  else
    echo "== ${#db_tests[@]} database test files, PostgreSQL =="
    OSTIA_TEST_DATABASE_URL="$OSTIA_TEST_PG_URL" run_tests "$@" "${db_tests[@]}" || status=1
  fi
else
  echo "(OSTIA_TEST_PG_URL is not set: the PostgreSQL pass is skipped; .ci/run sets it)"
fi
exit $status

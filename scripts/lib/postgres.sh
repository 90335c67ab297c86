# Sourced by scripts/test.sh: a private, throw-away PostgreSQL server for the second test pass.
# Its own data directory and port on 127.0.0.1, trust authentication, no durability (tests only).

# Starts it, exports OSTIA_TEST_PG_URL, and sets pg_root for stop_private_postgres. Returns 1
# (with the reason on stderr) when PostgreSQL's server is not installed or does not start.
start_private_postgres() {
  local pg_bin pg_port
  pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ]; then
    echo "test.sh: PostgreSQL's server is not installed (apt-get install postgresql)" >&2
    return 1
  fi
  pg_root=$(mktemp -d /tmp/ostia-test-pg.XXXXXX)
  # initdb refuses to run as root: as root the server runs as the `postgres` user the package created.
  if [ "$(id -u)" -eq 0 ]; then chown postgres: "$pg_root"; fi
  pg_port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
  if ! as_postgres "$pg_bin/initdb" -D "$pg_root/data" --username=postgres --auth=trust --encoding=UTF8 --no-sync >"$pg_root/initdb.log" 2>&1 ||
    ! as_postgres "$pg_bin/pg_ctl" -D "$pg_root/data" -l "$pg_root/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $pg_port -k $pg_root -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start >/dev/null; then
    echo "test.sh: the private PostgreSQL did not start; its logs follow" >&2
    cat "$pg_root"/*.log >&2 2>/dev/null
    stop_private_postgres
    return 1
  fi
  pg_bin_dir=$pg_bin
  export OSTIA_TEST_PG_URL="postgres://postgres@127.0.0.1:$pg_port/postgres"
  echo "PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') for tests at $OSTIA_TEST_PG_URL"
}

stop_private_postgres() {
  [ -n "${pg_root:-}" ] || return 0
  [ -z "${pg_bin_dir:-}" ] || as_postgres "$pg_bin_dir/pg_ctl" -D "$pg_root/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$pg_root"
  pg_root=""
}

as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

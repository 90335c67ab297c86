#!/usr/bin/env bash
# `npm run up`: from a fresh clone to a running Ostia (API, worker, embedded Keystone, SQLite
# under .ostia/, amphora load balancers in namespaces of their own on bridge networks as root, as
# local processes otherwise). Needs Node.js 20+ and npm; installs Debian's haproxy, the openstack CLI
# and, as root, what namespace amphorae use (iproute2, nftables, keepalived: scripts/packages.txt)
# if they are missing.
# Arguments go to `ostia up`: npm run up -- --port 0 --data-dir /tmp/ostia
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v node >/dev/null 2>&1; then
  echo "ostia: Node.js 20 or newer is needed and 'node' is not on PATH; install it (https://nodejs.org/en/download) and rerun 'npm run up'." >&2
  exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "ostia: Node.js 20 or newer is needed, this is $(node --version); upgrade it and rerun 'npm run up'." >&2
  exit 1
fi

source scripts/lib/system.sh
# The amphora provider (the default) runs Debian's HAProxy for each load balancer; the commands
# `ostia up` prints need the openstack CLI with its load-balancer and key-manager plug-ins.
# As root `ostia up` runs amphorae in namespaces on bridge networks, with nftables and keepalived.
# apt-get runs beside npm ci and the build (each about a minute on a fresh machine), its output in
# a log that is shown if it fails.
groups=(haproxy openstack-cli)
[ "$(id -u)" -eq 0 ] && groups+=(namespaces)
apt_log=$(mktemp -t ostia-apt.XXXXXX)
install_missing "${groups[@]}" >"$apt_log" 2>&1 &
apt_pid=$!

if [ ! -d node_modules ]; then
  echo "ostia: installing dependencies (npm ci)..." >&2
  npm ci --no-audit --no-fund >&2
fi
# Always rebuild: a stale dist/ would run yesterday's code. Output goes to stderr so that
# `npm run up --silent -- --json` prints only the JSON line on stdout.
npm run --silent build >&2

if ! wait "$apt_pid"; then
  cat "$apt_log" >&2
elif [ -s "$apt_log" ]; then
  grep '^ostia:' "$apt_log" >&2 || true
fi
if ! command -v haproxy >/dev/null 2>&1 && [ ! -x /usr/sbin/haproxy ]; then
  echo "ostia: haproxy is missing; install it (sudo apt-get install haproxy) or enable only the noop provider (api.enabledProviders: [noop])." >&2
  exit 1
fi
if [ -n "$(missing_packages openstack-cli)" ]; then
  echo "ostia: the openstack commands printed below need: sudo apt-get install --no-install-recommends $(packages_of openstack-cli | tr '\n' ' ')" >&2
fi
rm -f "$apt_log"
exec node bin/ostia.js up "$@"

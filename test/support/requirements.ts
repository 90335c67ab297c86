/**
 * What the test suite needs of the machine, in one place: each requirement's check, the tests it
 * gates, and the group of scripts/packages.txt that satisfies it. A test asks `unmet(name)` for
 * its skip reason; under `npm test -- --require-all` (OSTIA_TEST_REQUIRE_ALL=1, as .ci/run runs)
 * an unmet requirement throws instead, so the file fails rather than skips.
 *
 * Run as a program (`node dist/test/support/requirements.js [--require-all]`), it prints one line
 * per unmet requirement with the command that meets it; test.sh calls it before and after the run.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { namespacesUnavailable } from '../../src/linux-net/ip.js';

const PYTHON_PACKAGES = '/usr/lib/python3/dist-packages';
export const OVN_SCHEMAS = { nb: '/usr/share/ovn/ovn-nb.ovsschema', sb: '/usr/share/ovn/ovn-sb.ovsschema', vswitch: '/usr/share/openvswitch/vswitch.ovsschema' } as const;
const SANDBOX_BINARIES = ['ovsdb-tool', 'ovsdb-server', 'ovs-vswitchd', 'ovs-vsctl', 'ovn-northd', 'ovn-controller', 'ovn-nbctl', 'ovn-sbctl', 'ip'];

interface Requirement {
  /** The tests that need it, as the closing report names them. */
  readonly tests: string;
  /** The group of scripts/packages.txt whose packages provide it. */
  readonly group: string;
  /** What is missing, or false. */
  check(): string | false;
  /** When installing packages is not the whole answer (root, a server URL). */
  readonly enable?: string;
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;
const firstMissing = (paths: readonly string[]) => paths.find((p) => !existsSync(p));
const missingFile = (paths: readonly string[]): string | false => {
  const missing = firstMissing(paths);
  return missing ? `${missing} is missing` : false;
};

export function onPath(bin: string): boolean {
  const dirs = (process.env.PATH ?? '').split(':').concat(['/usr/sbin', '/sbin']);
  return dirs.some((d) => d !== '' && existsSync(join(d, bin)));
}

const REQUIREMENTS = {
  haproxy: { tests: 'HAProxy tests (haproxy -c, the process supervisor)', group: 'haproxy', check: () => missingFile(['/usr/sbin/haproxy']) },
  wrk: { tests: "ostia baseline's test (wrk loads the load balancers)", group: 'loadgen', check: () => (onPath('wrk') ? false : 'wrk is not on PATH') },
  chromium: { tests: 'the dashboard in a real browser (playwright-core drives Debian chromium)', group: 'browser', check: () => missingFile(['/usr/bin/chromium']) },
  keepalived: { tests: 'keepalived tests (keepalived --config-test, ACTIVE_STANDBY failover between netns amphorae)', group: 'namespaces', check: () => missingFile(['/usr/sbin/keepalived']) },
  'openstack-cli': {
    tests: 'real openstack CLI tests (amphora, TLS, key manager, CLI lifecycle, external Keystone, OVN end to end)',
    group: 'openstack-cli',
    check: () => missingFile(['/usr/bin/openstack', `${PYTHON_PACKAGES}/octaviaclient`, `${PYTHON_PACKAGES}/barbicanclient`]),
  },
  pebble: {
    tests: "managed certificates end to end (Debian's pebble ACME server and pebble-challtestsrv, HTTP-01 on port 80 of a VIP: root)",
    group: 'acme',
    enable: 'run npm test as root',
    check: () => missingFile(['/usr/bin/pebble', '/usr/bin/pebble-challtestsrv']) || (isRoot() ? false : 'root is needed to bind port 80 of a VIP'),
  },
  openstacksdk: { tests: 'openstacksdk lifecycle test', group: 'openstacksdk', check: () => missingFile(['/usr/bin/python3', `${PYTHON_PACKAGES}/openstack/__init__.py`]) },
  keystone: { tests: 'external Keystone test', group: 'keystone', check: () => missingFile(['/usr/bin/keystone-manage']) },
  ovsdb: {
    tests: 'OVSDB client and Northbound tests (a real ovsdb-server)',
    group: 'ovn',
    check: () => missingFile(['/usr/sbin/ovsdb-server', '/usr/bin/ovsdb-tool', '/usr/bin/ovn-nbctl', OVN_SCHEMAS.nb]),
  },
  'ovn-sandbox': {
    tests: 'OVN sandbox, ovn provider and provider conformance tests (a whole OVN, hosts in network namespaces)',
    group: 'ovn',
    enable: 'run npm test as root',
    check: ovnSandboxCheck,
  },
  namespaces: {
    tests: 'netns compute and bridge network tests (amphorae in network and mount namespaces on a management bridge)',
    group: 'namespaces',
    enable: 'run npm test as root',
    check: () => namespacesUnavailable(),
  },
  postgresql: {
    tests: 'PostgreSQL pass (every database test again on PostgreSQL)',
    group: 'postgresql',
    enable: 'npm test then starts a private server; or set OSTIA_TEST_PG_URL to a server whose user may CREATE DATABASE',
    check: () => (process.env.OSTIA_TEST_PG_URL || process.env.OSTIA_TEST_DATABASE_URL ? false : 'no PostgreSQL server (OSTIA_TEST_PG_URL is not set)'),
  },
} satisfies Record<string, Requirement>;

export type RequirementName = keyof typeof REQUIREMENTS;

function ovnSandboxCheck(): string | false {
  if (process.platform !== 'linux') return 'Linux network namespaces are missing';
  if (!isRoot()) return 'root is needed for network namespaces';
  const binaries = SANDBOX_BINARIES.filter((b) => !onPath(b));
  if (binaries.length > 0) return `${binaries.join(', ')} not on PATH`;
  const file = missingFile(Object.values(OVN_SCHEMAS));
  if (file) return file;
  if (!onPath('ethtool') && !onPath('python3')) return 'ethtool or python3 is missing (to turn veth TX checksum offload off)';
  if (!existsSync('/dev/net/tun')) return '/dev/net/tun is missing (userspace datapath)';
  try {
    execFileSync('ip', ['netns', 'list'], { stdio: 'pipe', timeout: 5_000 });
  } catch (e) {
    return `\`ip netns\` does not work: ${(e as Error).message}`;
  }
  return false;
}

export const requireAll = () => process.env.OSTIA_TEST_REQUIRE_ALL === '1';

/** The skip of a test that needs PostgreSQL itself: it runs in test.sh's PostgreSQL pass, not the SQLite one. */
export const postgresPassOnly = (): string | false => (process.env.OSTIA_TEST_DATABASE_URL ? false : 'PostgreSQL only: runs in the PostgreSQL pass');

/** The Debian packages of a group of scripts/packages.txt. */
function packagesOf(group: string): string[] {
  // Compiled to dist/test/support/: three levels below the checkout.
  const file = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'scripts', 'packages.txt');
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [name, ...packages] = line.replace(/#.*/, '').trim().split(/\s+/);
    if (name === group) return packages;
  }
  throw new Error(`scripts/packages.txt has no group ${group}`);
}

/** What meets a requirement: the install command, then anything else it takes. */
function remedy(r: Requirement): string {
  const install = `sudo apt-get install --no-install-recommends ${packagesOf(r.group).join(' ')} (npm test as root installs them)`;
  return r.enable ? `${install}; ${r.enable}` : install;
}

/** What a requirement lacks here, or false, without the tests' remedy: for the benches, which say their own. */
export const lacking = (name: RequirementName): string | false => REQUIREMENTS[name].check();

/** Why the tests gated by a requirement cannot run here, or false; throws under --require-all. */
export function unmet(name: RequirementName): string | false {
  const r: Requirement = REQUIREMENTS[name];
  const missing = r.check();
  if (!missing) return false;
  const reason = `${missing}; to run them: ${remedy(r)}`;
  if (requireAll()) throw new Error(`npm test --require-all: the ${r.tests} cannot run: ${reason}`);
  return reason;
}

/** One line per unmet requirement: what is skipped, what is missing, the command that enables it. */
export function report(): string[] {
  return Object.values(REQUIREMENTS as Record<string, Requirement>).flatMap((r) => {
    const missing = r.check();
    return missing ? [`skipped: ${r.tests}: ${missing}; enable with: ${remedy(r)}`] : [];
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const lines = report();
  for (const line of lines) console.log(line);
  process.exitCode = lines.length > 0 && process.argv.includes('--require-all') ? 1 : 0;
}

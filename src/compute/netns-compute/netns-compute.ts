/**
 * Compute driver `netns`: an amphora is its agent's process group (../process-compute.ts) inside
 * boundaries of its own, as an instance would be:
 *
 * - a network namespace `<fabric>-<amphora id>` whose `eth0` is a port of the management bridge
 *   (network driver `bridge`) with the amphora's management address, so its agent and HAProxy see
 *   no address of the controller but that network's;
 * - a mount namespace in which the controller's data directory is an empty tmpfs but for the
 *   amphora's own directory, and /run, /tmp, /var/tmp and /dev/shm are private tmpfs: the rest of
 *   the system is visible as the uid below may see it, which owns nothing there;
 * - a uid and gid of its own (AMPHORA_UID_BASE + 24 bits of the amphora id), no supplementary
 *   groups, no new privileges: amphorae cannot signal one another or the controller, and nothing on
 *   the machine belongs to them.
 *
 * Processes of the amphora are exactly those in its network namespace (`ip netns pids`), which is
 * how a restarted controller finds and stops them. The namespace and its veth outlive the controller,
 * as the processes do. The directory belongs to root with the amphora's group, sticky: the agent
 * writes its files there but cannot replace agent.pid, which the controller trusts to signal.
 */
import { existsSync } from 'node:fs';
import { chmod, chown, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative } from 'node:path';
import type { AmphoraSpec } from '../compute-driver.js';
import { AMPHORA_FILES, ProcessCompute, type Command, type ProcessComputeOptions } from '../process-compute.js';
import { groupsOf, type GroupRecord } from '../process-group.js';
import { amphoraNamespace, deleteLink, deleteNetns, ip, IP, linkMac, MANAGEMENT_INTERFACE, netnsExists, netnsPids, plugPort, type BridgeAttachment } from '../../linux-net/ip.js';
import { addPortSecurity, removePortSecurity } from '../../linux-net/port-security.js';

export interface NetnsComputeOptions extends ProcessComputeOptions {
  /** The management bridge amphorae plug into. */
  management: BridgeAttachment;
  /** The controller's data directory, which amphorae must not see (their own directories lie under it). */
  dataDir: string;
}

/**
 * Above every range a distribution gives users and systemd gives its dynamic users and containers
 * (those end below 0x70000000), and below 2^31, where some tools read uids as negative.
 */
export const AMPHORA_UID_BASE = 0x7000_0000;

export function amphoraUid(amphoraId: string): number {
  return AMPHORA_UID_BASE + parseInt(amphoraId.replace(/-/g, '').slice(0, 6), 16);
}

/** What hides the machine from an amphora (below), kept in its directory: root's, which the sticky directory keeps the amphora from replacing. */
const MOUNTS_FILE = 'mounts.fstab';
/** Where the amphora's directory, then the agent's program directories, wait while what lies above them is covered. */
const STAGE = '/run/amphora';
/** Covered by a private tmpfs in every amphora (with the controller's data directory). */
const PRIVATE_DIRS = ['/run', '/tmp', '/var/tmp', '/dev/shm'];

/**
 * The directories of the agent's program files (the Node executable, the bundled agent) that the private
 * mounts would hide: a checkout or a Node under /tmp still runs. They come back read-only.
 */
export function hiddenProgramDirs(agent: Command, dataDir: string, dir: string): string[] {
  const covered = [...PRIVATE_DIRS, dataDir];
  const dirs = [agent.file, ...agent.args]
    .filter((arg) => isAbsolute(arg) && !isWithin(arg, dir) && existsSync(arg))
    .map((file) => dirname(file))
    .filter((d) => covered.some((c) => isWithin(d, c)));
  return [...new Set(dirs)];
}

function isWithin(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/**
 * The amphora's mounts, in order, for one `mount --all --fstab` (one program start instead of one per
 * mount): private /run, the amphora's directory and the hidden program directories staged there, private
 * /tmp, /var/tmp and /dev/shm, an empty tmpfs over the controller's data directory, the program
 * directories bound back read-only and the amphora's directory in its place, and a fresh /run over the
 * stage (named apart, or mount would think it mounted). X-mount.mkdir makes the mount points inside the
 * new tmpfs.
 */
export function amphoraMounts(dataDir: string, dir: string, programDirs: readonly string[] = []): string {
  const tmpfs = (target: string, mode: string, size: string, extra = '') => `ostia-amphora ${fstabPath(target)} tmpfs mode=${mode},size=${size}${extra} 0 0`;
  const bind = (from: string, to: string, extra = '') => `${fstabPath(from)} ${fstabPath(to)} none bind${extra},X-mount.mkdir 0 0`;
  const staged = programDirs.map((d, i) => ({ dir: d, stage: `${STAGE}-program-${i}` }));
  return [
    tmpfs('/run', '0755', '64k'),
    bind(dir, STAGE),
    ...staged.map((p) => bind(p.dir, p.stage)),
    ...PRIVATE_DIRS.slice(1).map((d) => tmpfs(d, '1777', '16m')),
    tmpfs(dataDir, '0755', '64k', ',X-mount.mkdir'),
    ...staged.map((p) => bind(p.stage, p.dir, ',ro')),
    bind(STAGE, dir),
    'ostia-amphora-run /run tmpfs mode=0755,size=64k 0 0',
  ].join('\n') + '\n';
}

/** fstab separates fields with blanks: those in a path are written as octal escapes. */
function fstabPath(path: string): string {
  return path.replace(/[\\ \t\n]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
}

/**
 * The only capabilities an amphora's processes may hold (ambient, so they survive the drop to its uid), as
 * an instance's root holds them over its own network stack and nothing else: keepalived adds and removes
 * the VIP and sends VRRP (NET_ADMIN, NET_RAW), the agent writes the UDP listeners' nftables rules
 * (NET_ADMIN). They act on the amphora's own network namespace only: entering another needs SYS_ADMIN,
 * and files stay the uid's. The agent starts HAProxy, which handles tenant traffic, without any.
 */
export const AMPHORA_CAPS = '-all,+net_admin,+net_raw';

/**
 * Run as root by `ip netns exec`, which enters the network namespace and a new mount namespace whose
 * mounts do not propagate back (it makes / a recursive slave): mounts the amphora's view, then drops
 * to its uid. $1 the mounts file, $2 the amphora's directory, $3 its uid, then the agent's command.
 * The umask lets the uid traverse the directories made for it; `-n` leaves no record in /run/mount.
 * Ports below 1024 become bindable by any uid in this network namespace only (the setting is per
 * namespace), so HAProxy can serve port 80 unprivileged; and HAProxy may bind a VIP its amphora does not
 * hold yet (the BACKUP of an ACTIVE_STANDBY pair, until keepalived moves the VIP to it), as in Octavia's.
 * It forwards, for the UDP listeners' DNAT to members (the agent's nftables table), and announces the
 * addresses of every port it brings up with gratuitous ARP (a failover's new amphora takes the VIP's).
 */
const ENTER_AMPHORA = `set -e
umask 022
echo 0 > /proc/sys/net/ipv4/ip_unprivileged_port_start
echo 1 > /proc/sys/net/ipv4/ip_nonlocal_bind
echo 1 > /proc/sys/net/ipv6/ip_nonlocal_bind
echo 1 > /proc/sys/net/ipv4/ip_forward
echo 1 > /proc/sys/net/ipv6/conf/all/forwarding
echo 1 > /proc/sys/net/ipv4/conf/default/arp_notify
mount -n --all --fstab "$1"
cd "$2"
id=$3
shift 3
exec /usr/bin/setpriv --reuid="$id" --regid="$id" --clear-groups --no-new-privs \
  --inh-caps=${AMPHORA_CAPS} --ambient-caps=${AMPHORA_CAPS} --bounding-set=${AMPHORA_CAPS} -- "$@"
`;

export class NetnsCompute extends ProcessCompute {
  private readonly management: BridgeAttachment;
  private readonly dataDir: string;

  constructor(rootDir: string, opts: NetnsComputeOptions) {
    super('netns', rootDir, opts);
    this.management = opts.management;
    this.dataDir = opts.dataDir;
  }

  /** The amphora's network namespace. */
  namespaceOf(amphoraId: string): string {
    return amphoraNamespace(this.management.namespace, amphoraId);
  }

  protected async prepare(spec: AmphoraSpec, dir: string, agent: Command): Promise<void> {
    // A namespace left by an amphora that crashed is made anew, as a rebooted instance gets its ports again.
    await this.teardown(spec.amphoraId);
    const netns = this.namespaceOf(spec.amphoraId);
    await ip('netns', 'add', netns);
    await plugPort(this.management, portName(spec.amphoraId), netns, spec.managementAddress);
    // Out of the amphora's reach (it holds CAP_NET_ADMIN of its own namespace only): frames from its port carry its MAC and address.
    await addPortSecurity(this.management.namespace, portName(spec.amphoraId), { mac: await linkMac(MANAGEMENT_INTERFACE, netns), addresses: [spec.managementAddress] });
    const id = amphoraUid(spec.amphoraId);
    for (const file of [AMPHORA_FILES.config, AMPHORA_FILES.cert, AMPHORA_FILES.key, AMPHORA_FILES.clientCa]) await chown(join(dir, file), id, id);
    await writeFile(join(dir, MOUNTS_FILE), amphoraMounts(this.dataDir, dir, hiddenProgramDirs(agent, this.dataDir, dir)), { mode: 0o600 });
    await chown(dir, 0, id);
    await chmod(dir, 0o1770);
  }

  protected wrap(agent: Command, amphoraId: string, dir: string): Command {
    const id = String(amphoraUid(amphoraId));
    return {
      file: IP,
      args: ['netns', 'exec', this.namespaceOf(amphoraId), '/bin/sh', '-c', ENTER_AMPHORA, 'ostia-amphora', join(dir, MOUNTS_FILE), dir, id, agent.file, ...agent.args],
    };
  }

  protected async groupsOf(amphoraId: string): Promise<GroupRecord[]> {
    return groupsOf(netnsPids(this.namespaceOf(amphoraId)));
  }

  /**
   * Whatever still runs in the namespace (stopGroups ended the groups; a process may have left its group)
   * dies with it. Without the namespace there is no veth either: its two ends live and die with it.
   */
  protected async teardown(amphoraId: string): Promise<void> {
    const netns = this.namespaceOf(amphoraId);
    if (!netnsExists(netns)) return;
    for (const pid of netnsPids(netns)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
      }
    }
    // Deleted now, not when the kernel frees the namespace, so that a boot right after can plug the port again.
    await deleteLink(portName(amphoraId), this.management.namespace);
    await removePortSecurity(this.management.namespace, portName(amphoraId));
    await deleteNetns(netns);
  }
}

/** The bridge end of the amphora's management veth, in the fabric: 13 characters, within Linux's 15. */
function portName(amphoraId: string): string {
  return `a${amphoraId.replace(/-/g, '').slice(0, 12)}`;
}

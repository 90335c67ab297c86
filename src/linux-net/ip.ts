/**
 * The iproute2 commands that build Ostia's networks on this machine (network namespaces, bridges,
 * veth pairs, addresses), for the `bridge` network driver and the `netns` compute driver. They need
 * root; every object they make lives in a namespace named after the data directory, so two Ostias
 * (or two test runs) on one machine never touch each other's.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readlinkSync, statSync } from 'node:fs';

/** iproute2 answers in milliseconds; longer means the kernel is stuck, which a caller should hear about. */
const TIMEOUT_MS = 10_000;
/** Where Debian and others install `ip`; the controller's PATH often lacks the sbin directories. */
const IP_CANDIDATES = ['/usr/sbin/ip', '/sbin/ip', '/usr/bin/ip', '/bin/ip'];
/** What the netns compute driver runs besides `ip`: util-linux's setpriv drops an amphora to its uid. */
const UTIL_LINUX = ['/usr/bin/setpriv'];

export const IP = IP_CANDIDATES.find((file) => existsSync(file)) ?? 'ip';

/** Runs `ip ARGS…` and returns its output; the error says the command and what `ip` said. */
export function ip(...args: string[]): Promise<string> {
  return runIp(args);
}

/** Several commands in one `ip` process (`ip -n NETNS -batch -`), which costs one start instead of one each. */
export function ipBatch(netns: string, commands: readonly string[]): Promise<string> {
  return runIp(['-n', netns, '-batch', '-'], commands.join('\n') + '\n');
}

function runIp(args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(IP, args, { timeout: TIMEOUT_MS }, (e, stdout, stderr) => {
      if (e) reject(new Error(`ip ${args.join(' ')}${input ? ` <<< ${JSON.stringify(input)}` : ''} failed: ${(stderr || e.message).trim()}`));
      else resolve(stdout);
    });
    // `ip` may exit (failing) before reading it all; its answer is in the callback.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(input);
  });
}

export function netnsExists(name: string): boolean {
  return existsSync(`/run/netns/${name}`);
}

/** Creates the namespace with its loopback up, unless it exists. */
export async function ensureNetns(name: string): Promise<void> {
  if (!netnsExists(name)) await ip('netns', 'add', name);
  await ip('-n', name, 'link', 'set', 'lo', 'up');
}

/** Which namespace of that name this is (its inode), null when there is none: a namespace made anew under the same name is another. */
export function namespaceIdentity(name: string): number | null {
  try {
    return statSync(`/run/netns/${name}`).ino;
  } catch {
    return null;
  }
}

/** The processes whose network namespace it is (none when it does not exist), as `ip netns pids` finds them, without starting `ip`. */
export function netnsPids(name: string): number[] {
  const inode = namespaceIdentity(name);
  if (inode === null) return [];
  const link = `net:[${inode}]`;
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readlinkSync(`/proc/${pid}/ns/net`) === link;
      } catch {
        return false; // exited meanwhile
      }
    })
    .map(Number);
}

/** Removes the namespace's name; the kernel frees it (and its interfaces) once no process is left in it. */
export async function deleteNetns(name: string): Promise<void> {
  if (netnsExists(name)) await ip('netns', 'delete', name);
}

/** Whether interface `name` exists, in namespace `netns` or else in the controller's own. */
export async function linkExists(name: string, netns?: string): Promise<boolean> {
  try {
    await ip(...(netns ? ['-n', netns] : []), 'link', 'show', 'dev', name);
    return true;
  } catch {
    return false;
  }
}

/** The MAC address of interface `name` of namespace `netns`. */
export async function linkMac(name: string, netns: string): Promise<string> {
  const [link] = JSON.parse(await ip('-n', netns, '-j', 'link', 'show', 'dev', name)) as Array<{ address?: string }>;
  if (!link?.address) throw new Error(`interface ${name} of namespace ${netns} has no MAC address`);
  return link.address;
}

/** Deletes interface `name` (a veth takes its peer with it); an absent one is fine. */
export async function deleteLink(name: string, netns?: string): Promise<void> {
  try {
    await ip(...(netns ? ['-n', netns] : []), 'link', 'delete', 'dev', name);
  } catch (e) {
    if (!/Cannot find device/.test((e as Error).message)) throw e;
  }
}

/** Why namespaces cannot be made here, or false: they need Linux, root, iproute2 and util-linux. */
export function namespacesUnavailable(uid: number | undefined = process.getuid?.()): string | false {
  if (process.platform !== 'linux') return 'network namespaces need Linux';
  if (uid !== 0) return 'creating network namespaces, bridges and veths needs root';
  if (!existsSync(IP)) return 'iproute2 (`ip`) is not installed';
  const missing = UTIL_LINUX.find((file) => !existsSync(file));
  if (missing) return `${missing} (util-linux) is missing`;
  return false;
}

/** An amphora's interface on the management network. */
export const MANAGEMENT_INTERFACE = 'eth0';

/** The network namespace of an amphora of the fabric `fabric`: the compute driver makes it, the network driver plugs ports into it. */
export function amphoraNamespace(fabric: string, amphoraId: string): string {
  return `${fabric}-${amphoraId}`;
}

/** A Linux bridge in a namespace, and the prefix length of the addresses on its network: where ports plug in. */
export interface BridgeAttachment {
  namespace: string;
  bridge: string;
  prefixLength: number;
}

/**
 * A port on `bridge`: a veth whose end `port` is enslaved to the bridge and whose other end is interface
 * `inside` of namespace `netns`, holding `address`, all up (with `netns`'s loopback). Two `ip` runs.
 */
export async function plugPort(bridge: BridgeAttachment, port: string, netns: string, address: string, inside = MANAGEMENT_INTERFACE): Promise<void> {
  await ipBatch(bridge.namespace, [`link add ${port} type veth peer name ${inside} netns ${netns}`, `link set ${port} master ${bridge.bridge} up`]);
  await ipBatch(netns, [`address add ${address}/${bridge.prefixLength} dev ${inside}`, `link set ${inside} up`, 'link set lo up']);
}

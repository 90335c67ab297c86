/**
 * Running nftables scripts inside a network namespace, for the bridge network driver's security
 * groups and port security (../network/bridge-network/security-groups.ts). One `nft -f -` applies a
 * whole script as one kernel transaction: all of it takes effect, or none of it.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { IP } from './ip.js';

/** nft answers in milliseconds; longer means the kernel is stuck, which a caller should hear about. */
const TIMEOUT_MS = 10_000;
/** Where Debian and others install `nft`; the controller's PATH often lacks the sbin directories. */
const NFT_CANDIDATES = ['/usr/sbin/nft', '/sbin/nft', '/usr/bin/nft', '/bin/nft'];

/** The `nft` executable, or null when nftables is not installed. */
export function nftPath(): string | null {
  return NFT_CANDIDATES.find((file) => existsSync(file)) ?? null;
}

/**
 * Applies `script` in network namespace `netns` as one transaction (`ip netns exec NETNS nft -f -`).
 * The error names the namespace, repeats nft's own complaint and quotes the script line it points at.
 */
export function nftApply(netns: string, script: string): Promise<void> {
  const nft = nftPath();
  if (!nft) return Promise.reject(new Error(`cannot apply nftables rules in network namespace ${netns}: nftables (\`nft\`) is not installed; install the nftables package`));
  return new Promise((resolve, reject) => {
    const child = execFile(IP, ['netns', 'exec', netns, nft, '-f', '-'], { timeout: TIMEOUT_MS }, (e, _stdout, stderr) => {
      if (e) reject(new Error(`nft -f - in network namespace ${netns} failed: ${describeNftError(stderr || e.message, script)}`));
      else resolve();
    });
    // nft may exit (failing) before reading it all; its answer is in the callback.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(script);
  });
}

/**
 * nft's first complaint (`/dev/stdin:LINE:COLUMNS: Error: …`) followed by the script line it names, on
 * one line: nft quotes the line below its complaint, which a log keeping one line per error would cut off.
 */
export function describeNftError(stderr: string, script: string): string {
  const lines = stderr.trim().split('\n');
  const first = lines.find((line) => /Error:/.test(line)) ?? lines[0] ?? '';
  const at = /^\/dev\/stdin:(\d+):/.exec(first);
  const line = at ? script.split('\n')[Number(at[1]) - 1] : undefined;
  return line === undefined ? first.trim() : `${first.trim()} (script line ${at![1]}: ${line.trim()})`;
}

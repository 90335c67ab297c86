/**
 * A fresh data directory whose bridge block (the /24s of 198.18.0.0/15 network.driver bridge derives from
 * it) no other lab of this machine holds. Test files run side by side and two directories may hash to the
 * same block, which the second lab's fabric would then refuse; so each block is claimed by a lock file
 * holding the claimant's pid (a dead claimant's lock is taken over), and a block already on an interface
 * (an Ostia of the machine's own, or a crashed run's leftovers) is passed over.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { bridgeManagementNetwork } from '../../src/config.js';
import { IP } from '../../src/linux-net/ip.js';
import { signalExists } from '../../src/compute/process-group.js';

const ATTEMPTS = 100;

export interface BridgeDataDir {
  dir: string;
  /** Removes the directory and gives the block back. */
  release(): void;
}

export function bridgeDataDir(prefix: string): BridgeDataDir {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const dir = mkdtempSync(prefix);
    const { cidr } = bridgeManagementNetwork(dir).managementNetwork;
    const lock = `/tmp/ostia-test-bridge-block-${cidr.replace(/[./]/g, '_')}.lock`;
    if (claim(lock)) {
      if (!onAnInterface(cidr))
        return {
          dir,
          release() {
            rmSync(dir, { recursive: true, force: true });
            rmSync(lock, { force: true });
          },
        };
      rmSync(lock, { force: true });
    }
    rmSync(dir, { recursive: true, force: true });
  }
  throw new Error(`no free bridge block after ${ATTEMPTS} data directories: remove /tmp/ostia-test-bridge-block-*.lock of runs that are over`);
}

function claim(lock: string): boolean {
  try {
    const fd = openSync(lock, 'wx');
    writeSync(fd, String(process.pid));
    closeSync(fd);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  let text: string;
  try {
    text = readFileSync(lock, 'utf8').trim();
  } catch {
    return claim(lock); // released meanwhile
  }
  // Empty: its claimant has not written its pid yet.
  if (!text || signalExists(Number(text))) return false;
  // The claimant died: take the lock over (another test may race for it; 'wx' decides).
  rmSync(lock, { force: true });
  return claim(lock);
}

function onAnInterface(cidr: string): boolean {
  return execFileSync(IP, ['-o', 'address', 'show', 'to', cidr], { encoding: 'utf8' }).trim() !== '';
}

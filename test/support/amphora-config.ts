/**
 * The `ostia up --config` file of the amphora tests and benches: amphora the default provider
 * (noop beside it), and a management network, agent port and health port of its own, so that
 * runs going on at the same time on this machine do not collide.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freeUdpPort, randomPort } from './amphora-fixtures.js';
import { deepMerge } from '../../src/config.js';

export interface ManagementNetwork {
  cidr: string;
  start: string;
  end: string;
}

/**
 * A random 127.x network for management addresses: a /24 holds the amphorae of a test; a run that
 * builds many (replacements included) asks for a /16.
 */
export function randomManagementNetwork(prefixLength: 16 | 24 = 24): ManagementNetwork {
  const second = 150 + Math.floor(Math.random() * 50);
  if (prefixLength === 16) return { cidr: `127.${second}.0.0/16`, start: `127.${second}.0.10`, end: `127.${second}.255.250` };
  const net = `127.${second}.${10 + Math.floor(Math.random() * 240)}`;
  return { cidr: `${net}.0/24`, start: `${net}.10`, end: `${net}.250` };
}

/** Writes DIR/ostia.json and returns its path; `overrides` (timers, leases, a wider network) are merged in deeply. */
export async function writeAmphoraConfig(dir: string, overrides: object = {}): Promise<string> {
  const base = {
    api: { enabledProviders: ['noop', 'amphora'], defaultProvider: 'amphora' },
    // Loopback amphorae whoever runs the test (as root `ostia up` would choose netns and bridge); netns tests say so.
    compute: { driver: 'local' },
    network: { driver: 'catalog' },
    amphora: {
      managementNetwork: randomManagementNetwork(),
      agentPort: randomPort(),
      healthListen: `127.0.0.1:${await freeUdpPort()}`,
    },
  };
  const file = join(dir, 'ostia.json');
  writeFileSync(file, JSON.stringify(deepMerge(base, overrides)));
  return file;
}

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, deepMerge, VIP_SUBNET_ID } from '../config.js';
import { blockAddresses, blockFile, boundBlocks, claimBlock, readBlock, withBlock } from './address-block.js';

test('a block is a /20 of the VIP range and of the management range; the heartbeat receiver takes its .1', () => {
  assert.deepEqual(blockAddresses(0), {
    vipPool: { start: '127.16.0.10', end: '127.16.15.250' },
    managementNetwork: { cidr: '127.80.0.0/20', start: '127.80.0.10', end: '127.80.15.250' },
    healthHost: '127.80.0.1',
  });
  assert.deepEqual(blockAddresses(15).managementNetwork, { cidr: '127.80.240.0/20', start: '127.80.240.10', end: '127.80.255.250' });
  assert.deepEqual(blockAddresses(15).vipPool, { start: '127.16.240.10', end: '127.16.255.250' });
});

test('a block fills in what the config leaves at its defaults, and nothing it sets', () => {
  const base = defaultConfig('/tmp/ostia-block');
  const applied = withBlock(base, 3);
  assert.equal(applied.amphora.healthListen, '127.80.48.1:5555');
  assert.deepEqual(applied.amphora.managementNetwork, blockAddresses(3).managementNetwork);
  const vipSubnet = applied.network.networks.flatMap((n) => n.subnets).find((s) => s.id === VIP_SUBNET_ID)!;
  assert.deepEqual(vipSubnet.allocation_pools, [blockAddresses(3).vipPool]);
  assert.equal(vipSubnet.cidr, '127.16.0.0/16', 'the subnet stays the one clients see');
  assert.equal(applied.amphora.agentPort, base.amphora.agentPort);

  const own = deepMerge(base, { amphora: { healthListen: '127.0.0.1:7000', managementNetwork: { cidr: '127.90.0.0/24', start: '127.90.0.10', end: '127.90.0.20' } } });
  const kept = withBlock(own, 3);
  assert.equal(kept.amphora.healthListen, '127.0.0.1:7000');
  assert.equal(kept.amphora.managementNetwork.cidr, '127.90.0.0/24');
  assert.deepEqual(withBlock(withBlock(base, 3), 3), applied, 'applying twice changes nothing');
});

test('a data directory takes the lowest free block once and keeps it', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ostia-block-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  assert.equal(readBlock(dir), null);
  assert.equal(claimBlock(dir, () => new Set([0, 1, 3])), 2);
  assert.equal(readFileSync(blockFile(dir), 'utf8'), '2\n');
  assert.equal(claimBlock(dir, () => new Set([2])), 2, 'its own amphorae are bound in it after a restart: it keeps it');
  assert.equal(readBlock(dir), 2);

  const full = mkdtempSync(join(tmpdir(), 'ostia-block-'));
  t.after(() => rmSync(full, { recursive: true, force: true }));
  assert.throws(() => claimBlock(full, () => new Set(Array.from({ length: 16 }, (_, i) => i))), /all 16 address blocks .* are in use by other Ostia instances on this machine/);
  writeFileSync(blockFile(full), 'seven\n');
  assert.throws(() => readBlock(full), /address-block holds 'seven', not a block number from 0 to 15: delete it to choose again/);
});

test('a socket bound inside a block marks it taken', async (t) => {
  const socket = createSocket('udp4');
  t.after(() => socket.close());
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, '127.80.250.77', resolve);
  });
  assert.ok(boundBlocks().has(15));
});

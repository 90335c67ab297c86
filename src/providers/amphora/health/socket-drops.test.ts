import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { endianness } from 'node:os';
import { dropsInTable, procLocalAddress, readSocketDrops } from './socket-drops.js';

const TABLE = [
  '   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops',
  ' 1180: 0100007F:15B3 00000000:0000 07 00000000:00000000 00:00000000 00000000  1000        0 55 2 0000000000000000 17',
  ' 1181: 0150507F:15B3 00000000:0000 07 00000000:00000000 00:00000000 00000000  1000        0 56 2 0000000000000000 0',
].join('\n');

test('local addresses as the kernel prints them, and the drops of the socket bound there', { skip: endianness() !== 'LE' && 'the table is little-endian' }, () => {
  assert.equal(procLocalAddress('127.0.0.1', 5555), '0100007F:15B3');
  assert.equal(procLocalAddress('::1', 5555), '00000000000000000000000001000000:15B3');
  assert.equal(dropsInTable(TABLE, '127.0.0.1', 5555), 17);
  assert.equal(dropsInTable(TABLE, '127.80.80.1', 5555), 0);
  assert.equal(dropsInTable(TABLE, '127.0.0.2', 5555), null);
});

test('a real socket is found in /proc/net/udp with no drops', { skip: process.platform !== 'linux' && 'Linux only' }, async (t) => {
  const socket = createSocket('udp4');
  t.after(() => socket.close());
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  assert.equal(readSocketDrops('127.0.0.1', socket.address().port), 0);
});

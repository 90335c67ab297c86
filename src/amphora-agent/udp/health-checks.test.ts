import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { member, monitor, pool } from '../../../test/support/render-fixtures.js';
import { HealthChecks, httpProbe, ping, tcpConnect, udpConnect } from './health-checks.js';

async function udpServer(t: { after(fn: () => void): void }, answer: boolean): Promise<number> {
  const socket = createSocket('udp4');
  if (answer) socket.on('message', (_m, from) => socket.send('here', from.port, from.address));
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  t.after(() => socket.close());
  return socket.address().port;
}

/** A port of 127.0.0.1 nothing listens on (bound, read and closed). */
async function closedUdpPort(): Promise<number> {
  const socket = createSocket('udp4');
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  const { port } = socket.address();
  socket.close();
  return port;
}

test('UDP-CONNECT fails on a refused port only: a silent or answering member passes, as Octavia’s nc -uz does', async (t) => {
  assert.equal(await udpConnect({ address: '127.0.0.1', port: await closedUdpPort() }, 1_000), 'port unreachable');
  assert.equal(await udpConnect({ address: '127.0.0.1', port: await udpServer(t, false) }, 300), null);
  assert.equal(await udpConnect({ address: '127.0.0.1', port: await udpServer(t, true) }, 1_000), null);
});

test('HTTP passes on an expected status only; TCP on a connection; PING on an echo reply', async (t) => {
  const server = createServer((req, res) => res.writeHead(req.url === '/healthy' ? 204 : 503).end());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const port = (server.address() as AddressInfo).port;
  const probe = httpProbe(monitor(1, { type: 'HTTP', urlPath: '/healthy', expectedCodes: '200-204' }));
  assert.equal(await probe({ address: '127.0.0.1', port }, 2_000), null);
  assert.equal(await httpProbe(monitor(1, { type: 'HTTP', urlPath: '/sick', expectedCodes: '200-204' }))({ address: '127.0.0.1', port }, 2_000), 'status 503');
  assert.equal(await tcpConnect({ address: '127.0.0.1', port }, 2_000), null);
  assert.match((await tcpConnect({ address: '127.0.0.1', port: await closedUdpPort() }, 2_000))!, /ECONNREFUSED/);
  // ping needs CAP_NET_RAW (the netns amphora's agent holds it) or root.
  if (process.getuid?.() === 0) assert.equal(await ping({ address: '127.0.0.1', port: 0 }, 2_000), null);
});

test('a member goes down after maxRetriesDown failures and comes back after maxRetries successes', async (t) => {
  const socket = createSocket('udp4');
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  const port = socket.address().port;
  let changes = 0;
  const checks = new HealthChecks({ onChange: () => changes++, log: { info: () => undefined } });
  t.after(() => checks.stop());
  const p = pool(1, { protocol: 'UDP', members: [member(1, { address: '127.0.0.1', port })], monitor: monitor(1, { type: 'UDP-CONNECT', delay: 1, timeout: 1, maxRetries: 2, maxRetriesDown: 2 }) });
  checks.update([p]);
  const id = p.members[0]!.id;
  assert.equal(checks.state(id), 'up', 'members start up');
  socket.close();
  const waitFor = async (state: 'up' | 'down') => {
    const deadline = Date.now() + 10_000;
    while (checks.state(id) !== state) {
      assert.ok(Date.now() < deadline, `still ${checks.state(id)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  await waitFor('down');
  assert.equal(changes, 1);
  const back = createSocket('udp4');
  back.bind(port, '127.0.0.1');
  await once(back, 'listening');
  t.after(() => back.close());
  await waitFor('up');
  assert.equal(changes, 2);
  checks.update([{ ...p, monitor: null }]);
  assert.equal(checks.state(id), 'unchecked', 'a pool without a monitor checks nothing');
});

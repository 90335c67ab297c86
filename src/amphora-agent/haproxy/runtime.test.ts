import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HaproxyProcess } from './process.js';
import { parseShowStat, RuntimeCommandError } from './runtime.js';
import { collectBodies, eventually, loopbackAddress, randomPort, startBackend, tempDir } from '../../../test/support/amphora-fixtures.js';

test('show stat is parsed by its header, quoted cells included', () => {
  const csv = [
    '# pxname,svname,qcur,scur,slim,stot,bin,bout,ereq,econ,eresp,status,weight,act,bck,type,check_status,addr,check_desc,',
    'fe,FRONTEND,,2,500,10,1000,2000,1,,,OPEN,,,,0,,,,',
    'be,m1,0,1,,9,900,1800,,0,0,UP 1/3,5,1,0,2,L4OK,127.0.0.1:8080,"Layer4 check passed, ""fine""",',
    'be,BACKEND,0,1,,9,900,1800,,0,0,UP,5,1,0,1,,,,',
    '',
  ].join('\n');
  const rows = parseShowStat(csv);
  assert.equal(rows.length, 3);
  assert.deepEqual(rows[0], {
    pxname: 'fe', svname: 'FRONTEND', type: 'frontend', status: 'OPEN', scur: 2, slim: 500, stot: 10, bin: 1000, bout: 2000, ereq: 1,
    econ: 0, eresp: 0, weight: null, act: null, bck: null, check_status: '', addr: '',
  });
  assert.equal(rows[1]!.status, 'UP 1/3');
  assert.equal(rows[1]!.weight, 5);
  assert.equal(rows[1]!.check_status, 'L4OK');
  assert.equal(rows[1]!.addr, '127.0.0.1:8080');
  assert.equal(rows[2]!.type, 'backend');
  assert.throws(() => parseShowStat('Unknown command\n'), RuntimeCommandError);
});

test('dynamic members on a real HAProxy: add, weight, maintenance, removal, no reload', async (t) => {
  const dir = tempDir('runtime');
  const vip = loopbackAddress();
  const port = randomPort();
  const [a, b] = [await startBackend('a'), await startBackend('b')];
  const files = {
    config: join(dir.path, 'haproxy.cfg'),
    masterSocket: join(dir.path, 'master.sock'),
    statsSocket: join(dir.path, 'stats.sock'),
    pidFile: join(dir.path, 'haproxy.pid'),
    stateFile: join(dir.path, 'haproxy.state'),
  };
  writeFileSync(
    files.config,
    [
      'global',
      `    stats socket ${files.statsSocket} mode 600 level admin`,
      `    pidfile ${files.pidFile}`,
      'defaults',
      '    mode http',
      '    timeout connect 2s',
      '    timeout client 10s',
      '    timeout server 10s',
      'frontend fe',
      `    bind ${vip}:${port}`,
      '    default_backend be',
      'backend be',
      '    balance roundrobin',
      `    server a ${a.address}:${a.port} weight 1`,
      '',
    ].join('\n'),
  );
  const haproxy = new HaproxyProcess({ binary: '/usr/sbin/haproxy', files, log: { info: () => undefined, warn: () => undefined, error: () => undefined } });
  t.after(async () => {
    await haproxy.stop();
    await a.close();
    await b.close();
    dir.remove();
  });
  await haproxy.start();
  const master = haproxy.status().masterPid;
  const runtime = haproxy.runtime;
  const members = async () => new Map((await runtime.showStat()).filter((r) => r.type === 'server').map((r) => [r.svname, r]));

  await runtime.addServer('be', 'b', `${b.address}:${b.port}`, ['weight', '1', 'check', 'inter', '1000'], true);
  assert.equal((await members()).get('b')?.status.startsWith('UP'), true);
  assert.deepEqual(new Set(await collectBodies(vip, port, 6)), new Set(['a', 'b']));
  await eventually(async () => (await members()).get('b')?.check_status === 'L4OK', 'the added server to be health checked');
  const backendRow = (await runtime.showStat()).find((r) => r.type === 'backend');
  assert.equal(backendRow?.act, 2, 'the backend counts both servers (no haproxy#2497)');

  await runtime.setWeight('be', 'a', 0);
  assert.deepEqual(new Set(await collectBodies(vip, port, 4)), new Set(['b']));
  await runtime.setWeight('be', 'a', 1);

  await runtime.setAdminState('be', 'b', 'maint');
  assert.equal((await members()).get('b')?.status, 'MAINT');
  assert.deepEqual(new Set(await collectBodies(vip, port, 4)), new Set(['a']));
  await runtime.setAdminState('be', 'b', 'ready');

  await runtime.addServer('be', 'c', `${b.address}:${b.port}`, ['weight', '1'], false);
  assert.equal((await members()).get('c')?.status, 'MAINT', 'added without enable: in maintenance');

  await runtime.removeServer('be', 'b');
  await runtime.removeServer('be', 'c');
  assert.deepEqual([...(await members()).keys()], ['a']);
  assert.deepEqual(new Set(await collectBodies(vip, port, 4)), new Set(['a']));
  assert.equal((await runtime.showStat()).find((r) => r.type === 'backend')?.status, 'UP');

  await assert.rejects(runtime.removeServer('be', 'nope'), RuntimeCommandError);
  await assert.rejects(runtime.addServer('be', 'x', `${b.address}:${b.port}`, ['enabled'], true), /haproxy#2497/);
  await assert.rejects(runtime.addServer('be', 'x', '127.0.0.1:1;shutdown', [], true), /refusing/);
  await assert.rejects(runtime.setAdminState('be', 'a\nshutdown sessions', 'maint'), /refusing/);
  assert.equal(haproxy.status().masterPid, master, 'no reload, no restart');
});

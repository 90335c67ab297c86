/**
 * The client against a real ovsdb-server on a fresh OVN Northbound database; ovn-nbctl, an
 * independent client, writes rows for the monitors and is the oracle for what we wrote.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { EventEmitter } from 'node:events';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { OvsdbClient, OvsdbClosedError, type ReconnectReport } from './client.js';
import { mapToRecord, NamedUuid, Uuid, type Atom } from './datum.js';
import { DisconnectedError } from './json-rpc.js';
import type { Monitor, ResyncReport, RowChange } from './monitor.js';
import { OvsdbOperationError, type Row } from './operations.js';
import { HEALTH_CHECK_UNSUPPORTED_TEXT, assertHealthChecksSupported, hasColumn, schemaVersion, supportsHealthChecks } from './schema.js';
import { NB_SCHEMA, TestOvsdbServer, schemaWithout } from '../../../test/support/ovsdb-server.js';
import { unmet } from '../../../test/support/requirements.js';

const run = promisify(execFile);
const NB = 'OVN_Northbound';
const skip = unmet('ovsdb');
const fast = { backoffInitialMs: 50, backoffMaxMs: 400, connectTimeoutMs: 10_000, probeIntervalMs: 0 };

let server: TestOvsdbServer;
let scratch: string;

before(async () => {
  if (skip) return;
  server = await TestOvsdbServer.start();
  scratch = mkdtempSync(join(tmpdir(), 'ostia-ovsdb-test-'));
});
after(async () => {
  await server?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** Resolves with the first event (args) that satisfies pred; bounded so a lost event fails the test. */
async function waitFor<T extends unknown[]>(em: EventEmitter, event: string, pred: (...a: T) => boolean = () => true, ms = 20_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      em.off(event, on);
      reject(new Error(`no '${event}' event within ${ms} ms`));
    }, ms);
    function on(...a: unknown[]) {
      if (!pred(...(a as T))) return;
      clearTimeout(timer);
      em.off(event, on);
      resolve(a as T);
    }
    em.on(event, on);
  });
}

const lbRows = async (c: OvsdbClient, where: [string, '==', string][] = []): Promise<Row[]> => {
  const [r] = await c.transact(NB, [{ op: 'select', table: 'Load_Balancer', where }]);
  return r && r.op === 'select' ? r.rows : [];
};

/** The monitor's cache equals a fresh select, row by row (uuids, names, vips). */
async function assertCacheMatches(c: OvsdbClient, m: Monitor): Promise<void> {
  const rows = await lbRows(c);
  const view = (r: Row) => JSON.stringify([String(r._uuid), r.name, [...(r.vips as Map<Atom, Atom>)].sort()]);
  const want = rows.map(view).sort();
  const have = [...m.tables.get('Load_Balancer')!].map(([uuid, r]) => view({ ...r, _uuid: uuid })).sort();
  assert.deepEqual(have, want);
}

test('connects over unix and tcp; list_dbs and echo answer', { skip }, async () => {
  for (const remote of [server.unixRemote, server.tcpRemote]) {
    const c = await OvsdbClient.connect(remote, fast);
    try {
      assert.ok((await c.listDbs()).includes(NB), remote);
      assert.deepEqual(await c.echo(['ping', 42]), ['ping', 42]);
    } finally {
      c.close();
    }
  }
});

test('transact: insert with uuid-name, select, update, mutate, delete — ovn-nbctl sees each step', { skip }, async () => {
  const c = await OvsdbClient.connect(server.unixRemote, fast);
  try {
    const [ins, hc] = await c.transact(NB, [
      {
        op: 'insert',
        table: 'Load_Balancer',
        uuidName: 'lb',
        row: {
          name: 'lb-octavia-1',
          protocol: 'tcp',
          vips: new Map([['10.0.0.10:80', '10.0.1.5:8080,10.0.1.6:8080']]),
          selection_fields: ['ip_dst', 'ip_src', 'tp_dst', 'tp_src'],
          external_ids: { 'neutron:vip': '10.0.0.10', enabled: 'True' },
          health_check: [new NamedUuid('hc')],
        },
      },
      { op: 'insert', table: 'Load_Balancer_Health_Check', uuidName: 'hc', row: { vip: '10.0.0.10:80', options: { interval: '2' } } },
      { op: 'comment', comment: 'ostia test' },
    ]);
    assert.ok(ins?.op === 'insert' && ins.uuid instanceof Uuid);
    assert.ok(hc?.op === 'insert');
    const lbUuid = ins.uuid;

    const listed = await server.nbctl('lb-list');
    assert.match(listed, /lb-octavia-1\s+tcp\s+10\.0\.0\.10:80\s+10\.0\.1\.5:8080,10\.0\.1\.6:8080/);
    assert.match(await server.nbctl('get', 'Load_Balancer', lbUuid.uuid, 'health_check'), new RegExp(hc.uuid.uuid));

    const [row] = await lbRows(c, [['name', '==', 'lb-octavia-1']]);
    assert.ok(row);
    assert.equal(row.protocol instanceof Array ? row.protocol[0] : row.protocol, 'tcp');
    assert.deepEqual(mapToRecord(row.external_ids), { 'neutron:vip': '10.0.0.10', enabled: 'True' });
    assert.deepEqual(row.selection_fields, ['ip_dst', 'ip_src', 'tp_dst', 'tp_src'].filter((f) => (row.selection_fields as Atom[]).includes(f)));
    assert.equal((row.selection_fields as Atom[]).length, 4);

    const where: [string, '==', Uuid][] = [['_uuid', '==', lbUuid]];
    const [mut] = await c.transact(NB, [
      {
        op: 'mutate',
        table: 'Load_Balancer',
        where,
        mutations: [
          ['vips', 'insert', new Map([['10.0.0.10:443', '10.0.1.5:8443']])],
          ['external_ids', 'delete', ['enabled']],
        ],
      },
    ]);
    assert.deepEqual(mut, { op: 'mutate', count: 1 });
    const [upd] = await c.transact(NB, [{ op: 'update', table: 'Load_Balancer', where, row: { protocol: 'udp' } }]);
    assert.deepEqual(upd, { op: 'update', count: 1 });
    assert.match(await server.nbctl('lb-list'), /udp\s+10\.0\.0\.10:443\s+10\.0\.1\.5:8443/);
    assert.equal((await server.nbctl('get', 'Load_Balancer', lbUuid.uuid, 'external_ids')).trim(), '{"neutron:vip"="10.0.0.10"}');

    const [del] = await c.transact(NB, [{ op: 'delete', table: 'Load_Balancer', where }]);
    assert.deepEqual(del, { op: 'delete', count: 1 });
    assert.doesNotMatch(await server.nbctl('lb-list'), /lb-octavia-1/);
    // The health check was referenced only by the load balancer: OVSDB collected it.
    assert.equal((await server.nbctl('--columns=_uuid', 'list', 'Load_Balancer_Health_Check')).trim(), '');
  } finally {
    c.close();
  }
});

test('a refused operation throws naming the operation and OVSDB error/details; nothing is committed', { skip }, async () => {
  const c = await OvsdbClient.connect(server.tcpRemote, fast);
  try {
    await assert.rejects(
      c.transact(NB, [
        { op: 'insert', table: 'Load_Balancer', row: { name: 'must-not-exist' } },
        { op: 'insert', table: 'Load_Balancer', row: { name: 'bad-proto', protocol: 'http' } },
      ]),
      (e: unknown) => {
        assert.ok(e instanceof OvsdbOperationError);
        assert.equal(e.index, 1);
        assert.equal(e.op, 'insert');
        assert.equal(e.table, 'Load_Balancer');
        assert.equal(e.error, 'constraint violation');
        assert.match(e.details ?? '', /http/);
        assert.match(e.message, /insert on Load_Balancer \(operation 1\) failed: constraint violation/);
        return true;
      },
    );
    assert.equal((await lbRows(c, [['name', '==', 'must-not-exist']])).length, 0);
    // A dangling strong reference (health_check is strong) fails at commit: the extra result after the last operation.
    await assert.rejects(
      c.transact(NB, [
        { op: 'insert', table: 'Load_Balancer', row: { name: 'dangling', health_check: [new Uuid('11111111-2222-4333-8444-555555555555')] } },
      ]),
      (e: unknown) => e instanceof OvsdbOperationError && e.op === 'commit' && e.index === 1 && e.error === 'referential integrity violation',
    );
  } finally {
    c.close();
  }
});

test('monitor_cond: inserts, updates and deletes made by ovn-nbctl reach the cache as events', { skip }, async () => {
  const c = await OvsdbClient.connect(server.unixRemote, fast);
  try {
    await server.nbctl('lb-add', 'pre-existing', '10.0.0.1:80', '10.0.1.1:80', 'tcp');
    const m = await c.monitor(NB, {
      Load_Balancer: { columns: ['name', 'vips', 'protocol', 'external_ids'] },
      Logical_Switch: { columns: ['name', 'load_balancer'] },
    });
    assert.ok(m.rows('Load_Balancer').some((r) => r.name === 'pre-existing'), 'initial rows');

    const inserted = waitFor<[RowChange]>(m, 'change', (ch) => ch.kind === 'insert' && ch.row?.name === 'watched');
    await server.nbctl('lb-add', 'watched', '10.0.0.2:80', '10.0.1.2:80', 'udp');
    const [ins] = await inserted;
    assert.equal(ins.table, 'Load_Balancer');
    assert.deepEqual(ins.row?.protocol, ['udp']);
    assert.equal(ins.resync, false);

    // A map diff (vips gains a key) and an optional scalar (protocol) in update2's modify.
    const updated = waitFor<[RowChange]>(m, 'change', (ch) => ch.kind === 'update' && ch.uuid === ins.uuid && (ch.row?.vips as Map<Atom, Atom>).size === 2);
    await server.nbctl('lb-add', 'watched', '10.0.0.3:80', '10.0.1.3:80', 'udp');
    const [upd] = await updated;
    assert.equal((upd.row?.vips as Map<Atom, Atom>).get('10.0.0.3:80'), '10.0.1.3:80');
    assert.equal((upd.old?.vips as Map<Atom, Atom>).size, 1);
    const protoChanged = waitFor<[RowChange]>(m, 'change', (ch) => ch.uuid === ins.uuid && (ch.row?.protocol as Atom[])[0] === 'tcp');
    await server.nbctl('set', 'Load_Balancer', ins.uuid, 'protocol=tcp');
    await protoChanged;
    const protoCleared = waitFor<[RowChange]>(m, 'change', (ch) => ch.uuid === ins.uuid && (ch.row?.protocol as Atom[]).length === 0);
    await server.nbctl('clear', 'Load_Balancer', ins.uuid, 'protocol');
    await protoCleared;
    await assertCacheMatches(c, m);

    // A set of references on another table.
    const attached = waitFor<[RowChange]>(m, 'change', (ch) => ch.table === 'Logical_Switch' && (ch.row?.load_balancer as Uuid[]).length === 1);
    await server.nbctl('ls-add', 'sw0', '--', 'ls-lb-add', 'sw0', 'watched');
    const [sw] = await attached;
    assert.equal((sw.row?.load_balancer as Uuid[])[0]?.uuid, ins.uuid);

    const deleted = waitFor<[RowChange]>(m, 'change', (ch) => ch.kind === 'delete' && ch.uuid === ins.uuid);
    await server.nbctl('ls-del', 'sw0', '--', 'lb-del', 'watched');
    const [del] = await deleted;
    assert.equal(del.old?.name, 'watched');
    assert.equal(m.tables.get('Load_Balancer')!.has(ins.uuid), false);
    await assertCacheMatches(c, m);
    await c.cancelMonitor(m);
    await server.nbctl('lb-del', 'pre-existing');
  } finally {
    c.close();
  }
});

test('monitor_cond with a condition sees only matching rows; plain monitor (update) works too', { skip }, async () => {
  const c = await OvsdbClient.connect(server.tcpRemote, fast);
  try {
    const cond = await c.monitor(NB, { Load_Balancer: { columns: ['name'], where: [['name', '==', 'only-me']] } });
    const plain = await c.monitor(NB, { Load_Balancer: { columns: ['name', 'vips'] } }, 'monitor');
    const seenPlain = waitFor<[RowChange]>(plain, 'change', (ch) => ch.kind === 'insert' && ch.row?.name === 'only-me');
    const seenCond = waitFor<[RowChange]>(cond, 'change', (ch) => ch.kind === 'insert');
    await server.nbctl('lb-add', 'not-me', '10.0.0.4:80', '10.0.1.4:80', '--', 'lb-add', 'only-me', '10.0.0.5:80', '10.0.1.5:80');
    const [[p], [q]] = await Promise.all([seenPlain, seenCond]);
    assert.equal(q.row?.name, 'only-me');
    assert.deepEqual(cond.rows('Load_Balancer').map((r) => r.name), ['only-me']);
    assert.equal((p.row?.vips as Map<Atom, Atom>).get('10.0.0.5:80'), '10.0.1.5:80');
    assert.deepEqual(plain.rows('Load_Balancer').map((r) => r.name).filter((n) => n === 'not-me' || n === 'only-me').sort(), ['not-me', 'only-me']);
    const gone = waitFor<[RowChange]>(plain, 'change', (ch) => ch.kind === 'delete' && ch.old?.name === 'not-me');
    await server.nbctl('lb-del', 'not-me');
    await gone;
    await assertCacheMatches(c, plain);
    await server.nbctl('lb-del', 'only-me');
  } finally {
    c.close();
  }
});

test("the server's echo probe is answered: the tcp session outlives two probe intervals", { skip }, async () => {
  // ovsdb-server probes idle tcp sessions every 5 s and drops them after a second silent interval.
  const c = await OvsdbClient.connect(server.tcpRemote, fast);
  let disconnected = false;
  c.on('disconnected', () => (disconnected = true));
  try {
    await waitFor(c, 'server-echo');
    await waitFor(c, 'server-echo');
    assert.equal(disconnected, false);
    assert.deepEqual(await c.echo(['still-here']), ['still-here']);
  } finally {
    c.close();
  }
});

test('our own echo probe: a frozen server is detected and dropped; reconnects when it thaws', { skip }, async () => {
  const s = await TestOvsdbServer.start();
  const c = await OvsdbClient.connect(s.unixRemote, { ...fast, probeIntervalMs: 200 });
  try {
    assert.deepEqual(await c.echo(), ['ostia']);
    const lost = waitFor<[Error | undefined]>(c, 'disconnected');
    s.pause();
    const [err] = await lost;
    assert.match(err?.message ?? '', /inactivity probe/);
    const back = waitFor(c, 'reconnected');
    s.resume();
    await back;
    assert.deepEqual(await c.echo(['again']), ['again']);
  } finally {
    c.close();
    await s.close();
  }
});

test('server restarted under a connected client: back-off, re-monitor, cache reconciled with changes made meanwhile', { skip }, async () => {
  const s = await TestOvsdbServer.start();
  const c = await OvsdbClient.connect(s.tcpRemote, fast);
  try {
    await s.nbctl('lb-add', 'stays', '10.0.0.1:80', '10.0.1.1:80', '--', 'lb-add', 'goes', '10.0.0.2:80', '10.0.1.2:80', '--', 'lb-add', 'changes', '10.0.0.3:80', '10.0.1.3:80');
    const m = await c.monitor(NB, { Load_Balancer: { columns: ['name', 'vips'] } });
    assert.equal(m.rows('Load_Balancer').length, 3);
    const resync: RowChange[] = [];
    m.on('change', (ch: RowChange) => ch.resync && resync.push(ch));

    const down = waitFor(c, 'disconnected');
    await s.stop();
    await down;
    await assert.rejects(c.transact(NB, [{ op: 'select', table: 'Load_Balancer', where: [] }]), DisconnectedError);
    await waitFor(c, 'reconnect-failed'); // it is retrying while the server is away

    // Change the database file while no server runs (ovsdb-tool writes it offline).
    const byName = (n: string) => [['name', '==', n]];
    await run('ovsdb-tool', [
      'transact',
      s.dbFiles[0]!,
      JSON.stringify([
        NB,
        { op: 'delete', table: 'Load_Balancer', where: byName('goes') },
        { op: 'update', table: 'Load_Balancer', where: byName('changes'), row: { vips: ['map', [['10.0.0.3:80', '10.0.1.9:80']]] } },
        { op: 'insert', table: 'Load_Balancer', row: { name: 'new', vips: ['map', [['10.0.0.4:80', '10.0.1.4:80']]] } },
      ]),
    ]);

    const reconnected = waitFor<[ReconnectReport]>(c, 'reconnected');
    const resynced = waitFor<[ResyncReport]>(m, 'resync');
    await s.restart();
    const [[report], [rs]] = await Promise.all([reconnected, resynced]);
    assert.ok(report.attempts >= 1, `failed attempts before success: ${report.attempts}`);
    assert.ok(report.reconnectedAt >= report.disconnectedAt);
    assert.deepEqual(rs, { inserted: 1, updated: 1, deleted: 1 });
    assert.deepEqual(
      resync.map((ch) => `${ch.kind}:${(ch.row ?? ch.old)?.name}`).sort(),
      ['delete:goes', 'insert:new', 'update:changes'],
    );
    await assertCacheMatches(c, m);

    // The re-issued monitor is live: a change after the reconnect arrives as a normal event.
    const live = waitFor<[RowChange]>(m, 'change', (ch) => ch.kind === 'insert' && ch.row?.name === 'after' && !ch.resync);
    await s.nbctl('lb-add', 'after', '10.0.0.5:80', '10.0.1.5:80');
    await live;
    await assertCacheMatches(c, m);
  } finally {
    c.close();
    await s.close();
  }
});

test('abort (or close) stops reconnecting; the first connect gives up after connectTimeoutMs', { skip }, async () => {
  const s = await TestOvsdbServer.start();
  const ac = new AbortController();
  const c = await OvsdbClient.connect(s.unixRemote, { ...fast, signal: ac.signal });
  const down = waitFor(c, 'disconnected');
  await s.stop();
  await down;
  await waitFor(c, 'reconnect-failed');
  ac.abort();
  let reconnected = false;
  c.on('reconnected', () => (reconnected = true));
  try {
    await s.restart();
    // Several back-off periods with the server up: a live reconnect loop would have connected.
    await new Promise((r) => setTimeout(r, fast.backoffMaxMs * 3));
    assert.equal(reconnected, false);
    assert.equal(c.connected, false);
    await assert.rejects(c.echo(), OvsdbClosedError);
    await s.stop();
    await assert.rejects(OvsdbClient.connect(s.unixRemote, { ...fast, connectTimeoutMs: 300 }), DisconnectedError);
  } finally {
    await s.close();
  }
});

test('schema checks on the real Northbound schema and on copies without health checks', { skip }, async () => {
  const c = await OvsdbClient.connect(server.unixRemote, fast);
  try {
    const nb = await c.getSchema(NB);
    const onDisk = JSON.parse(readFileSync(NB_SCHEMA, 'utf8')) as { version: string };
    assert.equal(nb.version, onDisk.version);
    assert.ok(schemaVersion(nb)[0] >= 5);
    assert.ok(hasColumn(nb, 'Load_Balancer', 'health_check'));
    assert.ok(hasColumn(nb, 'Logical_Router', 'load_balancer'));
    assert.equal(hasColumn(nb, 'Load_Balancer', 'no_such_column'), false);
    assert.ok(supportsHealthChecks(nb));
    assert.doesNotThrow(() => assertHealthChecksSupported(nb));
  } finally {
    c.close();
  }
  const variants = [
    schemaWithout(scratch, NB_SCHEMA, 'Load_Balancer', ['health_check'], ['Load_Balancer_Health_Check']),
    schemaWithout(scratch, NB_SCHEMA, 'Load_Balancer', ['health_check']),
  ];
  for (const file of variants) {
    const old = await TestOvsdbServer.start({ schemas: [file] });
    const oc = await OvsdbClient.connect(old.unixRemote, fast);
    try {
      const schema = await oc.getSchema(NB);
      assert.equal(hasColumn(schema, 'Load_Balancer', 'health_check'), false);
      assert.equal(supportsHealthChecks(schema), false);
      assert.throws(() => assertHealthChecksSupported(schema), { message: HEALTH_CHECK_UNSUPPORTED_TEXT });
      assert.equal(HEALTH_CHECK_UNSUPPORTED_TEXT, 'OVN Load Balancer supports Health Check provider from version 2.12. Upgrade OVN in order to use it.');
    } finally {
      oc.close();
      await old.close();
    }
  }
});


/**
 * The ovn provider end to end, as an operator meets it: a real `ostia up` configured for the OVN
 * lab (a real OVN in network namespaces), driven by the real `openstack loadbalancer` CLI.
 * TCP and UDP through the VIP reach both backends; a stopped backend turns its member to ERROR
 * and gets no traffic, and comes back; an Ostia restart puts back a row deleted behind its back
 * and removes a stray row it owns; a change made while the Northbound database is down reaches
 * it once it is back; a cascade delete leaves nothing Ostia wrote.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { eventually } from './support/amphora-fixtures.js';
import { OpenstackCli } from './support/openstack-cli.js';
import { unmet } from './support/requirements.js';
import { startOstia, type OstiaProcess } from './support/ostia-process.js';
import { waitBackends, waitMonitor } from './support/ovn-readiness.js';
import { asSet, nbRows, vipsOf, type NbRow } from './support/ovn-rows.js';
import { BACKENDS, CLIENT, HTTP_PORT, PRIVATE_LS, PRIVATE_SUBNET, PUBLIC_LS, PUBLIC_SUBNET, ROUTER, startOvnLab, tally, UDP_PORT, type OvnLab } from './support/ovn-lab.js';

type Obj = Record<string, unknown>;

const run = promisify(execFile);
const CLOUD = 'ostia-demo';
const TCP_VIP_PORT = 80;
const UDP_VIP_PORT = 53;
const BACKEND_IPS = Object.values(BACKENDS);
/** Health monitor timings (s): a stopped backend is offline after ~delay × max_retries_down. */
const MONITOR = { delay: 2, timeout: 1, maxRetries: 1, maxRetriesDown: 2 };
/** Bound for the statuses Ostia derives from OVN's probes (a few probe intervals). */
const STATUS_TIMEOUT_MS = 45_000;
const LB_COLUMNS = ['_uuid', 'name', 'protocol', 'vips'];

/** Polls `read` until `ok` holds for what it returned; fails after `timeoutMs` naming the last value. */
async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs: number, intervalMs = 250): Promise<T> {
  let last: T | undefined;
  try {
    await eventually(async () => ok((last = await read())), what, timeoutMs, intervalMs);
  } catch (e) {
    throw new Error(`${(e as Error).message}; last seen: ${JSON.stringify(last)}`);
  }
  return last!;
}

/** The backends of a `vips` value, sorted: `10.0.1.11:8080,10.0.1.12:8080` → [both]. */
const backendsOf = (value: string | undefined) => (value ? value.split(',').sort() : []);
const at = (ips: readonly string[], port: number) => ips.map((ip) => `${ip}:${port}`).sort();

/** The pool of a `status show` tree, by name. */
function poolStatus(tree: Obj, name: string): Obj {
  const lb = tree.loadbalancer as { listeners: Array<{ pools: Obj[] }> };
  const pool = lb.listeners.flatMap((l) => l.pools).find((p) => p.name === name);
  assert.ok(pool, `pool ${name} is not in the status tree ${JSON.stringify(tree)}`);
  return pool;
}

test('the ovn provider through ostia up and the openstack CLI', { skip: unmet('ovn-sandbox') || unmet('openstack-cli'), timeout: 600_000 }, async (t) => {
  const started = Date.now();
  const lab: OvnLab = await startOvnLab();
  const dir = mkdtempSync(join(tmpdir(), 'ostia-ovn-e2e-'));
  const configFile = join(dir, 'ostia.json');
  // Ours, so that stopping Ostia keeps it for the restart (startOstia removes only its own).
  const dataDir = join(dir, 'data');
  let lbId = '';
  let vip = '';
  let vipPortId = '';
  let ready = false;
  let tcpPoolId = '';
  const tcpMemberIds: Record<string, string> = {};
  let ostia: OstiaProcess | undefined;
  let cli!: OpenstackCli;
  let token!: Promise<string>;
  const clis: OpenstackCli[] = [];
  const startOstiaOnLab = async () => {
    ostia = await startOstia({ extraArgs: ['--config', configFile], dataDir });
    cli = new OpenstackCli(ostia.cloudsYaml, { concurrency: 2 });
    clis.push(cli);
    token = ostia.token(CLOUD);
  };
  const show = (args: string[]) => cli.json<Obj>(CLOUD, args);
  /** Polls go straight to the API (a CLI call costs ~1 s of Python start-up, its --wait 3 s sleeps); the CLI makes every change and the final reads. */
  const apiGet = async (path: string): Promise<Obj> => {
    const res = await fetch(`${ostia!.url}/v2/lbaas/${path}`, { headers: { 'x-auth-token': await token } });
    const body = await res.text();
    assert.equal(res.status, 200, `GET ${path}: ${body}`);
    return JSON.parse(body) as Obj;
  };
  const lbStatus = async () => String(((await apiGet(`loadbalancers/${lbId}`)).loadbalancer as Obj).provisioning_status);
  /** Until the load balancer is ACTIVE; ERROR fails at once, with Ostia's log. */
  const waitActive = (timeoutMs = 60_000) =>
    until('load balancer ACTIVE', async () => {
      const status = await lbStatus();
      if (status === 'ERROR') assert.fail(`load balancer ${lbId} went to ERROR\n--- ostia log ---\n${ostia?.logTail()}`);
      return status;
    }, (s) => s === 'ACTIVE', timeoutMs, 100);
  /** Until the API reports `want` as a TCP member's operating status, then what the CLI shows. */
  const waitMemberStatus = async (member: string, want: string) => {
    const read = async () => String(((await apiGet(`pools/${tcpPoolId}/members/${tcpMemberIds[member]}`)).member as Obj).operating_status);
    await until(`member ${member} ${want}`, read, (s) => s === want, STATUS_TIMEOUT_MS);
    return String((await show(['loadbalancer', 'member', 'show', 'tcp-pool', member])).operating_status);
  };
  /** Until the TCP row's `neutron:member_status` (upstream's record, rewritten by the health role) says `want` for `member`. */
  const waitRecordedStatus = async (member: string, want: string) => {
    const read = async () => {
      const [row] = await nbRows(lab.sb, 'Load_Balancer', ['external_ids'], `name=${lbId}`, 'protocol=tcp');
      return (JSON.parse((row?.external_ids as Record<string, string> | undefined)?.['neutron:member_status'] ?? '{}') as Record<string, string>)[tcpMemberIds[member]!];
    };
    return until(`neutron:member_status of ${member} ${want}`, read, (s) => s === want, STATUS_TIMEOUT_MS);
  };
  const statusTree = async () => JSON.parse((await cli.ok(CLOUD, ['loadbalancer', 'status', 'show', lbId])).stdout) as Obj;
  const lbRows = () => nbRows(lab.sb, 'Load_Balancer', LB_COLUMNS, `name=${lbId}`);
  const rowOf = (rows: NbRow[], protocol: string) => rows.find((r) => r.protocol === protocol);
  /** Names of the switches and routers whose `load_balancer` holds row `uuid`. */
  const holdersOf = async (uuid: unknown) => {
    const holders = [...(await nbRows(lab.sb, 'Logical_Switch', ['name', 'load_balancer'])), ...(await nbRows(lab.sb, 'Logical_Router', ['name', 'load_balancer']))];
    return holders.filter((h) => asSet(h.load_balancer).includes(uuid)).map((h) => String(h.name)).sort();
  };
  /** A create through the CLI, then the load balancer ACTIVE again. */
  const create = async (args: string[]) => {
    const made = await show(args);
    await waitActive();
    return made;
  };

  try {
    writeFileSync(configFile, JSON.stringify(lab.config));
    mkdirSync(dataDir);
    await startOstiaOnLab();
    t.diagnostic(`lab and ostia up in ${Date.now() - started} ms`);

    await t.test('an OVN load balancer with TCP and UDP listeners, created with the CLI, is ready for traffic', async () => {
      const lb = await show(['loadbalancer', 'create', '--name', 'ovn-web', '--provider', 'ovn', '--vip-subnet-id', PUBLIC_SUBNET]);
      lbId = String(lb.id);
      vip = String(lb.vip_address);
      vipPortId = String(lb.vip_port_id);
      assert.equal(lb.provider, 'ovn');
      await waitActive();
      for (const [proto, vipPort, poolName, memberPort] of [['TCP', TCP_VIP_PORT, 'tcp-pool', HTTP_PORT], ['UDP', UDP_VIP_PORT, 'udp-pool', UDP_PORT]] as const) {
        const listener = `${proto.toLowerCase()}-${vipPort}`;
        await create(['loadbalancer', 'listener', 'create', lbId, '--name', listener, '--protocol', proto, '--protocol-port', String(vipPort)]);
        const pool = await create(['loadbalancer', 'pool', 'create', '--listener', listener, '--name', poolName, '--protocol', proto, '--lb-algorithm', 'SOURCE_IP_PORT']);
        if (proto === 'TCP') {
          tcpPoolId = String(pool.id);
          await create(['loadbalancer', 'healthmonitor', 'create', poolName, '--name', 'tcp-check', '--type', 'TCP', '--delay', String(MONITOR.delay), '--timeout', String(MONITOR.timeout),
            '--max-retries', String(MONITOR.maxRetries), '--max-retries-down', String(MONITOR.maxRetriesDown)]);
        }
        for (const [name, address] of Object.entries(BACKENDS)) {
          const member = await create(['loadbalancer', 'member', 'create', poolName, '--name', name, '--subnet-id', PRIVATE_SUBNET, '--address', address, '--protocol-port', String(memberPort)]);
          if (proto === 'TCP') tcpMemberIds[name] = String(member.id);
        }
      }
      assert.equal(String((await show(['loadbalancer', 'show', lbId])).provisioning_status), 'ACTIVE');

      // What the cascade delete must remove is there now.
      const rows = await lbRows();
      assert.deepEqual(rows.map((r) => r.protocol).sort(), ['tcp', 'udp']);
      assert.deepEqual(backendsOf(vipsOf(rowOf(rows, 'tcp')!)[`${vip}:${TCP_VIP_PORT}`]), at(BACKEND_IPS, HTTP_PORT));
      assert.deepEqual(backendsOf(vipsOf(rowOf(rows, 'udp')!)[`${vip}:${UDP_VIP_PORT}`]), at(BACKEND_IPS, UDP_PORT));
      assert.equal((await nbRows(lab.sb, 'Load_Balancer_Health_Check', ['vip'])).length, 1);
      assert.equal((await nbRows(lab.sb, 'Logical_Switch_Port', ['name'], `name=${vipPortId}`)).length, 1);
      assert.equal((await nbRows(lab.sb, 'Logical_Switch_Port', ['name'], `name=ovn-lb-hm-${PRIVATE_SUBNET}`)).length, 1);

      // Readiness gate (reference §B.6 item 5): monitors online, flows balancing to both, on the chassis.
      for (const ip of BACKEND_IPS) await waitMonitor(lab.sb, ip, HTTP_PORT, 'online');
      await waitBackends(lab.sb, HTTP_PORT, BACKEND_IPS);
      await waitBackends(lab.sb, UDP_PORT, BACKEND_IPS);
      ready = true;
      t.diagnostic(`load balancer ${lbId} (VIP ${vip}) ready ${Date.now() - started} ms after start`);
    });
    const skip = () => !ready && 'no load balancer';

    await t.test('TCP and UDP through the VIP reach both backends', { skip: skip() }, async () => {
      const tcp = tally(await lab.sb.httpGets(CLIENT.name, `http://${vip}:${TCP_VIP_PORT}/`, 24));
      assert.deepEqual(Object.keys(tcp).sort(), ['be1', 'be2'], JSON.stringify(tcp));
      const udp = tally(await lab.sb.udpAsks(CLIENT.name, vip, UDP_VIP_PORT, 24));
      assert.deepEqual(Object.keys(udp).sort(), ['be1', 'be2'], JSON.stringify(udp));
    });

    if (ready) {
      await lab.sb.stopServer(lab.servers.get('be1')!);
      try {
        await t.test('a stopped backend gets no traffic', async () => {
          await waitMonitor(lab.sb, BACKENDS.be1, HTTP_PORT, 'offline');
          await waitBackends(lab.sb, HTTP_PORT, [BACKENDS.be2]);
          assert.deepEqual(tally(await lab.sb.httpGets(CLIENT.name, `http://${vip}:${TCP_VIP_PORT}/`, 12)), { be2: 12 });
        });
        await t.test('a stopped backend is an ERROR member of a DEGRADED pool', async () => {
          assert.equal(await waitMemberStatus('be1', 'ERROR'), 'ERROR');
          assert.equal(await waitMemberStatus('be2', 'ONLINE'), 'ONLINE');
          const pool = poolStatus(await statusTree(), 'tcp-pool');
          assert.equal(pool.operating_status, 'DEGRADED', JSON.stringify(pool));
          assert.equal(await waitRecordedStatus('be1', 'ERROR'), 'ERROR');
        });
      } finally {
        lab.servers.set('be1', await lab.sb.serveHttp('be1', BACKENDS.be1, HTTP_PORT));
      }
      await t.test('the restarted backend gets traffic again', async () => {
        await waitMonitor(lab.sb, BACKENDS.be1, HTTP_PORT, 'online');
        await waitBackends(lab.sb, HTTP_PORT, BACKEND_IPS);
        const seen = tally(await lab.sb.httpGets(CLIENT.name, `http://${vip}:${TCP_VIP_PORT}/`, 24));
        assert.deepEqual(Object.keys(seen).sort(), ['be1', 'be2'], JSON.stringify(seen));
      });
      await t.test('the restarted backend is an ONLINE member again', async () => {
        assert.equal(await waitMemberStatus('be1', 'ONLINE'), 'ONLINE');
        assert.equal(await waitRecordedStatus('be1', 'ONLINE'), 'ONLINE');
        const pool = poolStatus(await statusTree(), 'tcp-pool');
        assert.equal(pool.operating_status, 'ONLINE', JSON.stringify(pool));
      });
    }

    await t.test('an Ostia restart rewrites a row deleted behind its back and removes a stray row it owns', { skip: skip() }, async () => {
      await ostia!.stop();
      const before = rowOf(await lbRows(), 'udp');
      assert.ok(before, 'no udp Load_Balancer row to delete');
      await lab.sb.nbctl('lb-del', String(before._uuid));
      const stray = randomUUID();
      await lab.sb.nbctl('create', 'Load_Balancer', `name=${stray}`, 'protocol=tcp', `vips:"10.0.0.99:81"="${BACKENDS.be1}:${HTTP_PORT}"`, 'external_ids:"ostia:owner"=ostia');
      const strayRows = () => nbRows(lab.sb, 'Load_Balancer', ['name'], `name=${stray}`);
      assert.equal((await strayRows()).length, 1);
      assert.equal(rowOf(await lbRows(), 'udp'), undefined);

      await startOstiaOnLab();
      const after = await until('udp row back, stray row gone', async () => ({ udp: rowOf(await lbRows(), 'udp'), stray: (await strayRows()).length }), (s) => !!s.udp && s.stray === 0, 30_000);
      assert.equal(after.udp!.name, lbId);
      assert.deepEqual(vipsOf(after.udp!), vipsOf(before));
      assert.equal((await nbRows(lab.sb, 'Load_Balancer_Health_Check', ['vip'])).length, 1, 'the health check is neither lost nor doubled');
      // Rewritten with its attachments (as the untouched TCP row has them): UDP flows to both backends again.
      const tcpHolders = await holdersOf(rowOf(await lbRows(), 'tcp')?._uuid);
      assert.deepEqual(tcpHolders, [PRIVATE_LS, PUBLIC_LS, ROUTER].sort());
      assert.deepEqual(await holdersOf(after.udp!._uuid), tcpHolders);
      await waitBackends(lab.sb, UDP_PORT, BACKEND_IPS);
      const udp = tally(await lab.sb.udpAsks(CLIENT.name, vip, UDP_VIP_PORT, 24));
      assert.deepEqual(Object.keys(udp).sort(), ['be1', 'be2'], JSON.stringify(udp));
      assert.equal(await lbStatus(), 'ACTIVE');
    });

    await t.test('a change made while the Northbound database is down reaches it after its restart', { skip: skip() }, async () => {
      // The sandbox restarts NB in one call; stopping it through its control socket first leaves a window for the change.
      const nbSocket = lab.sb.nbRemote.replace(/^unix:/, '');
      await run('ovs-appctl', ['-t', join(lab.sb.runDir, 'nb.ctl'), 'exit'], { timeout: 10_000 });
      await until('NB socket gone', async () => existsSync(nbSocket), (present) => !present, 10_000, 50);

      await cli.ok(CLOUD, ['loadbalancer', 'member', 'set', 'tcp-pool', 'be1', '--disable']);
      // Nothing can be written while NB is down: the change waits, it is neither applied nor failed.
      assert.equal(String((await show(['loadbalancer', 'show', lbId])).provisioning_status), 'PENDING_UPDATE');

      await lab.sb.restartNb();
      const restarted = Date.now();
      await waitActive();
      t.diagnostic(`ACTIVE ${Date.now() - restarted} ms after NB was back`);
      const tcp = rowOf(await lbRows(), 'tcp');
      assert.deepEqual(backendsOf(vipsOf(tcp!)[`${vip}:${TCP_VIP_PORT}`]), at([BACKENDS.be2], HTTP_PORT));
      assert.equal((await show(['loadbalancer', 'member', 'show', 'tcp-pool', 'be1'])).admin_state_up, false);
      assert.equal((await nbRows(lab.sb, 'Load_Balancer_Health_Check', ['vip'])).length, 1, 'the health check is neither lost nor doubled');
      await waitBackends(lab.sb, HTTP_PORT, [BACKENDS.be2]);
      assert.deepEqual(tally(await lab.sb.httpGets(CLIENT.name, `http://${vip}:${TCP_VIP_PORT}/`, 12)), { be2: 12 });
    });

    await t.test('delete --cascade removes every row Ostia wrote', { skip: skip() }, async () => {
      await cli.ok(CLOUD, ['loadbalancer', 'delete', '--cascade', '--wait', lbId]);
      assert.deepEqual(await lbRows(), []);
      assert.deepEqual(await nbRows(lab.sb, 'Load_Balancer', ['name']), []);
      assert.deepEqual(await nbRows(lab.sb, 'Load_Balancer_Health_Check', ['_uuid']), []);
      assert.deepEqual(await nbRows(lab.sb, 'Logical_Switch_Port', ['name'], `name=${vipPortId}`), []);
      const ports = await nbRows(lab.sb, 'Logical_Switch_Port', ['name', 'external_ids']);
      assert.deepEqual(ports.filter((p) => String(p.name).startsWith('ovn-lb-hm-')), []);
      assert.deepEqual(ports.filter((p) => (p.external_ids as Obj)['ostia:owner'] !== undefined), []);
      for (const table of ['Logical_Switch', 'Logical_Router']) {
        const holders = await nbRows(lab.sb, table, ['name', 'load_balancer']);
        assert.deepEqual(holders.filter((h) => asSet(h.load_balancer).length), [], `${table} rows still hold load balancers`);
      }
    });
  } finally {
    const calls = clis.flatMap((c) => c.calls);
    t.diagnostic(`${calls.length} CLI calls taking ${calls.reduce((sum, c) => sum + c.ms, 0)} ms; ${Date.now() - started} ms in all`);
    await ostia?.stop();
    await lab.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

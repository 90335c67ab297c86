/**
 * The OVN sandbox end to end: a real OVN carrying TCP and UDP to a Load_Balancer VIP written the
 * way ovn-octavia-provider writes it, health checks flipping Service_Monitor rows, an NB restart
 * that keeps the rows, and a teardown that leaves nothing behind.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { startOvnSandbox, type Server } from './support/ovn-sandbox.js';
import { unmet } from './support/requirements.js';
import { monitorStatus, waitBackends, waitMonitor } from './support/ovn-readiness.js';
import { tally } from './support/ovn-lab.js';

const run = promisify(execFile);
const VIP = '10.0.0.100';
const BACKENDS = { be1: '10.0.0.11', be2: '10.0.0.12' } as const;

/** PIDs of live processes whose command line mentions `text` (the run dir is in every daemon's). */
function processesMentioning(text: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text) && !processGone(Number(entry))) found.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

function processGone(pid: number): boolean {
  const stat = `/proc/${pid}/stat`;
  if (!existsSync(stat)) return true;
  try {
    return readFileSync(stat, 'utf8').split(') ')[1]?.startsWith('Z') ?? true;
  } catch {
    return true;
  }
}

test('a real single-node OVN balances, health-checks and restarts', { skip: unmet('ovn-sandbox'), timeout: 240_000 }, async (t) => {
  const started = Date.now();
  const sb = await startOvnSandbox();
  t.diagnostic(`bring-up ${Date.now() - started} ms (prefix ${sb.prefix}, run dir ${sb.runDir})`);
  let closed = false;
  try {
    await t.test('the chassis is registered and the NB answers on unix and TCP', async () => {
      assert.match(await sb.sbctl('--bare', '--columns=name', 'list', 'Chassis'), new RegExp(`^${sb.chassis}$`));
      assert.match(sb.nbRemote, /^unix:\//);
      assert.match(sb.nbTcp, /^tcp:127\.0\.0\.1:\d+$/);
      const { stdout } = await run('ovn-nbctl', [`--db=${sb.nbTcp}`, '--timeout=10', 'ls-add', 'ls-probe']);
      assert.equal(stdout.trim(), '');
      assert.equal(await sb.nbctl('--bare', '--columns=name', 'list', 'Logical_Switch'), 'ls-probe');
      await sb.nbctl('ls-del', 'ls-probe');
    });

    const servers: Partial<Record<string, Server>> = {};
    let ready = false;
    const lbName = randomUUID();
    await t.test('demo topology and provider-shaped Load_Balancer rows', async () => {
      await sb.nbctl('ls-add', 'ls-back', '--', 'ls-add', 'ls-client', '--', 'lr-add', 'lr0');
      for (const [ls, lrp, mac, net] of [['ls-back', 'lrp-back', '0a:00:00:00:01:01', '10.0.0.1/24'], ['ls-client', 'lrp-client', '0a:00:00:00:02:01', '192.168.1.1/24']] as const) {
        const lsp = `${ls}-lr0`;
        await sb.nbctl('lrp-add', 'lr0', lrp, mac, net, '--', 'lsp-add', ls, lsp, '--', 'lsp-set-type', lsp, 'router',
          '--', 'lsp-set-addresses', lsp, 'router', '--', 'lsp-set-options', lsp, `router-port=${lrp}`);
      }
      await sb.addHost('be1', 'ls-back', '0a:00:00:00:00:11', `${BACKENDS.be1}/24`, '10.0.0.1');
      await sb.addHost('be2', 'ls-back', '0a:00:00:00:00:12', `${BACKENDS.be2}/24`, '10.0.0.1');
      await sb.addHost('cl1', 'ls-client', '0a:00:00:00:00:10', '192.168.1.10/24', '192.168.1.1');
      for (const [name, ip] of Object.entries(BACKENDS)) {
        servers[name] = await sb.serveHttp(name, ip, 8080);
        servers[`${name}-udp`] = await sb.serveUdp(name, ip, 5353);
      }
      // One row per L4 protocol, both named after the Octavia load balancer (ovn-octavia-provider).
      const common = [`name=${lbName}`, `external_ids:"neutron:vip"=${VIP}`, 'external_ids:enabled=True', 'selection_fields=ip_dst,ip_src,tp_dst,tp_src'];
      const tcp = await sb.nbctl('create', 'Load_Balancer', ...common, 'protocol=tcp',
        `vips:"${VIP}:80"="${BACKENDS.be1}:8080,${BACKENDS.be2}:8080"`,
        `ip_port_mappings:${BACKENDS.be1}=lsp-be1:10.0.0.2`, `ip_port_mappings:${BACKENDS.be2}=lsp-be2:10.0.0.2`);
      const udp = await sb.nbctl('create', 'Load_Balancer', ...common, 'protocol=udp',
        `vips:"${VIP}:53"="${BACKENDS.be1}:5353,${BACKENDS.be2}:5353"`);
      for (const lb of [tcp, udp]) await sb.nbctl('lr-lb-add', 'lr0', lb, '--', 'ls-lb-add', 'ls-back', lb, '--', 'ls-lb-add', 'ls-client', lb);
      await sb.nbctl('--', '--id=@hc', 'create', 'Load_Balancer_Health_Check', `vip="${VIP}:80"`,
        'options:interval=2', 'options:timeout=1', 'options:success_count=1', 'options:failure_count=2',
        `external_ids:"octavia:vip"=${VIP}`, `external_ids:"octavia:pool_id"=${randomUUID()}`,
        '--', 'add', 'Load_Balancer', tcp, 'health_check', '@hc');
      const protocols = await sb.nbctl('--bare', '--columns=protocol', 'find', 'Load_Balancer', `name=${lbName}`);
      assert.deepEqual(protocols.split(/\s+/).sort(), ['tcp', 'udp']);
      // Readiness gate (reference B.6 item 5): both monitors online, then flows on the chassis.
      for (const ip of Object.values(BACKENDS)) await waitMonitor(sb, ip, 8080, 'online');
      await waitBackends(sb, 8080, Object.values(BACKENDS));
      await sb.httpGets('cl1', `http://${VIP}/`, 1, 5_000); // warm-up, not counted
      ready = true;
      t.diagnostic(`topology + load balancer ready ${Date.now() - started} ms after start`);
    });

    await t.test('TCP to the VIP reaches both backends', { skip: !ready && 'no topology' }, async () => {
      const answers = await sb.httpGets('cl1', `http://${VIP}/`, 24);
      const seen = tally(answers);
      assert.deepEqual(Object.keys(seen).sort(), ['be1', 'be2'], JSON.stringify(seen));
    });

    await t.test('UDP to the VIP reaches both backends', { skip: !ready && 'no topology' }, async () => {
      const answers = await sb.udpAsks('cl1', VIP, 53, 24);
      const seen = tally(answers);
      assert.deepEqual(Object.keys(seen).sort(), ['be1', 'be2'], JSON.stringify(seen));
    });

    await t.test('a stopped backend goes offline and gets no traffic, and comes back', { skip: !ready && 'no topology' }, async () => {
      await sb.stopServer(servers.be1!);
      await waitMonitor(sb, BACKENDS.be1, 8080, 'offline');
      await waitBackends(sb, 8080, [BACKENDS.be2]);
      assert.equal(await monitorStatus(sb, BACKENDS.be2, 8080), 'online');
      assert.deepEqual(tally(await sb.httpGets('cl1', `http://${VIP}/`, 12)), { be2: 12 });

      servers.be1 = await sb.serveHttp('be1', BACKENDS.be1, 8080);
      await waitMonitor(sb, BACKENDS.be1, 8080, 'online');
      await waitBackends(sb, 8080, [BACKENDS.be1, BACKENDS.be2]);
      const seen = tally(await sb.httpGets('cl1', `http://${VIP}/`, 24));
      assert.deepEqual(Object.keys(seen).sort(), ['be1', 'be2'], JSON.stringify(seen));
    });

    await t.test('restartNb keeps the rows and the stack reconnects', { skip: !ready && 'no topology' }, async () => {
      const rows = () => sb.nbctl('--bare', '--columns=_uuid,name,protocol,vips,health_check,ip_port_mappings', 'list', 'Load_Balancer');
      const before = await rows();
      await sb.restartNb();
      assert.equal(await rows(), before);
      const { stdout } = await run('ovn-nbctl', [`--db=${sb.nbTcp}`, '--timeout=10', '--bare', '--columns=name', 'find', 'Load_Balancer', 'protocol=udp']);
      assert.equal(stdout.trim(), lbName);
      // northd and ovn-controller follow: a change made after the restart reaches the chassis.
      await sb.nbctl('--wait=hv', 'sync');
      const answers = await sb.httpGets('cl1', `http://${VIP}/`, 4);
      assert.ok(answers.every((a) => a === 'be1' || a === 'be2'), JSON.stringify(answers));
    });

    await t.test('close leaves no process, namespace or run dir', async () => {
      const pids = sb.pids();
      const namespaces = sb.namespaces();
      assert.ok(pids.length >= 6 + 4, `expected daemons and servers, got ${pids.length} pids`);
      assert.ok(namespaces.includes(`${sb.prefix}-hv`) && namespaces.length === 4, namespaces.join(','));
      closed = true;
      await sb.close();
      assert.deepEqual(pids.filter((p) => !processGone(p)), []);
      const left = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }).split('\n').filter((l) => l.startsWith(`${sb.prefix}-`));
      assert.deepEqual(left, []);
      assert.equal(existsSync(sb.runDir), false);
      assert.deepEqual(processesMentioning(sb.runDir), []);
    });
  } finally {
    if (!closed) await sb.close();
  }
});

test('a failed start names the daemon, shows its output and leaves nothing behind', { skip: unmet('ovn-sandbox'), timeout: 60_000 }, async () => {
  const prefix = `ovtf${randomUUID().slice(0, 6)}`;
  // ovn-controller 23.03 rejects --unixctl (reference B.6 item 4): a daemon that dies mid-start.
  const err = await startOvnSandbox({ prefix, daemonArgs: { 'ovn-controller': ['--unixctl=/nonexistent'] } }).then(
    () => assert.fail('start succeeded'),
    (e: Error) => e,
  );
  assert.match(err.message, /ovn-controller died before registered as SB Chassis/);
  assert.match(err.message, /unrecognized option/);
  const runDir = /-- log (\/\S+)\/ovn-controller\.log/.exec(err.message)?.[1];
  assert.ok(runDir, err.message);
  assert.equal(existsSync(runDir), false);
  assert.deepEqual(processesMentioning(runDir), []);
  const left = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }).split('\n').filter((l) => l.startsWith(`${prefix}-`));
  assert.deepEqual(left, []);
});

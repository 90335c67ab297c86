/**
 * `ostia doctor` against a real `ostia up` with compute.driver netns and network.driver bridge (root): the
 * healthy service is all ok and its boot test leaves no namespace behind; then each failure of the operators'
 * guides is injected for real, as routes and nftables rules, and must be named: the management subnet not
 * routed to the controller, a filter dropping heartbeats out of the amphora, a filter on the management
 * bridge dropping the agent port, and a firewall on this machine between the control plane and the amphorae.
 * SQLite pass only: a bridge Ostia costs a fabric per run, and the database reads are the ones
 * test/doctor.test.ts runs on both.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CHECK_FAILED_EXIT, type DoctorReport } from '../src/cli/doctor.js';
import { amphoraNamespace, netnsExists } from '../src/linux-net/ip.js';
import { eventually } from './support/amphora-fixtures.js';
import { startBridgeOstia, type BridgeOstia } from './support/bridge-ostia.js';
import { runOstiaWithin } from './support/ostia-process.js';
import { unmet } from './support/requirements.js';

const sqliteOnly = process.env.OSTIA_TEST_DATABASE_URL ? 'SQLite pass only (the database reads run on both passes in test/doctor.test.ts)' : false;

/** A doctor run on a loaded machine: a Node start, the probes, and with --boot-test an amphora booted and removed. */
const DOCTOR_TIMEOUT_MS = 120_000;

describe('ostia doctor against amphorae in namespaces on a management bridge', { skip: sqliteOnly || unmet('namespaces') || unmet('openstack-cli') || unmet('haproxy'), concurrency: 1 }, () => {
  let lab: BridgeOstia;
  let amphora: { id: string; address: string; netns: string };
  let config: { amphora: { agentPort: number; healthListen: string; managementNetwork: { cidr: string } } };

  const configFile = () => join(lab.ostia.dataDir, 'ostia.json');
  const doctor = async (...args: string[]) => {
    const r = await runOstiaWithin(DOCTOR_TIMEOUT_MS, 'doctor', '--data-dir', lab.ostia.dataDir, '--config', configFile(), '--json', ...args);
    assert.ok(r.code === 0 || r.code === CHECK_FAILED_EXIT, `exit ${r.code}: ${r.stderr}`);
    return { code: r.code, report: JSON.parse(r.stdout) as DoctorReport };
  };
  const rowOf = (report: DoctorReport, check: string) => report.checks.filter((c) => c.check === check && c.target.includes(amphora.id));
  const nft = (netns: string | null, script: string) => execFileSync(netns ? 'ip' : 'nft', netns ? ['netns', 'exec', netns, 'nft', '-f', '-'] : ['-f', '-'], { input: script });

  before(async () => {
    // A long heartbeat timeout: the injected failures must not make the health manager fail the amphora over meanwhile.
    lab = await startBridgeOstia({ amphora: { heartbeatTimeoutMs: 120_000 } });
    config = JSON.parse(readFileSync(configFile(), 'utf8')) as typeof config;
    const lb = await lab.cli.json<{ id: string }>('ostia-demo', ['loadbalancer', 'create', '--name', 'doctored', '--vip-subnet-id', 'public-subnet', '--wait']);
    const [amp] = await lab.cli.json<Array<{ id: string; lb_network_ip: string }>>('ostia', ['loadbalancer', 'amphora', 'list', '--loadbalancer', lb.id]);
    amphora = { id: amp!.id, address: amp!.lb_network_ip, netns: amphoraNamespace(lab.net.fabric, amp!.id) };
  });
  after(async () => {
    await lab?.close();
  });

  it('finds the healthy service all ok, and its boot test leaves no namespace behind', { timeout: 240_000 }, async () => {
    await eventually(async () => (await doctor()).report.failed === 0, 'a doctor run with no failed check', 90_000, 500);
    const { code, report } = await doctor('--boot-test');
    assert.equal(code, 0, JSON.stringify(report.checks.filter((c) => c.result === 'FAIL')));
    for (const check of ['management route', 'agent port', 'agent TLS', 'agent API', 'heartbeat', 'firewall']) assert.deepEqual(rowOf(report, check).map((r) => r.result), ['ok'], check);
    assert.match(rowOf(report, 'management route')[0]!.detail, new RegExp(`routed through ${lab.net.fabric}, the controller's veth to the management bridge, from ${lab.net.controllerAddress.replace(/\./g, '\\.')}`));
    assert.match(rowOf(report, 'firewall')[0]!.detail, new RegExp(`this machine's namespace, the fabric namespace ${lab.net.fabric}, the amphora's namespace ${amphora.netns}`));
    const steps = report.checks.filter((c) => c.check.startsWith('boot: '));
    assert.deepEqual(steps.map((s) => s.result), ['ok', 'ok', 'ok', 'ok', 'ok'], JSON.stringify(steps));
    const id = /throw-away amphora (\S+)/.exec(steps[0]!.target)![1]!;
    assert.equal(netnsExists(amphoraNamespace(lab.net.fabric, id)), false);
  });

  it('names a management subnet not routed to the controller, with the route it expected', { timeout: 180_000 }, async () => {
    const cidr = config.amphora.managementNetwork.cidr;
    execFileSync('ip', ['route', 'del', cidr, 'dev', lab.net.fabric]);
    try {
      const { code, report } = await doctor('--timeout', '1');
      assert.equal(code, CHECK_FAILED_EXIT);
      const route = rowOf(report, 'management route')[0]!;
      assert.equal(route.result, 'FAIL');
      assert.match(route.detail, new RegExp(`^management network not routed to the controller: .* expected ${cidr.replace(/\./g, '\\.')} dev ${lab.net.fabric} src ${lab.net.controllerAddress.replace(/\./g, '\\.')}: check with 'ip route get ${amphora.address.replace(/\./g, '\\.')}'`));
    } finally {
      execFileSync('ip', ['route', 'replace', cidr, 'dev', lab.net.fabric, 'proto', 'kernel', 'scope', 'link', 'src', lab.net.controllerAddress]);
    }
  });

  it('names a filter in the amphora dropping heartbeats out, and the heartbeats falling behind', { timeout: 180_000 }, async () => {
    const port = config.amphora.healthListen.split(':')[1];
    nft(amphora.netns, `add table inet doctor_test\nadd chain inet doctor_test out { type filter hook output priority -10; }\nadd rule inet doctor_test out udp dport ${port} drop\n`);
    try {
      const report = (await eventually(async () => {
        const r = (await doctor()).report;
        return rowOf(r, 'heartbeat')[0]!.result !== 'ok' ? r : null;
      }, 'heartbeats falling behind', 90_000, 500))!;
      assert.match(rowOf(report, 'heartbeat')[0]!.detail, /heartbeats are being lost on the way/);
      const firewall = rowOf(report, 'firewall');
      assert.deepEqual(firewall.map((r) => r.result), ['FAIL']);
      assert.match(firewall[0]!.detail, new RegExp(`^amphora → health manager \\(heartbeats\\) \\(UDP .* to port ${port} \\(new\\)\\) is dropped in the amphora's namespace ${amphora.netns} by 'udp dport ${port} drop' \\(table inet doctor_test chain out handle \\d+\\): remove it with 'ip netns exec ${amphora.netns} nft delete rule inet doctor_test out handle \\d+'`));
    } finally {
      nft(amphora.netns, 'delete table inet doctor_test\n');
    }
  });

  it('names a filter on the management bridge dropping the agent port', { timeout: 180_000 }, async () => {
    const { agentPort } = config.amphora;
    nft(lab.net.fabric, `add table bridge doctor_test\nadd chain bridge doctor_test fw { type filter hook forward priority -10; }\nadd rule bridge doctor_test fw tcp dport ${agentPort} drop\n`);
    try {
      const { code, report } = await doctor('--timeout', '1');
      assert.equal(code, CHECK_FAILED_EXIT);
      assert.match(rowOf(report, 'agent port')[0]!.detail, /no answer to TCP .* dropped on the way/);
      const firewall = rowOf(report, 'firewall');
      assert.deepEqual(firewall.map((r) => r.result), ['FAIL']);
      assert.match(firewall[0]!.detail, new RegExp(`^controller → agent \\(TCP .* to port ${agentPort} \\(new\\)\\) is dropped in the fabric namespace ${lab.net.fabric} by 'tcp dport ${agentPort} drop'`));
    } finally {
      nft(lab.net.fabric, 'delete table bridge doctor_test\n');
    }
  });

  it('names a firewall on this machine between the control plane and the amphorae', { timeout: 180_000 }, async () => {
    const cidr = config.amphora.managementNetwork.cidr;
    const table = `ostia_doctor_test_${process.pid}`;
    nft(null, `add table inet ${table}\nadd chain inet ${table} out { type filter hook output priority -10; }\nadd rule inet ${table} out ip daddr ${cidr} drop\n`);
    try {
      const { code, report } = await doctor('--timeout', '1');
      assert.equal(code, CHECK_FAILED_EXIT);
      assert.match(rowOf(report, 'agent port')[0]!.detail, /by a firewall between the control plane and the amphorae/);
      const firewall = rowOf(report, 'firewall');
      assert.ok(firewall.length >= 1 && firewall.every((r) => r.result === 'FAIL'), JSON.stringify(firewall));
      assert.match(firewall[0]!.detail, new RegExp(`^controller → agent .* is dropped in this machine's namespace by 'ip daddr ${cidr.replace(/\./g, '\\.')} drop' \\(table inet ${table} chain out handle \\d+\\)`));
    } finally {
      execFileSync('nft', ['delete', 'table', 'inet', table]);
    }
  });
});

/**
 * `ostia doctor` as an operator runs it, against a real `ostia up` whose amphorae are processes on loopback
 * (compute.driver local; root or not), on SQLite. The healthy
 * service is all ok; then each failure the local driver can really have is injected and must be named:
 * a firewall dropping the agent port (an nft rule on lo, root only), a stopped agent, a wrong CA, and no
 * address left to hand out (a two-address management pool). The boot test boots and removes an amphora.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHECK_FAILED_EXIT, type DoctorReport } from '../src/cli/doctor.js';
import { CertificateAuthority } from '../src/pki/ca.js';
import { writeAmphoraConfig, randomManagementNetwork } from './support/amphora-config.js';
import { OpenstackCli } from './support/openstack-cli.js';
import { killAll, processesUnder, runOstiaWithin, startOstia, type OstiaProcess } from './support/ostia-process.js';
import { unmet } from './support/requirements.js';
import { eventually } from './support/amphora-fixtures.js';
import { svgTexts } from './support/svg.js';
import { XMLValidator } from 'fast-xml-parser';

const nftRoot = process.getuid?.() === 0 && !unmet('namespaces') ? false : 'root is needed to add an nftables rule';

/** A doctor run on a loaded machine: a Node start, the probes, and with --boot-test an amphora booted and removed. */
const DOCTOR_TIMEOUT_MS = 120_000;

/** Its database reads on PostgreSQL are test/operator-tools-roles.test.ts's, beside the split roles: the probes here do not depend on the database. */
const sqliteOnly = process.env.OSTIA_TEST_DATABASE_URL ? 'SQLite pass only (the doctor on PostgreSQL: test/operator-tools-roles.test.ts)' : false;

describe('ostia doctor against a running service with loopback amphorae', { skip: sqliteOnly || unmet('openstack-cli') || unmet('haproxy'), concurrency: 1 }, () => {
  let ostia: OstiaProcess;
  let configDir: string;
  let configFile: string;
  let cli: OpenstackCli;
  let amphora: { id: string; address: string; pid: number };
  let agentPort: number;

  const target = () => ['--data-dir', ostia.dataDir, '--config', configFile];
  const doctor = async (...args: string[]) => {
    const r = await runOstiaWithin(DOCTOR_TIMEOUT_MS, 'doctor', ...target(), '--json', ...args);
    assert.ok(r.code === 0 || r.code === CHECK_FAILED_EXIT, `exit ${r.code}: ${r.stderr}`);
    return { code: r.code, report: JSON.parse(r.stdout) as DoctorReport };
  };
  const rowsOf = (report: DoctorReport, check: string) => report.checks.filter((c) => c.check === check);
  const failing = (report: DoctorReport) => report.checks.filter((c) => c.result === 'FAIL');

  before(async () => {
    configDir = mkdtempSync(join(tmpdir(), 'ostia-doctor-'));
    const mgmt = randomManagementNetwork();
    const start = mgmt.start.replace(/\.10$/, '.20');
    // Two addresses: the load balancer's amphora takes one, the boot test the other, a second load balancer the last.
    const network = { ...mgmt, start, end: start.replace(/\.20$/, '.21') };
    // A long timeout: the injected failures must not make the health manager fail the amphora over meanwhile.
    configFile = await writeAmphoraConfig(configDir, { amphora: { managementNetwork: network, heartbeatIntervalMs: 500, heartbeatTimeoutMs: 120_000 } });
    agentPort = (JSON.parse(readFileSync(configFile, 'utf8')) as { amphora: { agentPort: number } }).amphora.agentPort;
    ostia = await startOstia({ extraArgs: ['--config', configFile] });
    cli = new OpenstackCli(ostia.cloudsYaml, { concurrency: 2 });
    const lb = await cli.json<{ id: string }>('ostia-demo', ['loadbalancer', 'create', '--name', 'doctored', '--provider', 'amphora', '--vip-subnet-id', 'public-subnet', '--wait']);
    const [amp] = await cli.json<Array<{ id: string; lb_network_ip: string }>>('ostia', ['loadbalancer', 'amphora', 'list', '--loadbalancer', lb.id]);
    const pid = (JSON.parse(readFileSync(join(ostia.dataDir, 'amphorae', amp!.id, 'agent.pid'), 'utf8')) as { pid: number }).pid;
    amphora = { id: amp!.id, address: amp!.lb_network_ip, pid };
  });

  after(async () => {
    if (ostia) {
      killAll(processesUnder(join(ostia.dataDir, 'amphorae')));
      await ostia.stop();
    }
    if (configDir) rmSync(configDir, { recursive: true, force: true });
  });

  it('finds a healthy service all ok, and says so in a table and in JSON', { timeout: 240_000 }, async () => {
    // The first heartbeat may still be on its way right after the build.
    let last: DoctorReport | undefined;
    const { code, report } = await eventually<{ code: number | null; report: DoctorReport } | null>(async () => {
      const r = await doctor();
      last = r.report;
      return failing(r.report).length ? null : r;
    }, 'a doctor run with no failed check', 90_000, 500).catch((e: Error) => assert.fail(`${e.message}: ${JSON.stringify(failing(last!))}`)) as { code: number | null; report: DoctorReport };
    assert.equal(code, 0);
    const amphoraTarget = `amphora ${amphora.id} (${amphora.address})`;
    for (const check of ['management route', 'agent port', 'agent TLS', 'agent API', 'heartbeat', 'firewall', 'clock'])
      assert.deepEqual(rowsOf(report, check).filter((r) => r.target === amphoraTarget).map((r) => r.result), ['ok'], `${check}: ${JSON.stringify(rowsOf(report, check))}`);
    assert.match(rowsOf(report, 'heartbeat')[0]!.detail, /signed with the key the health manager derives/);
    assert.ok(rowsOf(report, 'certificate').length >= 3 && rowsOf(report, 'certificate').every((r) => r.result === 'ok'));
    assert.equal(rowsOf(report, 'health manager')[0]!.result, 'ok');
    const pool = rowsOf(report, 'address pool').find((r) => r.target.startsWith('management network'))!;
    assert.match(pool.detail, /^1 of 2 addresses/);
    assert.equal(report.failed, 0);
    for (const r of report.checks) assert.ok(r.detail.length > 20 && /[.]$/.test(r.detail), `one explaining sentence: ${JSON.stringify(r)}`);
    const text = await runOstiaWithin(DOCTOR_TIMEOUT_MS, 'doctor', ...target());
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^CHECK\s+TARGET\s+RESULT\s+MS\s+DETAIL/);
    assert.match(text.stdout, /0 failed, \d+ warnings, \d+ ok\./);
  });

  it('boots a throw-away amphora with the configured drivers, times each step, and leaves nothing behind', { timeout: 240_000 }, async () => {
    const picture = join(configDir, 'doctor.svg');
    const { code, report } = await doctor('--boot-test', '--picture', picture);
    const steps = report.checks.filter((c) => c.check.startsWith('boot: '));
    const svg = readFileSync(picture, 'utf8');
    assert.equal(XMLValidator.validate(svg), true);
    const drawn = svgTexts(svg);
    for (const c of report.checks.filter((x) => x.ms !== null)) assert.ok(drawn.includes(String(c.ms)), `${c.check} ${c.ms} ms drawn`);
    assert.deepEqual(steps.map((s) => [s.check, s.result]), [['boot: address', 'ok'], ['boot: boot', 'ok'], ['boot: agent ready', 'ok'], ['boot: first heartbeat', 'ok'], ['boot: remove', 'ok']], JSON.stringify(steps));
    assert.ok(steps.every((s) => typeof s.ms === 'number' && s.ms >= 0));
    assert.equal(code, 0);
    const listed = await cli.json<Array<{ id: string }>>('ostia', ['loadbalancer', 'amphora', 'list']);
    assert.deepEqual(listed.map((a) => a.id), [amphora.id], 'only the load balancer\'s amphora is left');
    const id = /throw-away amphora (\S+)/.exec(steps[0]!.target)![1]!;
    assert.deepEqual(processesUnder(join(ostia.dataDir, 'amphorae', id)), []);
  });

  it('names a firewall dropping the agent port on loopback: the rule, where, and how to remove it', { skip: nftRoot, timeout: 180_000 }, async () => {
    const table = `ostia_doctor_test_${process.pid}`;
    execFileSync('nft', ['-f', '-'], { input: `add table inet ${table}\nadd chain inet ${table} out { type filter hook output priority -10; }\nadd rule inet ${table} out ip daddr ${amphora.address} tcp dport ${agentPort} drop\n` });
    try {
      const { code, report } = await doctor('--timeout', '1');
      assert.equal(code, CHECK_FAILED_EXIT);
      assert.match(rowsOf(report, 'agent port')[0]!.detail, /no answer to TCP .* dropped on the way, by a firewall between the control plane and the amphorae/);
      const firewall = rowsOf(report, 'firewall').filter((r) => r.result === 'FAIL');
      assert.equal(firewall.length, 1, JSON.stringify(firewall));
      assert.match(firewall[0]!.detail, new RegExp(`^controller → agent \\(TCP .* to port ${agentPort} \\(new\\)\\) is dropped in this machine's namespace by 'ip daddr ${amphora.address.replace(/\./g, '\\.')} tcp dport ${agentPort} drop' \\(table inet ${table} chain out handle \\d+\\): remove it with 'nft delete rule inet ${table} out handle \\d+'`));
    } finally {
      execFileSync('nft', ['delete', 'table', 'inet', table]);
    }
  });

  it('names a stopped agent: TCP connects, the TLS handshake never comes', { timeout: 180_000 }, async () => {
    process.kill(amphora.pid, 'SIGSTOP');
    try {
      const { code, report } = await doctor('--timeout', '1');
      assert.equal(code, CHECK_FAILED_EXIT);
      assert.equal(rowsOf(report, 'agent port')[0]!.result, 'ok');
      const tls = rowsOf(report, 'agent TLS')[0]!;
      assert.equal(tls.result, 'FAIL');
      assert.match(tls.detail, /TCP connects but no TLS handshake within 1000 ms: the agent accepts connections and does not answer \(a stopped or hung process\)/);
    } finally {
      process.kill(amphora.pid, 'SIGCONT');
    }
  });

  it('names a wrong CA: the agent\'s certificate does not chain to the server CA the data directory holds', { timeout: 180_000 }, async () => {
    const pki = join(ostia.dataDir, 'pki');
    const saved = mkdtempSync(join(tmpdir(), 'ostia-doctor-pki-'));
    cpSync(pki, saved, { recursive: true });
    const other = mkdtempSync(join(tmpdir(), 'ostia-doctor-other-ca-'));
    try {
      await CertificateAuthority.open(other);
      cpSync(join(other, 'server-ca.pem'), join(pki, 'server-ca.pem'));
      const { code, report } = await doctor();
      assert.equal(code, CHECK_FAILED_EXIT);
      const tls = rowsOf(report, 'agent TLS')[0]!;
      assert.equal(tls.result, 'FAIL');
      assert.match(tls.detail, /^wrong CA: the agent's certificate does not chain to the server CA .*server-ca\.pem/);
    } finally {
      cpSync(saved, pki, { recursive: true });
      rmSync(saved, { recursive: true, force: true });
      rmSync(other, { recursive: true, force: true });
    }
  });

  it('names no address handed out: the pool check and the boot test, which still removes what it made', { timeout: 180_000 }, async () => {
    const second = await cli.json<{ id: string }>('ostia-demo', ['loadbalancer', 'create', '--name', 'fills-the-pool', '--provider', 'amphora', '--vip-subnet-id', 'public-subnet', '--wait']);
    try {
      const { code, report } = await doctor('--boot-test');
      assert.equal(code, CHECK_FAILED_EXIT);
      const pool = rowsOf(report, 'address pool').find((r) => r.target.startsWith('management network'))!;
      assert.equal(pool.result, 'FAIL');
      assert.match(pool.detail, /^no address handed out: all 2 addresses of .* are taken/);
      const steps = report.checks.filter((c) => c.check.startsWith('boot: '));
      assert.deepEqual(steps.map((s) => [s.check, s.result]), [['boot: address', 'FAIL'], ['boot: remove', 'ok']]);
      assert.match(steps[0]!.detail, /no free management address/);
    } finally {
      await cli.ok('ostia-demo', ['loadbalancer', 'delete', '--wait', second.id]);
    }
  });
});

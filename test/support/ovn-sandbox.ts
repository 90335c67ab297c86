/**
 * A real single-node OVN for tests: NB and SB ovsdb-server, ovn-northd, Open vSwitch with the
 * userspace `netdev` datapath inside its own network namespace, ovn-controller, and hosts as
 * network namespaces on veth pairs plugged into br-int as logical switch ports.
 *
 * The kernel has no openvswitch module here, hence the userspace datapath (see
 * ../shared/reference/ovn.md Part B). Daemons run in the foreground as children of this process
 * (no --detach): their exit is observed and reaped, and close() can wait for it.
 * Everything is bounded in time; close() also runs after a failed start.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createConnection, type NetConnectOpts } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OVN_SCHEMAS, onPath, unmet } from './requirements.js';

const { nb: NB_SCHEMA, sb: SB_SCHEMA, vswitch: VSWITCH_SCHEMA } = OVN_SCHEMAS;
const CHASSIS = 'chassis-1';
/** Upper bound for one CLI call; the ctl tools also get --timeout so they fail first, with a message. */
const CLI_TIMEOUT_MS = 20_000;
const START_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 3_000;
/** Linux IFNAMSIZ - 1. */
const MAX_IFNAME = 15;

export interface ExecResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface Server {
  readonly host: string;
  readonly proto: 'tcp' | 'udp';
  readonly ip: string;
  readonly port: number;
  readonly pid: number;
}

export interface OvnSandbox {
  /** `unix:<path>` of the Northbound database. */
  readonly nbRemote: string;
  /** `tcp:127.0.0.1:<port>` of the Northbound database. */
  readonly nbTcp: string;
  /** `unix:<path>` of the Southbound database. */
  readonly sbRemote: string;
  /** `tcp:127.0.0.1:<port>` of the Southbound database. */
  readonly sbTcp: string;
  readonly runDir: string;
  /** Network namespace names all start with this (`<prefix>-hv`, `<prefix>-<host>`). */
  readonly prefix: string;
  /** The chassis' system-id (SB Chassis name). */
  readonly chassis: string;
  /** ovn-nbctl against this sandbox; resolves stdout (trimmed), rejects with stderr. */
  nbctl(...args: string[]): Promise<string>;
  sbctl(...args: string[]): Promise<string>;
  vsctl(...args: string[]): Promise<string>;
  /** A host namespace `<prefix>-<name>` with eth0 = `mac ipCidr`, plugged as LSP `lsp-<name>` on `ls`. */
  addHost(name: string, ls: string, mac: string, ipCidr: string, gateway: string): Promise<void>;
  /** Runs `cmd args` inside a host's namespace; never rejects for a non-zero exit. */
  exec(host: string, cmd: string, args: string[], timeoutMs?: number): Promise<ExecResult>;
  /** An HTTP server in `host` on ip:port answering every GET with `<host>\n`; resolves once it listens. */
  serveHttp(host: string, ip: string, port: number): Promise<Server>;
  /** A UDP server in `host` on ip:port answering every datagram with `<host>`. */
  serveUdp(host: string, ip: string, port: number): Promise<Server>;
  /** A TCP server in `host` answering each line with `<host> <line>` on connections that stay open. */
  serveEcho(host: string, ip: string, port: number): Promise<Server>;
  stopServer(server: Server): Promise<void>;
  /** `count` HTTP GETs from `host`, each on a new connection; one entry per request: the body or `FAIL:<reason>`. */
  httpGets(host: string, url: string, count: number, timeoutMs?: number): Promise<string[]>;
  /** `count` UDP requests from `host`, each from a new socket (new source port): the answer or `FAIL:<reason>`. */
  udpAsks(host: string, ip: string, port: number, count: number, timeoutMs?: number): Promise<string[]>;
  /** Stops the NB ovsdb-server and starts it again on the same database file and remotes. */
  restartNb(): Promise<void>;
  /** PIDs of every process this sandbox started that may still be running. */
  pids(): number[];
  /** Namespaces this sandbox created and has not deleted yet. */
  namespaces(): string[];
  /** Kills every process, deletes every namespace, removes the run dir. Idempotent. */
  close(): Promise<void>;
}

interface Proc {
  name: string;
  child: ChildProcess;
  exited: Promise<void>;
  exit: { code: number | null; signal: NodeJS.Signals | null } | null;
  output: string;
  logFile: string | null;
}

function canConnect(to: { path: string } | { host: string; port: number }): Promise<boolean> {
  return new Promise((resolve) => {
    const c = createConnection(to as NetConnectOpts);
    const done = (ok: boolean) => { c.destroy(); resolve(ok); };
    c.setTimeout(1_000, () => done(false));
    c.once('connect', () => done(true));
    c.once('error', () => done(false));
  });
}

/** True when `p` settles within `ms`; the timer does not outlive the race (no event-loop hold). */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((r) => { timer = setTimeout(() => r(false), ms); });
  try {
    return await Promise.race([p.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function tail(text: string, lines = 20): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

function fileTail(path: string | null): string {
  if (path === null || !existsSync(path)) return '(no log file)';
  try {
    return tail(readFileSync(path, 'utf8'));
  } catch {
    return '(log unreadable)';
  }
}

/** Both servers answer their host's name; started as `node -e` in the host's namespace and print `ready` once bound. */
const HTTP_SERVER = `
const [name, ip, port] = process.argv.slice(1);
const s = require('node:http').createServer((q, r) => { r.setHeader('connection', 'close'); r.end(name + '\\n'); });
s.listen(Number(port), ip, () => process.stdout.write('ready\\n'));
process.on('SIGTERM', () => process.exit(0));`;
/** Answers each line with `name line` on connections that stay open: what a move's established connections talk to. */
const ECHO_SERVER = `
const [name, ip, port] = process.argv.slice(1);
const s = require('node:net').createServer((c) => { c.setEncoding('utf8'); let b = ''; c.on('data', (d) => { b += d; let i; while ((i = b.indexOf('\\n')) >= 0) { c.write(name + ' ' + b.slice(0, i) + '\\n'); b = b.slice(i + 1); } }); c.on('error', () => {}); });
s.listen(Number(port), ip, () => process.stdout.write('ready\\n'));
process.on('SIGTERM', () => process.exit(0));`;
const UDP_SERVER = `
const [name, ip, port] = process.argv.slice(1);
const s = require('node:dgram').createSocket(ip.includes(':') ? 'udp6' : 'udp4');
s.on('message', (m, from) => s.send(name, from.port, from.address));
s.bind(Number(port), ip, () => process.stdout.write('ready\\n'));
process.on('SIGTERM', () => process.exit(0));`;
const HTTP_CLIENT = `
const [url, count, timeout] = process.argv.slice(1);
const http = require('node:http');
const one = () => new Promise((res) => {
  const q = http.get(url, { agent: false, timeout: Number(timeout) }, (r) => {
    let b = ''; r.setEncoding('utf8'); r.on('data', (c) => b += c); r.on('end', () => res(b.trim()));
  });
  q.on('timeout', () => { q.destroy(); res('FAIL:timeout'); });
  q.on('error', (e) => res('FAIL:' + e.code));
});
(async () => { const out = []; for (let i = 0; i < Number(count); i++) out.push(await one()); console.log(JSON.stringify(out)); })();`;
const UDP_CLIENT = `
const [ip, port, count, timeout] = process.argv.slice(1);
const dgram = require('node:dgram');
const one = () => new Promise((res) => {
  const s = dgram.createSocket(ip.includes(':') ? 'udp6' : 'udp4');
  const done = (v) => { clearTimeout(t); s.close(); res(v); };
  const t = setTimeout(() => done('FAIL:timeout'), Number(timeout));
  s.on('message', (m) => done(m.toString()));
  s.on('error', (e) => done('FAIL:' + e.code));
  s.send('who', Number(port), ip);
});
(async () => { const out = []; for (let i = 0; i < Number(count); i++) out.push(await one()); console.log(JSON.stringify(out)); })();`;

/** Disables TX checksum offload of eth0 via the legacy ETHTOOL_STXCSUM ioctl, for hosts without ethtool. */
const PY_TX_OFF = `
import ctypes, fcntl, socket, struct, sys
s = socket.socket()
def ethtool(cmd, data):
    v = ctypes.create_string_buffer(struct.pack('II', cmd, data))
    fcntl.ioctl(s.fileno(), 0x8946, struct.pack('16sP', sys.argv[1].encode(), ctypes.addressof(v)))
    return struct.unpack('II', v.raw[:8])[1]
ethtool(0x17, 0)
sys.exit('tx checksumming still on' if ethtool(0x16, 0) else 0)`;

class Sandbox implements OvnSandbox {
  readonly nbRemote: string;
  readonly sbRemote: string;
  nbTcp = '';
  sbTcp = '';
  readonly chassis = CHASSIS;
  private readonly procs = new Map<string, Proc>();
  private readonly servers = new Map<number, Proc>();
  private readonly netns: string[] = [];
  private readonly env: NodeJS.ProcessEnv;
  private readonly hv: string;
  private nbPort = 0;
  private closed = false;
  private readonly onExit = () => this.killAllSync();

  constructor(readonly runDir: string, readonly prefix: string, private readonly daemonArgs: DaemonArgs = {}) {
    this.nbRemote = `unix:${join(runDir, 'nb.sock')}`;
    this.sbRemote = `unix:${join(runDir, 'sb.sock')}`;
    this.hv = `${prefix}-hv`;
    this.env = {
      ...process.env,
      OVS_RUNDIR: runDir, OVS_LOGDIR: runDir, OVS_DBDIR: runDir,
      OVN_RUNDIR: runDir, OVN_LOGDIR: runDir, OVN_DBDIR: runDir,
      OVN_NB_DB: this.nbRemote, OVN_SB_DB: this.sbRemote,
    };
    process.once('exit', this.onExit);
  }

  // ---- processes -------------------------------------------------------------------------

  private run(cmd: string, args: string[], timeoutMs = CLI_TIMEOUT_MS): Promise<ExecResult> {
    return new Promise((resolve) => {
      execFile(cmd, args, { env: this.env, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : null) : 0;
        const why = err && code === null ? `${stderr}\n(${err.message})` : stderr;
        resolve({ code, stdout: String(stdout), stderr: String(why) });
      });
    });
  }

  private async must(cmd: string, args: string[], timeoutMs?: number): Promise<string> {
    const r = await this.run(cmd, args, timeoutMs);
    if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (exit ${r.code}): ${tail(r.stderr || r.stdout, 10)}`);
    return r.stdout.trim();
  }

  nbctl(...args: string[]): Promise<string> {
    return this.must('ovn-nbctl', [`--db=${this.nbRemote}`, '--timeout=15', ...args]);
  }

  sbctl(...args: string[]): Promise<string> {
    return this.must('ovn-sbctl', [`--db=${this.sbRemote}`, '--timeout=15', ...args]);
  }

  vsctl(...args: string[]): Promise<string> {
    return this.must('ovs-vsctl', [`--db=unix:${join(this.runDir, 'db.sock')}`, '--timeout=15', ...args]);
  }

  private spawnDaemon(name: string, cmd: string, args: string[], logFile: string | null, table = this.procs): Proc {
    const binary = (cmd === 'ip' ? args[3] : cmd) as keyof DaemonArgs;
    if (table === this.procs) args = [...args, ...(this.daemonArgs[binary] ?? [])];
    const child = spawn(cmd, args, { env: this.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const p: Proc = { name, child, exit: null, output: '', logFile, exited: Promise.resolve() };
    const keep = (b: Buffer) => { p.output = (p.output + b.toString()).slice(-8192); };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    p.exited = new Promise((resolve) => {
      child.once('error', (e) => { p.output += `\n${e.message}`; p.exit ??= { code: null, signal: null }; resolve(); });
      child.once('exit', (code, signal) => { p.exit = { code, signal }; resolve(); });
    });
    table.set(name, p);
    return p;
  }

  private failure(p: Proc, what: string): Error {
    const exit = p.exit ? ` (exited: code ${p.exit.code}, signal ${p.exit.signal})` : '';
    return new Error(`OVN sandbox: ${p.name} ${what}${exit}\n-- output:\n${tail(p.output) || '(none)'}\n-- log ${p.logFile ?? ''}:\n${fileTail(p.logFile)}`);
  }

  /** Polls `ready` until it returns a value, failing early with the daemon's output when it dies. */
  private async waitFor<T>(p: Proc, what: string, ready: () => T | undefined | Promise<T | undefined>, timeoutMs = START_TIMEOUT_MS): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (p.exit) throw this.failure(p, `died before ${what}`);
      const v = await ready();
      if (v !== undefined) return v;
      if (Date.now() > deadline) throw this.failure(p, `not ${what} within ${timeoutMs} ms`);
      await sleep(50);
    }
  }

  private async stop(p: Proc): Promise<void> {
    if (p.exit) return;
    p.child.kill('SIGTERM');
    if (!(await settlesWithin(p.exited, STOP_TIMEOUT_MS))) {
      p.child.kill('SIGKILL');
      await settlesWithin(p.exited, STOP_TIMEOUT_MS);
    }
  }

  private killAllSync(): void {
    for (const p of [...this.servers.values(), ...this.procs.values()]) if (!p.exit) p.child.kill('SIGKILL');
  }

  // ---- bring-up ----------------------------------------------------------------------------

  private async startDb(which: 'nb' | 'sb', port: number): Promise<number> {
    const sock = join(this.runDir, `${which}.sock`);
    const log = join(this.runDir, `ovsdb-server-${which}.log`);
    // Only what this run appends to the log counts (restartNb reuses the file).
    const from = existsSync(log) ? statSync(log).size : 0;
    const p = this.spawnDaemon(`ovsdb-server (${which.toUpperCase()})`, 'ovsdb-server', [
      join(this.runDir, `${which}.db`), `--remote=punix:${sock}`, `--remote=ptcp:${port}:127.0.0.1`,
      `--unixctl=${join(this.runDir, `${which}.ctl`)}`, `--log-file=${log}`, '-vconsole:err',
    ], log);
    // ptcp:0 lets the kernel pick a free port (no race with other tests); the log names it.
    // A fixed port (restartNb) logs nothing: then connecting to it is the sign.
    const bound = await this.waitFor(p, 'listening', async () => {
      if (!(await canConnect({ path: sock }))) return undefined;
      if (port !== 0) return (await canConnect({ host: '127.0.0.1', port })) ? port : undefined;
      const m = /: listening on port (\d+)/.exec(readFileSync(log).subarray(from).toString());
      return m ? Number(m[1]) : undefined;
    });
    return bound;
  }

  async start(): Promise<void> {
    const dir = this.runDir;
    await this.must('ovsdb-tool', ['create', join(dir, 'nb.db'), NB_SCHEMA]);
    await this.must('ovsdb-tool', ['create', join(dir, 'sb.db'), SB_SCHEMA]);
    this.nbPort = await this.startDb('nb', 0);
    this.nbTcp = `tcp:127.0.0.1:${this.nbPort}`;
    this.sbTcp = `tcp:127.0.0.1:${await this.startDb('sb', 0)}`;
    await this.nbctl('--no-wait', 'init');
    await this.sbctl('init');
    const northdLog = join(dir, 'ovn-northd.log');
    const northd = this.spawnDaemon('ovn-northd', 'ovn-northd', [
      `--ovnnb-db=${this.nbRemote}`, `--ovnsb-db=${this.sbRemote}`, `--log-file=${northdLog}`, '-vconsole:err',
    ], northdLog);
    await this.guard(northd, 'syncing NB to SB', () => this.nbctl('--wait=sb', 'sync'));

    // The chassis: OVS with the userspace datapath inside its own namespace.
    await this.addNetns(this.hv);
    await this.must('ovsdb-tool', ['create', join(dir, 'conf.db'), VSWITCH_SCHEMA]);
    const ovsLog = join(dir, 'ovsdb-server.log');
    const ovsdb = this.spawnDaemon('ovsdb-server (Open_vSwitch)', 'ovsdb-server', [
      join(dir, 'conf.db'), `--remote=punix:${join(dir, 'db.sock')}`, `--unixctl=${join(dir, 'ovsdb-server.ctl')}`,
      `--log-file=${ovsLog}`, '-vconsole:err',
    ], ovsLog);
    await this.waitFor(ovsdb, 'listening', () => (existsSync(join(dir, 'db.sock')) ? true : undefined));
    await this.vsctl('--no-wait', 'init');
    await this.vsctl('--no-wait', 'set', 'Open_vSwitch', '.', `external_ids:system-id=${CHASSIS}`,
      `external_ids:ovn-remote=${this.sbRemote}`, 'external_ids:ovn-encap-type=geneve',
      'external_ids:ovn-encap-ip=127.0.0.1', 'external_ids:ovn-bridge-datapath-type=netdev');
    const vswitchdLog = join(dir, 'ovs-vswitchd.log');
    const vswitchd = this.spawnDaemon('ovs-vswitchd', 'ip', [
      'netns', 'exec', this.hv, 'ovs-vswitchd', `unix:${join(dir, 'db.sock')}`,
      `--unixctl=${join(dir, 'ovs-vswitchd.ctl')}`, `--log-file=${vswitchdLog}`, '-vconsole:err',
    ], vswitchdLog);
    // Without --no-wait, ovs-vsctl waits until ovs-vswitchd has applied the bridge.
    await this.guard(vswitchd, 'creating br-int', () => this.vsctl('add-br', 'br-int', '--', 'set', 'Bridge', 'br-int',
      'datapath_type=netdev', 'fail-mode=secure', 'other-config:disable-in-band=true'));
    const controllerLog = join(dir, 'ovn-controller.log');
    const controller = this.spawnDaemon('ovn-controller', 'ip', [
      'netns', 'exec', this.hv, 'ovn-controller', `unix:${join(dir, 'db.sock')}`, `--log-file=${controllerLog}`, '-vconsole:err',
    ], controllerLog);
    await this.waitFor(controller, 'registered as SB Chassis', async () => {
      const names = await this.sbctl('--bare', '--columns=name', 'list', 'Chassis').catch(() => '');
      return names.split(/\s+/).includes(CHASSIS) ? true : undefined;
    });
    await this.guard(controller, 'catching up with NB (--wait=hv)', () => this.nbctl('--wait=hv', 'sync'));
  }

  /** Runs a step that depends on one daemon; if it fails, the error names that daemon with its log. */
  private async guard(p: Proc, what: string, step: () => Promise<unknown>): Promise<void> {
    try {
      await step();
    } catch (e) {
      const err = this.failure(p, `failed ${what}: ${(e as Error).message}`);
      throw err;
    }
  }

  async restartNb(): Promise<void> {
    const nb = this.procs.get('ovsdb-server (NB)');
    if (nb) await this.stop(nb);
    await this.startDb('nb', this.nbPort);
  }

  // ---- hosts and servers -------------------------------------------------------------------

  private async addNetns(ns: string): Promise<void> {
    await this.must('ip', ['netns', 'add', ns]);
    this.netns.push(ns);
    await this.must('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
  }

  private ns(host: string): string {
    return `${this.prefix}-${host}`;
  }

  async addHost(name: string, ls: string, mac: string, ipCidr: string, gateway: string): Promise<void> {
    if (name.length > MAX_IFNAME || !/^[A-Za-z0-9_-]+$/.test(name)) throw new Error(`host name ${name}: 1-${MAX_IFNAME} of [A-Za-z0-9_-] (it names the veth)`);
    const ip = ipCidr.split('/')[0]!;
    const ns = this.ns(name);
    await this.nbctl('lsp-add', ls, `lsp-${name}`, '--', 'lsp-set-addresses', `lsp-${name}`, `${mac} ${ip}`);
    await this.addNetns(ns);
    await this.must('ip', ['link', 'add', name, 'netns', this.hv, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
    await this.must('ip', ['-n', ns, 'link', 'set', 'eth0', 'address', mac]);
    const v6 = ip.includes(':');
    await this.must('ip', ['-n', ns, ...(v6 ? ['-6'] : []), 'addr', 'add', ipCidr, 'dev', 'eth0', ...(v6 ? ['nodad'] : [])]);
    await this.must('ip', ['-n', ns, 'link', 'set', 'eth0', 'up']);
    await this.must('ip', ['-n', ns, ...(v6 ? ['-6'] : []), 'route', 'add', 'default', 'via', gateway]);
    // The userspace datapath forwards partial-checksum packets as-is: with TX offload on, ICMP
    // passes but every TCP connection times out. The kernel must fill L4 checksums itself.
    if (onPath('ethtool')) await this.must('ip', ['netns', 'exec', ns, 'ethtool', '-K', 'eth0', 'tx', 'off']);
    else await this.must('ip', ['netns', 'exec', ns, 'python3', '-c', PY_TX_OFF, 'eth0']);
    await this.must('ip', ['-n', this.hv, 'link', 'set', name, 'up']);
    await this.vsctl('add-port', 'br-int', name, '--', 'set', 'Interface', name, `external_ids:iface-id=lsp-${name}`);
  }

  exec(host: string, cmd: string, args: string[], timeoutMs = CLI_TIMEOUT_MS): Promise<ExecResult> {
    return this.run('ip', ['netns', 'exec', this.ns(host), cmd, ...args], timeoutMs);
  }

  private async serve(proto: 'tcp' | 'udp', host: string, ip: string, port: number, script = proto === 'tcp' ? HTTP_SERVER : UDP_SERVER): Promise<Server> {
    const key = `${proto} server ${host} ${ip}:${port}`;
    const p = this.spawnDaemon(key, 'ip', ['netns', 'exec', this.ns(host), process.execPath, '-e', script, host, ip, String(port)], null, new Map());
    const pid = p.child.pid;
    if (pid === undefined) {
      await p.exited;
      throw this.failure(p, 'did not start');
    }
    this.servers.set(pid, p);
    await this.waitFor(p, 'listening', () => (p.output.includes('ready\n') ? true : undefined), 10_000);
    return { host, proto, ip, port, pid };
  }

  serveHttp(host: string, ip: string, port: number): Promise<Server> {
    return this.serve('tcp', host, ip, port);
  }

  serveUdp(host: string, ip: string, port: number): Promise<Server> {
    return this.serve('udp', host, ip, port);
  }

  serveEcho(host: string, ip: string, port: number): Promise<Server> {
    return this.serve('tcp', host, ip, port, ECHO_SERVER);
  }

  async stopServer(server: Server): Promise<void> {
    const p = this.servers.get(server.pid);
    if (!p) return;
    await this.stop(p);
    this.servers.delete(server.pid);
  }

  private async clientRun(host: string, script: string, args: string[], budgetMs: number): Promise<string[]> {
    const r = await this.exec(host, process.execPath, ['-e', script, ...args], budgetMs);
    if (r.code !== 0) throw new Error(`client in ${host} failed (exit ${r.code}): ${tail(r.stderr, 10)}`);
    return JSON.parse(r.stdout) as string[];
  }

  httpGets(host: string, url: string, count: number, timeoutMs = 3_000): Promise<string[]> {
    return this.clientRun(host, HTTP_CLIENT, [url, String(count), String(timeoutMs)], count * timeoutMs + 10_000);
  }

  udpAsks(host: string, ip: string, port: number, count: number, timeoutMs = 2_000): Promise<string[]> {
    return this.clientRun(host, UDP_CLIENT, [ip, String(port), String(count), String(timeoutMs)], count * timeoutMs + 10_000);
  }

  // ---- teardown ----------------------------------------------------------------------------

  pids(): number[] {
    return [...this.servers.values(), ...this.procs.values()]
      .filter((p) => !p.exit && p.child.pid !== undefined)
      .map((p) => p.child.pid!);
  }

  namespaces(): string[] {
    return [...this.netns];
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.servers.values()].map((p) => this.stop(p)));
    this.servers.clear();
    // Chassis first, so that ovn-controller does not log its databases vanishing.
    for (const name of ['ovn-controller', 'ovs-vswitchd', 'ovsdb-server (Open_vSwitch)', 'ovn-northd', 'ovsdb-server (SB)', 'ovsdb-server (NB)']) {
      const p = this.procs.get(name);
      if (p) await this.stop(p);
    }
    await Promise.all([...this.procs.values()].map((p) => this.stop(p)));
    const leftovers: string[] = [];
    for (const ns of this.netns.splice(0).reverse()) {
      const r = await this.run('ip', ['netns', 'del', ns], 10_000);
      if (r.code !== 0) leftovers.push(`${ns}: ${r.stderr.trim()}`);
    }
    rmSync(this.runDir, { recursive: true, force: true });
    process.removeListener('exit', this.onExit);
    const alive = this.pids();
    if (leftovers.length > 0 || alive.length > 0) {
      throw new Error(`OVN sandbox close left ${leftovers.length ? `namespaces [${leftovers.join('; ')}]` : ''} ${alive.length ? `processes ${alive.join(',')}` : ''}`);
    }
  }
}

/** Extra command-line arguments per daemon, e.g. `{ 'ovn-controller': ['-vfile:dbg'] }`. */
export type DaemonArgs = Partial<Record<'ovsdb-server' | 'ovn-northd' | 'ovs-vswitchd' | 'ovn-controller', string[]>>;

export interface OvnSandboxOptions {
  /** Namespace name prefix; default `ovt` + 6 random hex digits. Must be unused. */
  prefix?: string;
  daemonArgs?: DaemonArgs;
}

/** Brings a whole single-node OVN up; on any failure everything started so far is torn down. */
export async function startOvnSandbox(opts: OvnSandboxOptions = {}): Promise<OvnSandbox> {
  const reason = unmet('ovn-sandbox');
  if (reason) throw new Error(`the OVN sandbox cannot run: ${reason}`);
  const prefix = opts.prefix ?? `ovt${randomBytes(3).toString('hex')}`;
  if (!/^[A-Za-z0-9_]{1,20}$/.test(prefix)) throw new Error(`netns prefix ${prefix}: 1-20 of [A-Za-z0-9_]`);
  const existing = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8', timeout: 5_000 })
    .split('\n').map((l) => l.split(' ')[0]!).filter((n) => n.startsWith(`${prefix}-`));
  if (existing.length > 0) throw new Error(`netns prefix ${prefix} already in use: ${existing.join(', ')}`);
  // Short path: unix socket paths are limited to ~107 bytes.
  const runDir = mkdtempSync(join(tmpdir(), 'ovt-'));
  const sb = new Sandbox(runDir, prefix, opts.daemonArgs);
  try {
    await sb.start();
    return sb;
  } catch (e) {
    await sb.close().catch(() => undefined);
    throw e;
  }
}

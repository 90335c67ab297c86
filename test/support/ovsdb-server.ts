/**
 * A real, private ovsdb-server for tests: fresh database files from the installed OVN schemas in
 * a temporary directory, listening on a unix socket, TCP on 127.0.0.1 and optionally SSL; it can
 * be stopped, restarted on the same files and ports, or frozen (SIGSTOP) to test probes.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const NB_SCHEMA = '/usr/share/ovn/ovn-nb.ovsschema';
export const SB_SCHEMA = '/usr/share/ovn/ovn-sb.ovsschema';

export interface TestServerOptions {
  /** Schema files, one database each; the Northbound schema when absent. */
  schemas?: string[];
  /** Also listen on pssl: with these PEM files. */
  ssl?: { keyFile: string; certFile: string; caFile: string };
}

export class TestOvsdbServer {
  private child: ChildProcess | undefined;
  private stderr = '';

  private constructor(
    readonly dir: string,
    readonly dbFiles: string[],
    readonly tcpPort: number,
    readonly sslPort: number | undefined,
    private readonly opts: TestServerOptions,
  ) {}

  get unixRemote(): string {
    return `unix:${join(this.dir, 'db.sock')}`;
  }
  get tcpRemote(): string {
    return `tcp:127.0.0.1:${this.tcpPort}`;
  }
  get sslRemote(): string {
    if (this.sslPort === undefined) throw new Error('started without ssl');
    return `ssl:127.0.0.1:${this.sslPort}`;
  }
  get pid(): number | undefined {
    return this.child?.pid;
  }

  static async start(opts: TestServerOptions = {}): Promise<TestOvsdbServer> {
    const dir = mkdtempSync(join(tmpdir(), 'ostia-ovsdb-'));
    const schemas = opts.schemas ?? [NB_SCHEMA];
    const dbFiles: string[] = [];
    for (const [i, schema] of schemas.entries()) {
      const db = join(dir, `db${i}.db`);
      await run('ovsdb-tool', ['create', db, schema]);
      dbFiles.push(db);
    }
    const tcpPort = await freePort();
    const sslPort = opts.ssl ? await freePort() : undefined;
    const s = new TestOvsdbServer(dir, dbFiles, tcpPort, sslPort, opts);
    try {
      await s.restart();
    } catch (e) {
      await s.close();
      throw e;
    }
    return s;
  }

  /** Starts the server again on the same files and ports (after stop()). */
  async restart(): Promise<void> {
    if (this.child) throw new Error('already running');
    const args = [
      ...this.dbFiles,
      `--remote=punix:${join(this.dir, 'db.sock')}`,
      `--remote=ptcp:${this.tcpPort}:127.0.0.1`,
      `--unixctl=${join(this.dir, 'ctl')}`,
      `--log-file=${join(this.dir, 'ovsdb-server.log')}`,
      '-vconsole:off',
    ];
    if (this.opts.ssl) {
      args.push(
        `--remote=pssl:${this.sslPort}:127.0.0.1`,
        `--private-key=${this.opts.ssl.keyFile}`,
        `--certificate=${this.opts.ssl.certFile}`,
        `--ca-cert=${this.opts.ssl.caFile}`,
      );
    }
    const child = spawn('ovsdb-server', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.stderr = '';
    child.stderr?.on('data', (c: Buffer) => (this.stderr += c.toString()));
    this.child = child;
    // Ready when every listener accepts; bounded (200 × 25 ms) so a broken start fails the test.
    for (let i = 0; i < 200; i++) {
      if (child.exitCode !== null) throw new Error(`ovsdb-server exited ${child.exitCode}: ${this.stderr}`);
      if (
        (await canConnect({ path: join(this.dir, 'db.sock') })) &&
        (await canConnect({ host: '127.0.0.1', port: this.tcpPort })) &&
        (this.sslPort === undefined || (await canConnect({ host: '127.0.0.1', port: this.sslPort })))
      ) {
        return;
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`ovsdb-server did not start listening: ${this.stderr}`);
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGCONT');
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await exited;
  }

  /** Freezes the process: connections stay open but nothing answers. */
  pause(): void {
    this.child?.kill('SIGSTOP');
  }
  resume(): void {
    this.child?.kill('SIGCONT');
  }

  /** ovn-nbctl against this server: a second, independent client and the tests' oracle. */
  async nbctl(...args: string[]): Promise<string> {
    const { stdout } = await run('ovn-nbctl', [`--db=${this.unixRemote}`, '--timeout=20', ...args]);
    return stdout;
  }

  async close(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A copy of a schema file with some columns removed, to test feature checks on older schemas. */
export function schemaWithout(dir: string, schemaFile: string, table: string, columns: string[], dropTables: string[] = []): string {
  const s = JSON.parse(readFileSync(schemaFile, 'utf8')) as { tables: Record<string, { columns: Record<string, unknown> }> };
  for (const c of columns) delete s.tables[table]?.columns[c];
  for (const t of dropTables) delete s.tables[t];
  const out = join(dir, `schema-without-${table}-${columns.join('-')}.ovsschema`);
  writeFileSync(out, JSON.stringify(s));
  return out;
}

function canConnect(target: { path: string } | { host: string; port: number }): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(target as net.NetConnectOpts);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Client of one HAProxy's stats socket (`level admin`): typed `show stat`, the server-state
 * dump, and member changes without a reload. HAProxy's CLI runs in non-interactive mode here,
 * one command per connection, answered, then closed by HAProxy, except for the heartbeat's
 * `show stat` (stats-session.ts).
 *
 * Member operations follow the sequences proven on this machine's HAProxy 2.6.12
 * (reference/dataplane.md §3): a dynamic server is added in maintenance and enabled with a
 * separate command, never with the `enabled` keyword (haproxy#2497 breaks the backend's
 * active-server count), and only a server in maintenance can be deleted.
 */
import { createConnection } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { StatsSession } from './stats-session.js';

/** How long a server's remaining connections may delay its deletion, and how often it is asked again. */
const DELETE_RETRY_MS = 1_000;
const DELETE_RETRY_PAUSE_MS = 20;

export type ProxyType = 'frontend' | 'backend' | 'server' | 'listener';

/** One row of `show stat`, the columns the agent reads, under HAProxy's own names. */
export interface StatRow {
  pxname: string;
  svname: string;
  type: ProxyType;
  /** Frontend OPEN/FULL/STOP; backend UP/DOWN; server UP, DOWN, MAINT, DRAIN, NOLB, `no check`, `UP 1/3`… */
  status: string;
  scur: number;
  slim: number | null;
  stot: number;
  bin: number;
  bout: number;
  ereq: number;
  econ: number;
  eresp: number;
  weight: number | null;
  act: number | null;
  bck: number | null;
  check_status: string;
  addr: string;
}

export type AdminState = 'ready' | 'maint' | 'drain';

/** HAProxy answered a command with something other than success. */
export class RuntimeCommandError extends Error {
  constructor(
    readonly command: string,
    readonly reply: string,
  ) {
    super(`haproxy refused '${command}': ${reply.trim() || '(no reply)'}`);
  }
}

const PROXY_TYPES: Record<string, ProxyType> = { '0': 'frontend', '1': 'backend', '2': 'server', '3': 'listener' };

/**
 * Words that reach the CLI come from rendered, validated configs; still, a newline or `;`
 * would start another command, so each word is checked where the command line is built.
 */
const SAFE_WORD = /^[A-Za-z0-9_.:\-/[\]%@+,=]+$/;

function word(value: string | number): string {
  const text = String(value);
  if (!SAFE_WORD.test(text)) throw new Error(`refusing to send ${JSON.stringify(text)} to the haproxy CLI`);
  return text;
}

export class HaproxyRuntime {
  private readonly stats: StatsSession;

  constructor(
    readonly socketPath: string,
    private readonly timeoutMs = 5000,
  ) {
    this.stats = new StatsSession(socketPath, timeoutMs);
  }

  /** After a reload or restart: the next `show stat` asks the worker serving now. */
  forgetSession(): void {
    this.stats.drop();
  }

  /** Sends one command, with a multi-line payload if given (`<command> <<`), and resolves with HAProxy's whole reply. */
  execute(command: string, payload?: string): Promise<string> {
    if (/[\r\n]/.test(command)) return Promise.reject(new Error('a haproxy CLI command is one line'));
    const text = payload === undefined ? `${command}\n` : `${command} <<\n${payload}\n\n`;
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      const socket = createConnection(this.socketPath);
      socket.setTimeout(this.timeoutMs, () => socket.destroy(new Error(`haproxy stats socket ${this.socketPath}: no reply to '${command}' within ${this.timeoutMs} ms`)));
      socket.on('connect', () => socket.end(text));
      socket.on('data', (chunk) => chunks.push(chunk));
      socket.on('error', reject);
      socket.on('close', (hadError) => {
        if (!hadError) resolve(Buffer.concat(chunks).toString('utf8'));
      });
    });
  }

  /** True once a worker answers on the socket. */
  async answers(): Promise<boolean> {
    try {
      return /^Pid: \d+/m.test(await this.execute('show info'));
    } catch {
      return false;
    }
  }

  async showInfo(): Promise<Record<string, string>> {
    const info: Record<string, string> = {};
    for (const line of (await this.execute('show info')).split('\n')) {
      const at = line.indexOf(': ');
      if (at > 0) info[line.slice(0, at)] = line.slice(at + 2);
    }
    return info;
  }

  async showStat(): Promise<StatRow[]> {
    return parseShowStat(await this.stats.run('show stat'));
  }

  /** The `show servers state` dump, in the format of HAProxy's server-state-file. */
  async showServersState(): Promise<string> {
    const dump = await this.execute('show servers state');
    if (!/^\d+\n#/.test(dump)) throw new RuntimeCommandError('show servers state', dump);
    return dump;
  }

  /**
   * Adds `backend/server` as a dynamic server with exactly `options` (a dynamic server does
   * not inherit `default-server`), starts its health checks if it has any, and lets it take
   * traffic only when `enable` is set.
   */
  async addServer(backend: string, server: string, address: string, options: readonly string[], enable: boolean): Promise<void> {
    const target = `${word(backend)}/${word(server)}`;
    if (options.includes('enabled')) throw new Error("the 'enabled' keyword breaks dynamic servers on HAProxy 2.6 (haproxy#2497)");
    await this.expect(['add server', target, word(address), ...options.map(word)].join(' '), /^New server registered\./);
    if (options.includes('check')) await this.expect(`enable health ${target}`);
    if (enable) await this.expect(`enable server ${target}`);
  }

  /** Takes the server out of rotation, then deletes it (HAProxy deletes only servers in maintenance). */
  /**
   * Disables, then deletes the server. HAProxy refuses the delete while client sessions still hold a
   * connection to it, which ends within moments under keep-alive traffic: the delete is retried for up to
   * DELETE_RETRY_MS before the refusal is reported (and the caller falls back to a reload).
   */
  async removeServer(backend: string, server: string): Promise<void> {
    const target = `${word(backend)}/${word(server)}`;
    await this.expect(`disable server ${target}`);
    const deadline = Date.now() + DELETE_RETRY_MS;
    for (;;) {
      const reply = (await this.execute(`del server ${target}`)).trim();
      if (/^Server deleted\./.test(reply)) return;
      if (!/still has connections attached/i.test(reply) || Date.now() >= deadline) throw new RuntimeCommandError(`del server ${target}`, reply);
      await sleep(DELETE_RETRY_PAUSE_MS);
    }
  }

  async setWeight(backend: string, server: string, weight: number): Promise<void> {
    if (!Number.isInteger(weight) || weight < 0 || weight > 256) throw new Error(`weight must be an integer from 0 to 256, got ${weight}`);
    await this.expect(`set weight ${word(backend)}/${word(server)} ${weight}`);
  }

  async setAdminState(backend: string, server: string, state: AdminState): Promise<void> {
    await this.expect(`set server ${word(backend)}/${word(server)} state ${state}`);
  }

  /**
   * Swaps a certificate, CA bundle or CRL file HAProxy has loaded, in memory and without a
   * reload (the file on disk is the caller's): a transaction (`set ssl <kind> <file>` with the
   * PEM as payload) then its commit, or its abort when the commit fails.
   */
  async updateSslFile(kind: 'cert' | 'ca-file' | 'crl-file', file: string, pem: string): Promise<void> {
    // The CLI reads a payload up to the first empty line.
    if (pem.trim() === '' || /\n\s*\n/.test(pem.trim())) throw new Error(`refusing to send ${file}: the PEM is empty or holds an empty line`);
    await this.expect(`set ssl ${kind} ${word(file)}`, /transaction created/i, pem.trim());
    try {
      await this.expect(`commit ssl ${kind} ${word(file)}`, /Success!$/);
    } catch (e) {
      await this.execute(`abort ssl ${kind} ${word(file)}`).catch(() => undefined);
      throw e;
    }
  }

  /**
   * Serves `file` (certificate and key, PEM) from `crtList`: created in HAProxy's store and added
   * to the list, or, when it was there already (`known`), swapped in place. A file HAProxy turns
   * out not to hold after all (an agent that stopped between writing the file and telling
   * HAProxy) is added.
   */
  async putCrtListCertificate(crtList: string, file: string, pem: string, known: boolean): Promise<void> {
    if (known) {
      try {
        return await this.updateSslFile('cert', file, pem);
      } catch (e) {
        if (!(e instanceof RuntimeCommandError && /not referenced|doesn't exist|does not exist/i.test(e.reply))) throw e;
      }
    }
    await this.expect(`new ssl cert ${word(file)}`, /New empty certificate store|already exists/i);
    await this.updateSslFile('cert', file, pem);
    await this.expect(`add ssl crt-list ${word(crtList)} ${word(file)}`, /Success!$/);
  }

  /** Stops serving `file` from `crtList` and drops it from HAProxy's store; one already gone is no error. */
  async removeCrtListCertificate(crtList: string, file: string): Promise<void> {
    await this.expect(`del ssl crt-list ${word(crtList)} ${word(file)}`, /deleted|does not exist|doesn't exist/i);
    await this.expect(`del ssl cert ${word(file)}`, /deleted|does not exist|doesn't exist/i);
  }

  /** Sets `key` to `value` in a map file HAProxy has loaded (in memory; the file is the caller's): replaced when present, added when not. */
  async setMapEntry(file: string, key: string, value: string): Promise<void> {
    const target = `${word(file)} ${word(key)}`;
    const reply = (await this.execute(`set map ${target} ${word(value)}`)).trim();
    if (reply === '') return;
    if (!/entry not found/i.test(reply)) throw new RuntimeCommandError(`set map ${target}`, reply);
    await this.expect(`add map ${target} ${word(value)}`);
  }

  /** Removes `key` from a loaded map file; a key already gone is no error. */
  async deleteMapEntry(file: string, key: string): Promise<void> {
    const target = `${word(file)} ${word(key)}`;
    const reply = (await this.execute(`del map ${target}`)).trim();
    if (reply !== '' && !/not found/i.test(reply)) throw new RuntimeCommandError(`del map ${target}`, reply);
  }

  /** Runs `command`; success is an empty reply, or one matching `success`. */
  private async expect(command: string, success?: RegExp, payload?: string): Promise<void> {
    const reply = await this.execute(command, payload);
    const ok = success ? success.test(reply.trim()) : reply.trim() === '';
    if (!ok) throw new RuntimeCommandError(command, reply);
  }
}

export function parseShowStat(csv: string): StatRow[] {
  const lines = csv.split('\n').filter((line) => line.length > 0);
  const header = lines.shift();
  if (!header?.startsWith('# ')) throw new RuntimeCommandError('show stat', csv.slice(0, 200));
  const columns = new Map(splitCsvLine(header.slice(2)).map((name, i) => [name, i]));
  return lines.map((line) => {
    const cells = splitCsvLine(line);
    const field = (name: string): string => cells[columns.get(name) ?? -1] ?? '';
    const count = (name: string): number => Number(field(name)) || 0;
    const optional = (name: string): number | null => (field(name) === '' ? null : Number(field(name)));
    return {
      pxname: field('pxname'),
      svname: field('svname'),
      type: PROXY_TYPES[field('type')] ?? 'server',
      status: field('status'),
      scur: count('scur'),
      slim: optional('slim'),
      stot: count('stot'),
      bin: count('bin'),
      bout: count('bout'),
      ereq: count('ereq'),
      econ: count('econ'),
      eresp: count('eresp'),
      weight: optional('weight'),
      act: optional('act'),
      bck: optional('bck'),
      check_status: field('check_status'),
      addr: field('addr'),
    };
  });
}

/** HAProxy quotes a CSV cell (with doubled inner quotes) when it holds a comma or a quote. */
function splitCsvLine(line: string): string[] {
  // Every heartbeat parses every row: the character walk is for the rare quoted line only.
  if (!line.includes('"')) return line.split(',');
  const cells: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      cells.push(cell);
      cell = '';
    } else cell += c;
  }
  cells.push(cell);
  return cells;
}

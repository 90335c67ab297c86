/**
 * From command-line flags to a validated Config, and the per-data-directory state the
 * serving roles keep there (the token secret, the SQLite file's folder).
 */
import { chmodSync, closeSync, existsSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { YAMLError } from 'yaml';
import { ConfigError, amphoraRootDir, ensureHeartbeatSecret, ensureKeyManagerKey, ensureTokenSecret, loadConfig, type Config } from '../config.js';
import type { Db } from '../db/database.js';
import { readBlock, withBlock } from './address-block.js';
import { CliError, usageError, type Command, type Input, type Option } from './command.js';

export const dataDirOption: Record<string, Option> = {
  'data-dir': { type: 'string', value: 'DIR', help: 'state directory: SQLite database, token secret, clouds.yaml (default .ostia, or OSTIA_DATA_DIR)' },
  config: { type: 'string', value: 'FILE', help: 'YAML or JSON config file merged over the defaults (or OSTIA_CONFIG)' },
};
export const listenOptions: Record<string, Option> = {
  host: { type: 'string', value: 'HOST', help: 'address to listen on (default 127.0.0.1)' },
  port: { type: 'string', value: 'PORT', help: 'port to listen on; 0 picks a free one (default 9876)' },
};
export const databaseOption: Record<string, Option> = {
  'database-url': { type: 'string', value: 'URL', help: 'postgres://user:pass@host/db or sqlite:PATH (or OSTIA_DATABASE_URL)' },
};

function portOf(command: Command, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65535) throw usageError(command, `--port must be an integer from 0 to 65535, got '${text}'`);
  return port;
}

/** Flags win over the config file, which wins over the defaults. */
export function configFromFlags(command: Command, input: Input): Config {
  const v = input.values as Record<string, string | undefined>;
  const overrides = {
    ...(v.host !== undefined || v.port !== undefined ? { api: { ...(v.host !== undefined && { host: v.host }), ...(v.port !== undefined && { port: portOf(command, v.port) }) } } : {}),
    ...(v['database-url'] !== undefined ? { database: { url: v['database-url'] } } : {}),
  };
  try {
    const config = loadConfig({ dataDir: v['data-dir'], file: v.config, overrides });
    const block = readBlock(config.dataDir);
    return block === null ? config : withBlock(config, block);
  } catch (e) {
    throw configFailure(e, v.config ?? process.env.OSTIA_CONFIG);
  }
}

function configFailure(e: unknown, file: string | undefined): unknown {
  const check = file ? `Fix ${file}, then check it with 'ostia config --config ${file}'.` : `Check the flags and OSTIA_* variables with 'ostia config'.`;
  if (e instanceof YAMLError) return new CliError(`cannot parse config file ${file}: ${e.message.split('\n')[0]!.replace(/[:.]$/, '')}`, check);
  if (!(e instanceof ConfigError)) return e;
  if (e.message.startsWith('cannot read')) return new CliError(e.message, 'Check the path given with --config or OSTIA_CONFIG.');
  // One line: "invalid configuration:\n  /a: x\n  /b: y" becomes "invalid configuration: /a: x; /b: y".
  const oneLine = e.message.replace(/:\n\s+/, ': ').replace(/\n\s+/g, '; ');
  return new CliError(`${oneLine}${file ? ` (config file ${file})` : ''}`, check);
}

/** The SQLite file a config points at, or null for a server database. */
export function sqlitePath(config: Config): string | null {
  const url = config.database.url;
  if (!url.startsWith('sqlite:')) return null;
  const path = url.replace(/^sqlite:(\/\/)?/, '');
  return path === '' || path === ':memory:' ? null : path;
}

/** The split roles coordinate through PostgreSQL (leases, LISTEN/NOTIFY); SQLite is one process's. */
export function requirePostgres(config: Config): void {
  if (/^postgres(ql)?:\/\//.test(config.database.url)) return;
  throw new CliError(
    `needs PostgreSQL, as it runs beside other Ostia processes, but the database is ${redactUrl(config.database.url)}`,
    "Pass --database-url postgres://USER:PASS@HOST/DB (or set OSTIA_DATABASE_URL), or use 'ostia up' for one process over SQLite.",
  );
}

/**
 * Creates the data directory owner-only (0700), a SQLite file's folder likewise when it creates
 * it, and the SQLite file 0600 before SQLite opens it (its -wal and -shm take the database file's
 * mode). Whatever is already in the data directory, and the SQLite files, open to group or others
 * is made owner-only; the returned lines say what was fixed, for the log. Anything owned by another user is refused: only its owner can fix it.
 * Except inside DATA_DIR/amphorae: there each amphora's directory is its own (under compute.driver netns,
 * owned by the amphora's uid, as the compute driver made it), and only the folder holding them is checked.
 */
export function prepareDataDir(config: Config): string[] {
  const fixed: string[] = [];
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  makePrivate(config.dataDir, fixed, resolve(amphoraRootDir(config)));
  const sqlite = sqlitePath(config);
  if (sqlite) {
    // Once: a database inside the data directory was just walked; one elsewhere is checked alone, not its folder's other files.
    const elsewhere = relative(resolve(config.dataDir), resolve(sqlite)).startsWith('..');
    if (elsewhere) mkdirSync(dirname(sqlite), { recursive: true, mode: 0o700 });
    closeSync(openSync(sqlite, 'a', 0o600));
    if (elsewhere) for (const file of [sqlite, `${sqlite}-wal`, `${sqlite}-shm`]) if (existsSync(file)) makePrivate(file, fixed);
  }
  return fixed;
}

/** Directories 0700 and files 0600 at most, through the whole tree under `path` but beneath `notBelow`. */
function makePrivate(path: string, fixed: string[], notBelow?: string): void {
  const stat = lstatSync(path);
  if (stat.isSymbolicLink()) return;
  if (typeof process.getuid === 'function' && stat.uid !== process.getuid())
    throw new CliError(
      `${path} belongs to user ${stat.uid}, not to this process's user ${process.getuid()}: Ostia keeps its data directory private and cannot make it so`,
      `Run Ostia as the owner of ${path}, or give it to this user (chown -R), or pass another --data-dir.`,
    );
  const mode = stat.mode & 0o777;
  if (mode & 0o077) {
    const owner = stat.isDirectory() ? 0o700 : mode & 0o700;
    chmodSync(path, owner);
    fixed.push(`${path} was mode ${mode.toString(8).padStart(4, '0')}, made ${owner.toString(8).padStart(4, '0')}`);
  }
  if (stat.isDirectory() && resolve(path) !== notBelow) for (const entry of readdirSync(path)) makePrivate(join(path, entry), fixed, notBelow);
}

export function tokenSecretFile(config: Config): string {
  return join(config.dataDir, 'token-secret');
}

/** Reads `DATA_DIR/token-secret`, creating it (mode 0600) on first start, unless the config sets one. */
export function withTokenSecret(config: Config): Config {
  return ensureTokenSecret(config, ...dataDirSecret(tokenSecretFile(config)));
}

export function heartbeatSecretFile(config: Config): string {
  return join(config.dataDir, 'heartbeat-secret');
}

/** Reads `DATA_DIR/heartbeat-secret`, creating it (mode 0600) on first start, unless the config sets one. */
export function withHeartbeatSecret(config: Config): Config {
  return ensureHeartbeatSecret(config, ...dataDirSecret(heartbeatSecretFile(config)));
}

export function keyManagerKeyFile(config: Config): string {
  return join(config.dataDir, 'key-manager-key');
}

/** Reads `DATA_DIR/key-manager-key`, creating it (mode 0600) on first start, unless the config sets a key. */
export function withKeyManagerKey(config: Config): Config {
  return ensureKeyManagerKey(config, ...dataDirSecret(keyManagerKeyFile(config)));
}

/** The reader and writer of a secret kept in one owner-only file; an unchanged secret is not rewritten. */
function dataDirSecret(file: string): [read: () => string | null, write: (secret: string) => void] {
  const existing = existsSync(file) ? readFileSync(file, 'utf8').trim() || null : null;
  return [
    () => existing,
    (secret) => {
      if (secret !== existing) writePrivateFile(file, `${secret}\n`);
    },
  ];
}

/** Owner-only: for files holding secrets or passwords. */
export function writePrivateFile(path: string, text: string): void {
  writeFileSync(path, text, { mode: 0o600 });
  // `mode` applies only when the file is created; an existing file keeps its own.
  chmodSync(path, 0o600);
}

/** A database URL fit for printing: its password replaced by `***`. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.password) return url;
    parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}

/** Connection and authentication failures of the database, named with the password-free URL. */
export function databaseError(e: unknown, config: Config): unknown {
  const { code, message } = e as { code?: string; message: string };
  const known = ['ECONNREFUSED', 'ENOTFOUND', 'ETIMEDOUT', 'EAI_AGAIN', '28P01', '28000', '3D000', 'SQLITE_CANTOPEN', 'SQLITE_READONLY', 'SQLITE_NOTADB'];
  if (!code || !known.includes(code)) return e;
  return new CliError(
    `cannot open the database ${redactUrl(config.database.url)}: ${message}`,
    'Check --database-url, OSTIA_DATABASE_URL or database.url in the config, and that the server is running.',
  );
}

/** Never creates a database: an absent SQLite file means the data directory is not Ostia's. */
export async function openExisting(config: Config): Promise<Db> {
  const file = sqlitePath(config);
  if (file && !existsSync(file)) throw new CliError(`no database at ${file}`, "Pass the --data-dir (or --database-url) the Ostia you mean runs with, or start one with 'ostia up'.");
  const { openDatabase } = await import('../db/database.js');
  try {
    return await openDatabase(config.database.url);
  } catch (e) {
    throw databaseError(e, config);
  }
}

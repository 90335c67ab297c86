/**
 * `ostia doctor`: is the management plane of this Ostia sound? For each amphora the database lists, the
 * controller's way to its agent (route, port, mutual TLS, an API call), its heartbeats as the health
 * manager sees them (lag, the key they are signed with, where they go) and any nftables rule on the way
 * that drops either; the certificate authorities and the controller's certificate; the free addresses of
 * every subnet; clock skew with the database and the amphorae; and, asked, a throw-away amphora booted
 * with the configured drivers, each step timed.
 */
import { existsSync, readFileSync } from 'node:fs';
import { amphoraRootDir, pkiDir, type Config } from '../config.js';
import type { Db } from '../db/database.js';
import { parseHostPort } from '../domain/net.js';
import { CliError, printJson, usageError, type Command } from './command.js';
import { checkAmphora, rulesetCache } from './doctor/amphora-checks.js';
import { managementPlane } from './doctor/plane.js';
import { addressPoolChecks, certificateChecks, databaseClockCheck, healthManagerCheck } from './doctor/service-checks.js';
import { renderChecks, row, summary, type CheckRow } from './doctor/verdict.js';
import { drawPicture, pictureOption, type Chart } from './picture.js';
import { join } from 'node:path';
import { configFromFlags, databaseOption, dataDirOption, heartbeatSecretFile, openExisting } from './settings.js';

/** The exit code when a check failed, apart from 1 (the doctor itself failed) and 2 (usage). */
export const CHECK_FAILED_EXIT = 3;
const DEFAULT_TIMEOUT_S = 3;

export interface DoctorReport {
  checks: CheckRow[];
  failed: number;
  warnings: number;
}

export const doctor: Command = {
  name: 'doctor',
  summary: "Check the management plane: controller → agent, heartbeats, certificates, address pools, clocks, firewalls; optionally boot a throw-away amphora.",
  options: {
    ...dataDirOption,
    ...databaseOption,
    'boot-test': { type: 'boolean', help: 'also boot a throw-away amphora with the configured drivers, time each step, and remove it' },
    timeout: { type: 'string', value: 'SECONDS', help: `how long each probe of an agent waits (default ${DEFAULT_TIMEOUT_S})` },
    ...pictureOption,
  },
  details: [
    'Run it on the controller\'s machine, as the service\'s user (root for compute.driver netns), with the --data-dir and',
    '--config (or --database-url) the service runs with: it reads the amphorae from the database, the CAs from DATA_DIR/pki,',
    'and probes each agent as the controller does. Each row is one check with its verdict (ok, WARN, FAIL) and a sentence',
    'saying what was found and what to do. Firewall rows walk the nftables rules of every namespace the management plane\'s',
    'packets cross (this machine\'s, the bridge fabric\'s, the amphora\'s) and name the rule that drops them.',
    '--picture FILE draws the timed checks (each agent\'s connect, handshake and API call; the boot test\'s steps) as bars.',
    '--boot-test boots an amphora of no load balancer (the health manager records its heartbeats, never fails it over), then',
    'removes its processes, namespace, directory, address and row, even when a step fails, and checks that nothing is left.',
    `Exit status: 0 no check failed (warnings allowed), ${CHECK_FAILED_EXIT} a check failed, 1 the doctor itself failed, 2 usage.`,
  ].join('\n'),
  async run(input) {
    const v = input.values as Record<string, string | boolean | undefined>;
    const timeoutText = v.timeout as string | undefined;
    const timeoutS = timeoutText === undefined ? DEFAULT_TIMEOUT_S : Number(timeoutText);
    if (!(timeoutS > 0) || !Number.isFinite(timeoutS)) throw usageError(doctor, `--timeout must be a positive number of seconds, got '${timeoutText}'`);
    const config = configFromFlags(doctor, input);
    const db = await openExisting(config);
    let checks: CheckRow[];
    try {
      checks = await diagnose(db, config, { timeoutMs: timeoutS * 1000, bootTest: v['boot-test'] === true });
    } finally {
      await db.close();
    }
    const report: DoctorReport = { checks, ...summary(checks) };
    if (typeof v.picture === 'string') await drawPicture(v.picture, timedChecks(report));
    if (input.json) printJson(report);
    else process.stdout.write(`${renderChecks(checks)}\n${report.failed} failed, ${report.warnings} warnings, ${checks.length - report.failed - report.warnings} ok.\n`);
    return report.failed ? CHECK_FAILED_EXIT : 0;
  },
};

export async function diagnose(db: Db, config: Config, opts: { timeoutMs: number; bootTest: boolean }): Promise<CheckRow[]> {
  const plane = managementPlane(config);
  const certificates = certificateChecks(pkiDir(config));
  const secret = heartbeatSecret(config);
  const amphorae = await db.kysely
    .selectFrom('amphora')
    .selectAll()
    .where('status', '!=', 'DELETED')
    .where('lb_network_ip', 'is not', null)
    .orderBy('load_balancer_id')
    .orderBy('id')
    .execute()
    .catch((e: unknown) => {
      throw new CliError(`cannot read the amphorae: ${(e as Error).message}`, "Check that --data-dir or --database-url name the database Ostia runs on ('ostia up' migrates it).");
    });
  const health = parseHostPort(config.amphora.healthListen, 'amphora.healthListen');
  const running = config.compute.driver !== 'noop';
  const ctx = {
    plane,
    agentPort: config.amphora.agentPort,
    health: { ...health, listen: config.amphora.healthListen },
    heartbeat: { intervalMs: config.amphora.heartbeatIntervalMs, timeoutMs: config.amphora.heartbeatTimeoutMs, secret },
    identity: certificates.identity,
    serverCaFile: certificates.serverCaFile,
    amphoraDir: (id: string) => join(amphoraRootDir(config), id),
    timeoutMs: opts.timeoutMs,
    ruleset: rulesetCache(),
  };
  const [perAmphora, pools, dbClock, healthRows] = await Promise.all([
    running ? Promise.all(amphorae.map((amp) => checkAmphora(amp, ctx))) : Promise.resolve([]),
    addressPoolChecks(db, config),
    databaseClockCheck(db, config.amphora.heartbeatTimeoutMs),
    running ? healthManagerCheck(config, opts.timeoutMs) : Promise.resolve([]),
  ]);
  const rows = [...certificates.rows, ...healthRows, dbClock, ...pools];
  if (!running) rows.push(row('amphorae', 'compute.driver noop', 'ok', `compute.driver noop runs no amphora: ${amphorae.length} amphora row(s) have no agent to probe.`));
  else if (!amphorae.length) rows.push(row('amphorae', 'database', 'ok', 'no amphora in the database to probe: --boot-test boots one.'));
  rows.push(...perAmphora.flat());
  // The boot test brings the whole amphora machinery (the runtime's drivers): loaded only when asked for.
  if (opts.bootTest) rows.push(...(await (await import('./doctor/boot-test.js')).bootTest(db, config, plane, secret)));
  return rows;
}

/** Where the time goes: one bar per timed check, named by its check and target, as the table names them. */
function timedChecks(report: DoctorReport): Chart {
  const timed = report.checks.filter((c) => c.ms !== null);
  return {
    title: 'ostia doctor: timed checks',
    subtitle: `${report.failed} failed, ${report.warnings} warnings, ${report.checks.length - report.failed - report.warnings} ok`,
    categories: timed.map((c) => `${c.check} (${c.result}): ${c.target}`),
    series: [{ name: 'ms', values: timed.map((c) => c.ms!) }],
    unit: 'ms',
    horizontal: true,
  };
}

/** The secret the service derives heartbeat keys from, read, never made: null when it has none here. */
function heartbeatSecret(config: Config): string | null {
  if (config.amphora.heartbeatSecret) return config.amphora.heartbeatSecret;
  const file = heartbeatSecretFile(config);
  return existsSync(file) ? readFileSync(file, 'utf8').trim() || null : null;
}

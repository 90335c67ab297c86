/**
 * The stage of the amphora data-plane benches (amphora-dataplane.ts, amphora-tls.ts): a scratch directory,
 * two backends (./backends.ts), a real `ostia up` with the amphora provider and a client of its API with the
 * demo project's token, the hand-written HAProxy (./hand-haproxy.ts), and the teardown of all of it, wrk and
 * s_time included — in `finally`, on SIGINT and SIGTERM, and as a last resort on exit: amphorae and the
 * hand-written HAProxy run in sessions of their own and would outlive the bench.
 */
import { mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { HaproxyFiles } from '../../src/amphora-agent/haproxy/process.js';
import { eventually, randomPort, tempDir } from '../../test/support/amphora-fixtures.js';
import { writeAmphoraConfig } from '../../test/support/amphora-config.js';
import { killAll, processesUnder, startOstia, type OstiaProcess } from '../../test/support/ostia-process.js';
import { farmNote, startBackendFarm, type BackendFarm } from './backends.js';
import { startHandHaproxy } from './hand-haproxy.js';
import { ApiClient } from './lifecycle-api.js';
import { progress } from './progress.js';
import { killAllSTime } from './s-time.js';
import { handTarget, type HandTarget, type HaproxySettings } from './targets.js';
import { killAllWrk } from '../../src/cli/baseline/wrk.js';

export interface Lab {
  /** The scratch directory, removed at teardown. */
  readonly work: string;
  /** The hand-written HAProxy's directory (config, sockets), inside `work`; files its config names may go there too. */
  readonly handDir: string;
  readonly farm: BackendFarm;
  readonly ostia: OstiaProcess;
  /** Ostia's API with the demo project's token. */
  readonly api: ApiClient;
  /** Starts the hand-written HAProxy on the config `render` writes; it listens on `address:port`. */
  startHand(address: string, port: number, render: (files: HaproxyFiles) => string): Promise<HandTarget>;
  /** Something more to undo at teardown, once every process is gone. */
  onTeardown(undo: () => void): void;
  /** The part of a report that describes the stage, `haproxy` being what both load balancers run. */
  report(haproxy: HaproxySettings): LabReport;
}

export interface LabReport {
  /** The 1-minute load average when the lab was set up and when the report was made. */
  load_average: { before: number; after: number };
  backends: { kind: BackendFarm['kind']; note: string };
  haproxy: HaproxySettings;
}

/** The first line of a report's table. */
export function labHeadline(r: LabReport): string {
  return `HAProxy ${r.haproxy.version}, nbthread ${r.haproxy.nbthread}, maxconn ${r.haproxy.maxconn} in both; backends: ${r.backends.note}`;
}

/** The last line of a report's table. */
export function labLoadLine(r: LabReport): string {
  return `Load average (1 min): ${r.load_average.before.toFixed(2)} before, ${r.load_average.after.toFixed(2)} after; the machine is shared, compare within one run.`;
}

export interface LabOptions {
  /** Prefix of the scratch directory's name. */
  name: string;
  /** Members the backends serve besides the two primaries (./backends.ts). */
  extras: number;
}

/**
 * Runs `body` on a fresh stage and tears the stage down whatever happens. A failure is rethrown after HAProxy's
 * and ostia's last lines are written to stderr, unless a signal caused it.
 */
export async function inLab(opts: LabOptions, body: (lab: Lab) => Promise<void>): Promise<void> {
  const loadBefore = loadavg()[0]!;
  const work = tempDir(opts.name);
  const handDir = join(work.path, 'hand');
  const haproxyLines: string[] = [];
  const undos: Array<() => void> = [];
  let farm: BackendFarm | undefined;
  let ostia: OstiaProcess | undefined;
  let api: ApiClient | undefined;
  let hand: HandTarget | undefined;
  let amphoraRoot: string | undefined;
  let cleaned: Promise<void> | undefined;
  const teardown = () =>
    (cleaned ??= (async () => {
      killAllWrk();
      killAllSTime();
      await hand?.haproxy.process.stop().catch((e: Error) => progress(`hand-written HAProxy stop: ${e.message}`));
      api?.close();
      // Amphorae outlive their controller by design: stop the controller first, so that it does not fail over the
      // amphora killed next, then kill whatever runs under the amphorae directory.
      if (amphoraRoot) killAll(processesUnder(amphoraRoot));
      await ostia?.stop();
      if (amphoraRoot) {
        const root = amphoraRoot;
        killAll(processesUnder(root));
        await eventually(() => processesUnder(root).length === 0, 'no process left under the amphorae directory', 5_000, 100).catch((e: Error) => progress(e.message));
      }
      // A hand-written HAProxy that failed to start, or a worker a stop left behind.
      killAll(processesUnder(handDir));
      await farm?.stop();
      for (const undo of undos) undo();
      work.remove();
    })());
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    interrupted = true;
    progress(`${signal}: cleaning up`);
    void teardown().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // The last resort when neither `finally` nor a signal handler ran.
  process.once('exit', () => {
    for (const dir of [amphoraRoot, handDir]) if (dir) killAll(processesUnder(dir));
  });
  try {
    const memberPrefix = `127.32.${1 + Math.floor(Math.random() * 254)}`;
    const backendDir = join(work.path, 'backends');
    mkdirSync(backendDir);
    const backends = (farm = await startBackendFarm(backendDir, memberPrefix, randomPort(), opts.extras));
    const backendsNote = farmNote(backends);
    progress(`backends: ${backendsNote}`);

    const configFile = await writeAmphoraConfig(work.path);
    progress('starting ostia up (amphora provider)');
    ostia = await startOstia({ extraArgs: ['--config', configFile] });
    amphoraRoot = join(ostia.dataDir, 'amphorae');
    api = new ApiClient('ostia', ostia.url, { 'x-auth-token': await ostia.token('ostia-demo') }, true);
    await body({
      work: work.path,
      handDir,
      farm: backends,
      ostia,
      api,
      async startHand(address, port, render) {
        progress('starting the hand-written HAProxy');
        hand = handTarget(await startHandHaproxy(handDir, render, haproxyLines), address, port);
        return hand;
      },
      onTeardown: (undo) => undos.push(undo),
      report: (haproxy) => ({ load_average: { before: loadBefore, after: loadavg()[0]! }, backends: { kind: backends.kind, note: backendsNote }, haproxy }),
    });
  } catch (e) {
    // After a signal, failures are the interruption's (wrk killed), not HAProxy's.
    if (!interrupted && haproxyLines.length) progress(`hand-written HAProxy said:\n${haproxyLines.slice(-10).join('\n')}`);
    if (!interrupted && ostia) progress(`ostia up said (last lines):\n${ostia.logTail().split('\n').slice(-10).join('\n')}`);
    throw e;
  } finally {
    await teardown();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/**
 * A bench's entry point: `parse` reads the command line (null for --help, on which `help` is printed), `run`
 * measures; a failure goes to stderr, with exit status 1.
 */
export function runBench<P>(help: string, parse: () => P | null, run: (params: P) => Promise<void>): void {
  const main = async () => {
    const params = parse();
    if (params === null) process.stdout.write(help);
    else await run(params);
  };
  main().catch((err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}

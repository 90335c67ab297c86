/**
 * Worker take-over benchmark: how soon a job whose `ostia worker` was SIGKILLed mid-step is
 * resumed by another worker on PostgreSQL, against the version before worker sessions (leases
 * only), interleaved in one run.
 *
 *   npm run bench:takeover [-- --rounds 3 --baseline-ref f85cc06 --database-url URL --json]
 *
 * Each round, on each version (the order alternating from round to round): a fresh database with
 * `ostia api` and two `ostia worker`s (test/support/worker-takeover.ts), the amphora provider on
 * local compute, default timers (a 30 s lease). An amphora load balancer is created; the worker
 * that claimed the create is frozen in wait-for-agent and SIGKILLed. From the database: kill →
 * the other worker's claim (when it closed the dead worker's step as interrupted), kill → the
 * create's last step finished (ACTIVE), and the dead worker's lease left at the kill — the
 * soonest a take-over that waits for the lease could come. Everything stays on 127.0.0.0/8.
 */
import { loadavg } from 'node:os';
import { awaitResumed, freezeCreateIn, startTakeoverRig, type TakeoverRig } from '../test/support/worker-takeover.js';
import { benchArgs, positiveInt } from './support/args.js';
import { builtVersion } from './support/baseline-build.js';
import { runBench } from './support/lab.js';
import { postgresServer } from './support/private-postgres.js';
import { progress } from './support/progress.js';
import { median } from './support/stats.js';
import { grid, num } from './support/table.js';

/** The last commit before worker sessions: jobs of a dead worker waited for its lease. */
const BEFORE_SESSIONS = 'f85cc06';
/** Where the create is when its worker dies: a step of about half a second on local compute. */
const STEP = 'wait-for-agent';
/** Bound of one round's wait: a 30 s lease, a re-scan every 15 s, the rest of the create. */
const RESUME_BOUND_MS = 180_000;

const HELP = `usage: npm run bench:takeover -- [options]
  --rounds N            kills on each version, alternating (default 3)
  --baseline-ref REF    the version to compare with (default ${BEFORE_SESSIONS}, the last before worker sessions)
  --database-url URL    a PostgreSQL server whose user may CREATE DATABASE (default: OSTIA_TEST_PG_URL,
                        else a private server started and stopped by the bench)
  --json                print one JSON document instead of text
  --help                this text
`;

interface Params {
  rounds: number;
  baselineRef: string;
  databaseUrl: string | undefined;
  json: boolean;
}

function parse(): Params | null {
  const v = benchArgs({ rounds: { type: 'string', default: '3' }, 'baseline-ref': { type: 'string', default: BEFORE_SESSIONS }, 'database-url': { type: 'string' } });
  if (!v) return null;
  return { rounds: positiveInt('rounds', v.rounds), baselineRef: v['baseline-ref'], databaseUrl: v['database-url'] ?? process.env.OSTIA_TEST_PG_URL, json: v.json };
}

interface Version {
  label: string;
  /** bin/ostia.js of another build; this checkout's when absent. */
  bin?: string;
}

interface Kill {
  round: number;
  version: string;
  /** SIGKILL → the other worker's claim. */
  adopted_ms: number;
  /** SIGKILL → the create's last step finished. */
  active_ms: number;
  /** The dead worker's lease left at the SIGKILL. */
  lease_left_ms: number;
  provisioning_status: string;
  interrupted: string;
  load_1m: number;
}

/** The rig of the round under way, which a signal must tear down too: amphorae outlive their workers. */
let running: TakeoverRig | undefined;

async function killOnce(serverUrl: string, version: Version, round: number): Promise<Kill> {
  progress(`round ${round}: ${version.label}: starting ostia api and two ostia workers`);
  const rig = (running = await startTakeoverRig(serverUrl, version.bin === undefined ? {} : { bin: version.bin }));
  try {
    const frozen = await freezeCreateIn(rig, STEP);
    const killedAt = Date.now();
    frozen.worker.child.kill('SIGKILL');
    const resumed = await awaitResumed(rig, frozen, RESUME_BOUND_MS);
    const kill: Kill = {
      round,
      version: version.label,
      adopted_ms: resumed.adoptedAt - killedAt,
      active_ms: resumed.finishedAt - killedAt,
      lease_left_ms: frozen.leaseExpiresAt - killedAt,
      provisioning_status: resumed.provisioningStatus,
      interrupted: resumed.interrupted.error!,
      load_1m: loadavg()[0]!,
    };
    progress(`  adopted ${kill.adopted_ms} ms and ${kill.provisioning_status} ${kill.active_ms} ms after the kill; lease left ${kill.lease_left_ms} ms`);
    return kill;
  } finally {
    running = undefined;
    await rig.close();
  }
}

interface Summary {
  version: string;
  adopted_ms: { median: number; max: number };
  active_ms: { median: number; max: number };
  lease_left_ms: { median: number };
}

function summarise(version: string, kills: readonly Kill[]): Summary {
  const of = (f: (k: Kill) => number) => kills.filter((k) => k.version === version).map(f);
  return {
    version,
    adopted_ms: { median: median(of((k) => k.adopted_ms)), max: Math.max(...of((k) => k.adopted_ms)) },
    active_ms: { median: median(of((k) => k.active_ms)), max: Math.max(...of((k) => k.active_ms)) },
    lease_left_ms: { median: median(of((k) => k.lease_left_ms)) },
  };
}

const seconds = (ms: number) => num(ms / 1000, 2);

function report(kills: readonly Kill[], summaries: readonly [Summary, Summary], load: { before: number; after: number }, command: string): string {
  const [now, before] = summaries;
  const rounds = grid([
    ['version', 'round', 'kill → claimed (s)', 'kill → ACTIVE (s)', 'lease left at kill (s)', 'load 1m', 'status'],
    ...kills.map((k) => [k.version, String(k.round), seconds(k.adopted_ms), seconds(k.active_ms), seconds(k.lease_left_ms), num(k.load_1m, 2), k.provisioning_status]),
  ]);
  const summary = grid([
    ['', 'this version', before.version, 'ratio'],
    ['kill → claimed, median (s)', seconds(now.adopted_ms.median), seconds(before.adopted_ms.median), `${num(before.adopted_ms.median / now.adopted_ms.median, 1)}×`],
    ['kill → claimed, max (s)', seconds(now.adopted_ms.max), seconds(before.adopted_ms.max), `${num(before.adopted_ms.max / now.adopted_ms.max, 1)}×`],
    ['kill → ACTIVE, median (s)', seconds(now.active_ms.median), seconds(before.active_ms.median), `${num(before.active_ms.median / now.active_ms.median, 1)}×`],
    ['kill → ACTIVE, max (s)', seconds(now.active_ms.max), seconds(before.active_ms.max), `${num(before.active_ms.max / now.active_ms.max, 1)}×`],
    ['lease left at kill, median (s)', seconds(now.lease_left_ms.median), seconds(before.lease_left_ms.median), ''],
  ]);
  return [
    `Take-over of a job whose ostia worker was SIGKILLed in ${STEP} (amphora create, local compute), PostgreSQL, ostia api + 2 ostia worker, default timers (30 s lease)`,
    '',
    rounds,
    '',
    summary,
    '',
    'Ratios are the earlier version over this one (how many times sooner). "Lease left at kill" is the soonest a take-over that waits for the lease can come.',
    `Load average (1 min): ${load.before.toFixed(2)} before, ${load.after.toFixed(2)} after; the machine is shared, compare within one run.`,
    `Command: ${command}`,
  ].join('\n');
}

runBench(HELP, parse, async (p) => {
  const loadBefore = loadavg()[0]!;
  const command = `npm run bench:takeover -- --rounds ${p.rounds} --baseline-ref ${p.baselineRef}`;
  const baseline = builtVersion(p.baselineRef);
  const versions: [Version, Version] = [{ label: 'this version' }, { label: `${p.baselineRef} (leases only)`, bin: baseline.bin }];
  const server = postgresServer(p.databaseUrl);
  const stop = (signal: NodeJS.Signals) => {
    progress(`${signal}: stopping`);
    void (running?.close() ?? Promise.resolve()).finally(() => {
      server.stop();
      process.exit(signal === 'SIGINT' ? 130 : 143);
    });
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const kills: Kill[] = [];
  try {
    for (let round = 1; round <= p.rounds; round++) {
      // Alternating the order cancels a drift of the machine's load within a round.
      for (const version of round % 2 === 1 ? versions : [versions[1], versions[0]]) kills.push(await killOnce(server.url, version, round));
    }
  } finally {
    server.stop();
  }
  const summaries: [Summary, Summary] = [summarise(versions[0].label, kills), summarise(versions[1].label, kills)];
  const load = { before: loadBefore, after: loadavg()[0]! };
  if (p.json) process.stdout.write(`${JSON.stringify({ step: STEP, baseline: { ref: p.baselineRef, commit: baseline.commit }, kills, summaries, load_average_1m: load, command }, null, 2)}\n`);
  else process.stdout.write(`${report(kills, summaries, load, command)}\n`);
});

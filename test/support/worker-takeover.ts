/**
 * The rig of the worker take-over test and bench: `ostia api` and two `ostia worker`s on a fresh
 * PostgreSQL database, the amphora provider on local compute. An amphora load balancer's create is
 * frozen (SIGSTOP) in one of its steps on whichever worker claimed it, which the caller then kills;
 * the database then says when the other worker adopted the job and when the create finished.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { openDatabase, type Db } from '../../src/db/database.js';
import { deepMerge, VIP_SUBNET_ID } from '../../src/config.js';
import { epochMsFromIso } from '../../src/domain/time.js';
import { readTrace, type TraceEntry } from '../../src/controller/trace.js';
import { writeAmphoraConfig } from './amphora-config.js';
import { tempDir } from './amphora-fixtures.js';
import { keystoneToken, killAll, processesUnder } from './ostia-process.js';
import { freshPostgresDatabase } from './postgres.js';
import { startRole, stopRole, type Role } from './role-process.js';

export interface TakeoverRig {
  readonly db: Db;
  readonly apiUrl: string;
  readonly workers: readonly Role[];
  close(): Promise<void>;
}

/** `bin`: another build's bin/ostia.js (a bench's baseline); `config`: merged into the amphora tests' config. */
export async function startTakeoverRig(serverUrl: string, opts: { config?: object; bin?: string } = {}): Promise<TakeoverRig> {
  const database = await freshPostgresDatabase(serverUrl);
  // Short: HAProxy refuses socket paths over 97 bytes, and DATA_DIR/amphorae/<uuid>/haproxy-master.sock is one.
  const work = tempDir('to');
  const dataDir = join(work.path, 'd');
  const roles: Role[] = [];
  let db: Db | undefined;
  const close = async () => {
    // A frozen worker would not see its SIGTERM.
    for (const role of roles) role.child.kill('SIGCONT');
    await Promise.all(roles.map(stopRole));
    await db?.close();
    // Amphorae outlive their workers by design.
    killAll(processesUnder(join(dataDir, 'amphorae')));
    work.remove();
    await database.drop();
  };
  try {
    // The secrets that processes run apart must share (the health manager, not run here, would check the heartbeats).
    const secrets = { amphora: { heartbeatSecret: 'h'.repeat(64) }, keyManager: { encryptionKey: randomBytes(32).toString('base64') } };
    const config = await writeAmphoraConfig(work.path, deepMerge(secrets, opts.config ?? {}));
    const common = ['--config', config, '--data-dir', dataDir, '--database-url', database.url];
    roles.push(await startRole(['api', ...common, '--port', '0'], opts.bin));
    // One after the other: both would run the schema's migrations at once otherwise.
    for (let i = 0; i < 2; i++) roles.push(await startRole(['worker', ...common], opts.bin));
    db = await openDatabase(database.url);
    return { db, apiUrl: roles[0]!.announced.url!, workers: roles.slice(1), close };
  } catch (e) {
    await close();
    throw e;
  }
}

/** The moment a worker was frozen mid-step: what the database said then. */
export interface Frozen {
  lbId: string;
  jobId: string;
  /** The frozen worker, and the other one. */
  worker: Role;
  survivor: Role;
  /** The lease owner the frozen worker's job names. */
  owner: string;
  /** The step it was in, open in the trace. */
  step: string;
  /** Its lease's expiry (epoch ms): final, as a frozen worker renews nothing. */
  leaseExpiresAt: number;
  attempts: number;
}

/** Creates an amphora load balancer and freezes the worker running its create while `step` is open. */
export async function freezeCreateIn(rig: TakeoverRig, step: string): Promise<Frozen> {
  const token = await keystoneToken({ auth_url: `${rig.apiUrl}/identity/v3`, username: 'demo', password: 'secret', project_name: 'demo' });
  const res = await fetch(`${rig.apiUrl}/v2/lbaas/loadbalancers`, {
    method: 'POST',
    headers: { 'x-auth-token': token, 'content-type': 'application/json' },
    body: JSON.stringify({ loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, provider: 'amphora' } }),
  });
  if (res.status !== 201) throw new Error(`creating the load balancer: HTTP ${res.status} ${await res.text()}`);
  const lbId = ((await res.json()) as { loadbalancer: { id: string } }).loadbalancer.id;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const open = await openStep(rig.db, lbId);
    if (open?.step === step) {
      const worker = rig.workers.find((w) => open.owner.includes(`:${w.child.pid}:`));
      if (!worker) throw new Error(`no worker of the rig is the lease owner ${open.owner}`);
      worker.child.kill('SIGSTOP');
      // Read again once frozen: the step may have ended between the read and the signal.
      const frozen = await openStep(rig.db, lbId);
      if (frozen?.step !== step) throw new Error(`the create left ${step} before its worker could be frozen`);
      return { lbId, ...frozen, worker, survivor: rig.workers.find((w) => w !== worker)! };
    }
    if ((await readTrace(rig.db, lbId)).some((t) => t.step === step && t.finished_at !== null)) throw new Error(`the create got past ${step} between two reads`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`the create did not reach ${step} within 60 s`);
}

/** The running job of the load balancer and its open step, if any. */
async function openStep(db: Db, lbId: string): Promise<Omit<Frozen, 'lbId' | 'worker' | 'survivor'> | undefined> {
  const row = await db.kysely
    .selectFrom('job as j')
    .innerJoin('job_step as s', 's.job_id', 'j.id')
    .select(['j.id', 'j.lease_owner', 'j.lease_expires_at', 'j.attempts', 's.step'])
    .where('j.load_balancer_id', '=', lbId)
    .where('j.state', '=', 'running')
    .where('s.finished_at', 'is', null)
    .executeTakeFirst();
  return row && { jobId: row.id, owner: row.lease_owner!, step: row.step, leaseExpiresAt: row.lease_expires_at!, attempts: row.attempts };
}

/** What the database says once the create finished after the kill. */
export interface Resumed {
  provisioningStatus: string;
  attempts: number;
  /** The step the dead worker was in, closed by whoever adopted the job (epoch ms of the adoption). */
  interrupted: TraceEntry;
  adoptedAt: number;
  /** When the create's last step finished (epoch ms). */
  finishedAt: number;
  trace: TraceEntry[];
}

/** Waits (up to `ms`) for the job to end, then reads how it was resumed. */
export async function awaitResumed(rig: TakeoverRig, frozen: Frozen, ms: number): Promise<Resumed> {
  const deadline = Date.now() + ms;
  for (;;) {
    const job = await rig.db.kysely.selectFrom('job').select(['state', 'attempts']).where('id', '=', frozen.jobId).executeTakeFirstOrThrow();
    if (job.state === 'done' || job.state === 'failed') {
      const lb = await rig.db.kysely.selectFrom('load_balancer').select('provisioning_status').where('id', '=', frozen.lbId).executeTakeFirstOrThrow();
      const trace = await readTrace(rig.db, frozen.lbId);
      const interrupted = trace.find((t) => t.step === frozen.step && t.error !== null)!;
      return {
        provisioningStatus: lb.provisioning_status,
        attempts: job.attempts,
        interrupted,
        adoptedAt: epochMsFromIso(interrupted.finished_at!)!,
        finishedAt: epochMsFromIso(trace.at(-1)!.finished_at!)!,
        trace,
      };
    }
    if (Date.now() > deadline) throw new Error(`the job of the killed worker was not finished within ${ms} ms (state ${job.state})`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}


/**
 * Issue 3 end to end: an `ostia up` killed (SIGKILL, as a crash) in the middle of an amphora
 * load balancer's create, and a new `ostia up` on the same data directory. The job still names
 * the dead worker; the new process, the only one on its SQLite database, adopts it at start
 * (src/controller/jobs.ts adoptOrphanedJobs) and resumes it at the first step the dead one did
 * not record as done. The amphora's processes are detached and outlive the kill, so the resumed
 * job must finish with that amphora (or, when the dead process had not recorded booting it,
 * replace its processes): one amphora, ACTIVE, traffic through the VIP, no orphan agent or
 * HAProxy, and nothing left after a cascade delete. The kill lands in wait-for-agent, in
 * push-config, and in boot-compute between the agent's spawn and its agent.pid (the group is
 * then found by its working directory).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { killAll, processesUnder, startOstia, type OstiaProcess } from './support/ostia-process.js';
import { writeAmphoraConfig } from './support/amphora-config.js';
import { collectBodies, eventually, randomPort, startBackend, tempDir, type Backend } from './support/amphora-fixtures.js';
import { openDatabase } from '../src/db/database.js';
import { readTrace, type TraceEntry } from '../src/controller/trace.js';
import { amphoraFlows } from '../src/providers/amphora/flows.js';
import { jobAmphoraId } from '../src/providers/amphora/steps.js';

const ADMIN = 'ostia';
const DEMO = 'ostia-demo';
/** Short, so the new process adopts the dead one's job within seconds (it waits for the lease to expire). */
const LEASE_SECONDS = 2;
/** The flow's own step names; the loader is never called to name them. */
const CREATE_STEPS = amphoraFlows(() => Promise.reject(new Error('not loaded')))('loadbalancer.create').steps.map((s) => s.name);

type Obj = Record<string, unknown>;

/** What the database says right after the kill, before anything resumed. */
interface AtKill {
  lbStatus: string;
  jobId: string;
  nextStep: number;
  amphora: { id: string; compute_id: string | null } | undefined;
  trace: TraceEntry[];
  /** agent.pid of the amphora's directory, if the dead process had booted it. */
  leader: number | undefined;
}

const lastOctet = () => 10 + Math.floor(Math.random() * 240);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The process group of a running pid (Linux /proc: field 5 of stat, after the command name). */
function groupOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
  } catch {
    return undefined;
  }
}

/** Children of the main thread of `pid` (which spawns the agents); Linux /proc. */
function childrenOf(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ').filter(Boolean).map(Number);
}

describe('an amphora create whose ostia up was killed mid-flow', { concurrency: 1 }, () => {
  // Short: HAProxy refuses socket paths over 97 bytes, and DATA_DIR/amphorae/<uuid>/haproxy-master.sock is one.
  const work = tempDir('rs');
  const dataDir = join(work.path, 'd');
  let configFile: string;
  const amphoraRoot = join(dataDir, 'amphorae');
  const backends: Backend[] = [];
  let ostia: OstiaProcess | undefined;

  const start = async () => {
    ostia = await startOstia({ dataDir, extraArgs: ['--config', configFile] });
  };

  async function api(cloud: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: Obj }> {
    const res = await fetch(`${ostia!.url}${path}`, {
      method,
      headers: { 'x-auth-token': await ostia!.token(cloud), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? (JSON.parse(text) as Obj) : {} };
  }

  async function createLoadBalancer(listenerPort: number): Promise<Obj> {
    const [publicSubnet, privateSubnet] = [await ostia!.subnetId('public-subnet'), await ostia!.subnetId('private-subnet')];
    const r = await api(DEMO, 'POST', '/v2/lbaas/loadbalancers', {
      loadbalancer: {
        name: 'resume',
        vip_subnet_id: publicSubnet,
        provider: 'amphora',
        listeners: [
          {
            protocol: 'HTTP',
            protocol_port: listenerPort,
            default_pool: {
              name: 'p',
              protocol: 'HTTP',
              lb_algorithm: 'ROUND_ROBIN',
              healthmonitor: { type: 'HTTP', delay: 1, timeout: 1, max_retries: 1 },
              members: backends.map((b) => ({ address: b.address, protocol_port: b.port, subnet_id: privateSubnet })),
            },
          },
        ],
      },
    });
    assert.equal(r.status, 201, JSON.stringify(r.json));
    return r.json.loadbalancer as Obj;
  }

  /**
   * Polls the provisioning trace until `step` has started and not finished. Fails if the create
   * got past it unseen: a kill after that would not test a resume at this step.
   */
  async function waitInStep(lbId: string, step: string): Promise<void> {
    const token = await ostia!.token(DEMO);
    const deadline = Date.now() + 15_000;
    for (let polls = 0; polls < 3_000 && Date.now() < deadline; polls++) {
      const res = await fetch(`${ostia!.url}/v2/lbaas/loadbalancers/${lbId}/trace`, { headers: { 'x-auth-token': token } });
      const trace = ((await res.json()) as { trace: TraceEntry[] }).trace;
      const last = trace.at(-1);
      if (last?.step === step && last.finished_at === null) {
        // Frozen at once, so that the step cannot finish between this answer and the kill.
        process.kill(ostia!.pid, 'SIGSTOP');
        return;
      }
      if (trace.some((t) => CREATE_STEPS.indexOf(t.step) > CREATE_STEPS.indexOf(step) || (t.step === step && t.finished_at !== null)))
        throw new Error(`the create got past ${step} between two polls of its trace: ${trace.map((t) => t.step).join(' → ')}`);
      await sleep(5);
    }
    throw new Error(`the create did not reach ${step} within 15 s`);
  }

  async function readAtKill(lbId: string): Promise<AtKill> {
    const db = await openDatabase(`sqlite:${join(dataDir, 'ostia.db')}`);
    try {
      const lb = await db.kysely.selectFrom('load_balancer').select('provisioning_status').where('id', '=', lbId).executeTakeFirstOrThrow();
      const jobs = await db.kysely.selectFrom('job').select(['id', 'next_step', 'state']).where('load_balancer_id', '=', lbId).execute();
      assert.equal(jobs.length, 1, 'one job: the create');
      const job = jobs[0]!;
      assert.equal(job.state, 'running', 'the dead worker still holds the job');
      const amphora = await db.kysely.selectFrom('amphora').select(['id', 'compute_id']).where('id', '=', jobAmphoraId(job.id)).executeTakeFirst();
      const pidFile = amphora ? join(amphoraRoot, amphora.id, 'agent.pid') : undefined;
      const leader = pidFile && existsSync(pidFile) ? (JSON.parse(readFileSync(pidFile, 'utf8')) as { pid: number }).pid : undefined;
      return { lbStatus: lb.provisioning_status, jobId: job.id, nextStep: job.next_step, amphora, trace: await readTrace(db, lbId), leader };
    } finally {
      await db.close();
    }
  }

  before(async () => {
    configFile = await writeAmphoraConfig(work.path, { amphora: { heartbeatIntervalMs: 500, heartbeatTimeoutMs: 2000 }, worker: { leaseSeconds: LEASE_SECONDS } });
    const first = lastOctet();
    backends.push(await startBackend('backend-a', `127.32.0.${first}`));
    backends.push(await startBackend('backend-b', `127.32.0.${first === 250 ? 11 : first + 1}`));
    await start();
  });

  after(async () => {
    for (const b of backends) await b.close();
    // Stopped first, so it boots nothing after the kill below.
    await ostia?.stop();
    // Amphorae outlive their controller by design; a failed run must not leave them running.
    killAll(processesUnder(amphoraRoot));
    work.remove();
  });

  /**
   * Freezes `ostia up` (SIGSTOP) inside boot-compute, after it spawned the agent and before
   * agent.pid records it. It spins on /proc, as that window is a few milliseconds: a fork shows
   * among ostia up's children at once, and ostia up writes agent.pid only after the child's exec.
   */
  async function freezeAfterSpawn(): Promise<void> {
    const pid = ostia!.pid;
    const before = new Set(childrenOf(pid));
    const deadline = Date.now() + 15_000;
    let spawned: number | undefined;
    for (let spins = 0; spawned === undefined && spins < 10_000_000 && Date.now() < deadline; spins++) spawned = childrenOf(pid).find((c) => !before.has(c));
    if (spawned !== undefined) process.kill(pid, 'SIGSTOP');
    assert.ok(spawned !== undefined, 'ostia up spawned no agent within 15 s');
    // eventually returns only a found directory.
    const dir = (await eventually(
      () => (existsSync(amphoraRoot) ? readdirSync(amphoraRoot) : []).map((d) => join(amphoraRoot, d)).find((d) => processesUnder(d).includes(spawned)),
      'the spawned child to run as the agent of an amphora directory',
      2_000,
      10,
    ))!;
    assert.ok(!existsSync(join(dir, 'agent.pid')), 'agent.pid was written before ostia up could be stopped');
  }

  const cases: Array<{ killedIn: string; reach: (lbId: string) => Promise<void> }> = [
    { killedIn: 'wait-for-agent', reach: (lbId) => waitInStep(lbId, 'wait-for-agent') },
    { killedIn: 'push-config', reach: (lbId) => waitInStep(lbId, 'push-config') },
    // Last: the orphan it leaves holds the first management address, which later amphorae would be given.
    {
      killedIn: 'boot-compute, after the agent was spawned and before agent.pid was written',
      reach: freezeAfterSpawn,
    },
  ];

  for (const { killedIn, reach } of cases) {
    it(`resumes when killed in ${killedIn}: one amphora, ACTIVE, serving, and no orphan process`, { timeout: 90_000 }, async () => {
      const listenerPort = randomPort();
      const lb = await createLoadBalancer(listenerPort);
      const lbId = String(lb.id);
      const vip = String(lb.vip_address);
      await reach(lbId);
      const runningAtKill = processesUnder(amphoraRoot);
      await ostia!.kill();

      const atKill = await readAtKill(lbId);
      const killedSteps = atKill.trace.map((t) => t.step).join(' → ');
      assert.equal(atKill.lbStatus, 'PENDING_CREATE', `the create finished before the kill landed (trace: ${killedSteps})`);
      assert.ok(atKill.amphora, 'the dead process created its amphora row');
      assert.ok(runningAtKill.length > 0, 'the dead process had started the amphora’s agent');
      // What the dead worker ran is the flow up to the step it died in.
      assert.deepEqual(atKill.trace.map((t) => t.step), CREATE_STEPS.slice(0, atKill.trace.length), killedSteps);
      const booted = atKill.amphora.compute_id !== null;
      if (booted) assert.ok(atKill.leader !== undefined && processesUnder(amphoraRoot).includes(atKill.leader), 'the booted amphora runs on after its controller died');
      console.log(`# killed after ${killedSteps}; the job resumes at ${CREATE_STEPS[atKill.nextStep]}`);

      const killedAt = Date.now();
      await start();
      const restartMs = Date.now() - killedAt;
      await eventually(async () => {
        const status = ((await api(DEMO, 'GET', `/v2/lbaas/loadbalancers/${lbId}`)).json.loadbalancer as Obj | undefined)?.provisioning_status;
        if (status === 'ERROR') throw new Error(`the resumed create failed: ${JSON.stringify((await api(DEMO, 'GET', `/v2/lbaas/loadbalancers/${lbId}/trace`)).json.status_reason)}`);
        return status === 'ACTIVE';
      }, 'the resumed create to make the load balancer ACTIVE', 60_000, 200);
      console.log(`# ACTIVE ${Date.now() - killedAt} ms after the kill; ostia up restarted in ${restartMs} ms, the lease is ${LEASE_SECONDS} s`);

      const { trace } = (await api(DEMO, 'GET', `/v2/lbaas/loadbalancers/${lbId}/trace`)).json as { trace: TraceEntry[] };
      const identity = (t: TraceEntry) => `${t.job_id} ${t.step} ${t.started_at}`;
      assert.deepEqual(trace.slice(0, atKill.trace.length).map(identity), atKill.trace.map(identity), 'the dead attempt’s steps are kept, in order');
      const resumed = trace.slice(atKill.trace.length);
      assert.deepEqual(
        resumed.map((t) => t.step),
        CREATE_STEPS.slice(atKill.nextStep),
        'the same job resumes at its first unrecorded step and runs each later step once',
      );
      assert.ok(resumed.every((t) => t.job_id === atKill.jobId && t.finished_at !== null && t.error === null), JSON.stringify(resumed));

      const amphorae = (await api(ADMIN, 'GET', `/v2/octavia/amphorae?loadbalancer_id=${lbId}`)).json.amphorae as Obj[];
      assert.deepEqual(
        amphorae.map((a) => [a.id, a.status]),
        [[atKill.amphora.id, 'ALLOCATED']],
        'the amphora the dead process started building is the one in service',
      );
      assert.deepEqual(readdirSync(amphoraRoot), [atKill.amphora.id], 'one amphora directory');
      const leader = (JSON.parse(readFileSync(join(amphoraRoot, atKill.amphora.id, 'agent.pid'), 'utf8')) as { pid: number }).pid;
      const running = processesUnder(amphoraRoot);
      if (booted) assert.equal(leader, atKill.leader, 'the amphora was not booted again');
      else assert.deepEqual(runningAtKill.filter((pid) => running.includes(pid)), [], 'the half-booted attempt’s processes are gone');
      assert.ok(running.length >= 2, `the agent and its HAProxy run: ${running.join(' ')}`);
      assert.deepEqual(new Set(running.map(groupOf)), new Set([leader]), 'every process under the amphorae directory is in the one amphora’s group');

      const bodies = await eventually(async () => {
        const got = await collectBodies(vip, listenerPort, 6);
        return new Set(got).size === 2 ? got : undefined;
      }, 'both members to answer through the VIP', 15_000, 250);
      assert.deepEqual([...new Set(bodies)].sort(), ['backend-a', 'backend-b']);

      assert.equal((await api(DEMO, 'DELETE', `/v2/lbaas/loadbalancers/${lbId}?cascade=true`)).status, 204);
      await eventually(async () => (await api(DEMO, 'GET', `/v2/lbaas/loadbalancers/${lbId}`)).status === 404, 'the load balancer to be gone', 30_000, 200);
      await eventually(() => processesUnder(amphoraRoot).length === 0, 'no process under the amphorae directory', 15_000, 200);
      assert.deepEqual(readdirSync(amphoraRoot), []);
    });
  }
});

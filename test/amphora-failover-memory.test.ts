/**
 * Failover memory end to end with real amphorae (agent + HAProxy): a load balancer whose
 * configuration no new amphora accepts (a value written straight into the database, past the
 * API) loses its amphora. The health manager fails it over once, the new amphora refuses the
 * configuration, and nothing more happens: no storm of amphorae replacing each other. The load
 * balancer is in ERROR with a reason its owner can read; an operator's failover is one more
 * attempt, and once the configuration is right again it brings the load balancer back.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { killAll, processesUnder, startOstia, type OstiaProcess } from './support/ostia-process.js';
import { unmet } from './support/requirements.js';
import { writeAmphoraConfig } from './support/amphora-config.js';
import { OpenstackCli } from './support/openstack-cli.js';
import { eventually, randomPort } from './support/amphora-fixtures.js';
import { openDatabase, type Db } from '../src/db/database.js';

const ADMIN = 'ostia';
const DEMO = 'ostia-demo';
/** Past what HAProxy's renderer accepts (2^53 is one of the values the API once took and HAProxy refused). */
const UNRENDERABLE_LIMIT = 2 ** 53;
/** Several heartbeat timeouts and detector runs: a storm would have failed over again many times. */
const WATCH_MS = 20_000;

type Obj = Record<string, unknown>;

describe('failover memory per load balancer', { skip: unmet('openstack-cli'), concurrency: 1 }, () => {
  let ostia: OstiaProcess;
  let cli: OpenstackCli;
  let configDir: string;
  let db: Db;
  let lb: Obj;
  let listenerId: string;
  const amphoraRoot = () => join(ostia.dataDir, 'amphorae');

  const lbRow = () => db.kysely.selectFrom('load_balancer').select(['provisioning_status', 'status_reason']).where('id', '=', String(lb.id)).executeTakeFirstOrThrow();
  const amphoraRows = () => db.kysely.selectFrom('amphora').select(['id', 'status', 'status_reason']).where('load_balancer_id', '=', String(lb.id)).orderBy('created_at').execute();
  const failoverJobs = () => db.kysely.selectFrom('job').select(['id', 'state', 'operation']).where('load_balancer_id', '=', String(lb.id)).where('operation', 'in', ['amphora.failover', 'loadbalancer.failover']).execute();
  const settled = async () => ((await lbRow()).provisioning_status.startsWith('PENDING_') ? undefined : await lbRow());

  before(async () => {
    configDir = mkdtempSync(join(tmpdir(), 'ostia-failover-memory-'));
    const configFile = await writeAmphoraConfig(configDir, { amphora: { heartbeatIntervalMs: 500, heartbeatTimeoutMs: 2000 } });
    ostia = await startOstia({ extraArgs: ['--config', configFile] });
    cli = new OpenstackCli(ostia.cloudsYaml, { concurrency: 2 });
    db = await openDatabase(`sqlite:${join(ostia.dataDir, 'ostia.db')}`);
  });

  after(async () => {
    await db?.close();
    if (ostia) {
      killAll(processesUnder(amphoraRoot()));
      await ostia.stop();
    }
    if (configDir) rmSync(configDir, { recursive: true, force: true });
  });

  /**
   * A load balancer whose listener its amphorae cannot render, after its amphora died and the
   * failover that followed failed on the configuration; made once, by whichever test asks first.
   */
  let stopping: Promise<{ oldId: string }> | undefined;
  const stoppedByRefusal = () =>
    (stopping ??= (async () => {
      lb = await cli.json(DEMO, ['loadbalancer', 'create', '--name', 'refused-config', '--provider', 'amphora', '--vip-subnet-id', 'public-subnet', '--wait']);
      const listener = await cli.json(DEMO, ['loadbalancer', 'listener', 'create', String(lb.id), '--name', 'web', '--protocol', 'HTTP', '--protocol-port', String(randomPort()), '--wait']);
      listenerId = String(listener.id);
      const [old] = await amphoraRows();
      assert.equal(old!.status, 'ALLOCATED');
      // Past the API, as a value the API accepted before it validated every field would be.
      await db.kysely.updateTable('listener').set({ connection_limit: UNRENDERABLE_LIMIT }).where('id', '=', listenerId).execute();
      const leader = (JSON.parse(readFileSync(join(amphoraRoot(), old!.id, 'agent.pid'), 'utf8')) as { pid: number }).pid;
      process.kill(-leader, 'SIGKILL');
      await eventually(async () => (await failoverJobs()).some((j) => j.state === 'failed'), 'the failover to fail on the refused configuration', 60_000, 250);
      return { oldId: old!.id };
    })());

  it('fails over once when the new amphora refuses the configuration, then stops, with a reason for the owner', { timeout: 240_000 }, async () => {
    const old = { id: (await stoppedByRefusal()).oldId };
    const failed = await eventually(settled, 'the load balancer to settle', 30_000, 250);
    assert.equal(failed!.provisioning_status, 'ERROR');
    assert.match(failed!.status_reason ?? '', /refused the configuration/);
    assert.doesNotMatch(failed!.status_reason ?? '', /\d+\.\d+\.\d+\.\d+|\/|[0-9a-f]{8}-[0-9a-f]{4}/, 'no address, path or id in the owner\'s reason');
    const built = (await amphoraRows()).filter((a) => a.id !== old.id);
    assert.equal(built.length, 1);
    assert.equal(built[0]!.status, 'ERROR');
    assert.match(built[0]!.status_reason ?? '', /push-config: .*400/, 'the amphora (an admin\'s) keeps the detail');

    await sleep(WATCH_MS);
    const jobs = await failoverJobs();
    const rows = await amphoraRows();
    console.log(`# ${jobs.length} failover job(s) and ${rows.length} amphora row(s) after ${WATCH_MS / 1000} s more`);
    assert.equal(jobs.length, 1, 'no failover after the refusal');
    assert.equal(rows.length, 2, 'no amphora built after the refusal');
    assert.equal((await lbRow()).provisioning_status, 'ERROR');
    const shown = await cli.json(DEMO, ['loadbalancer', 'show', String(lb.id)]);
    assert.equal(shown.provisioning_status, 'ERROR');
  });

  it("an operator's failover is one more attempt; with the configuration right again it restores the load balancer", { timeout: 300_000 }, async () => {
    await stoppedByRefusal();
    await eventually(settled, 'the load balancer to settle', 30_000, 250);
    await cli.ok(ADMIN, ['loadbalancer', 'failover', String(lb.id)]);
    await eventually(async () => (await failoverJobs()).filter((j) => j.state === 'failed').length === 2, "the operator's failover to fail the same way", 60_000, 250);
    assert.equal((await eventually(settled, 'the load balancer to settle', 30_000, 250))!.provisioning_status, 'ERROR');
    await sleep(WATCH_MS / 2);
    assert.equal((await failoverJobs()).length, 2, 'it too is not retried');

    await db.kysely.updateTable('listener').set({ connection_limit: -1 }).where('id', '=', listenerId).execute();
    await cli.ok(ADMIN, ['loadbalancer', 'failover', String(lb.id)]);
    const back = await eventually(async () => ((await lbRow()).provisioning_status === 'ACTIVE' ? lbRow() : undefined), 'the load balancer to be ACTIVE again', 90_000, 500);
    assert.equal(back!.status_reason, null);
    const serving = (await amphoraRows()).filter((a) => a.status === 'ALLOCATED');
    assert.equal(serving.length, 1);
    assert.equal((await db.kysely.selectFrom('failover_memory').selectAll().where('load_balancer_id', '=', String(lb.id)).execute()).length, 0, 'the memory is gone');
  });
});

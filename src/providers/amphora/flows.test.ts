/**
 * The amphora flows through the real API, worker and SQLite, with in-memory compute, CA and
 * agents: which steps run, what each leaves in the database, what a failure undoes, and that
 * a resumed job never builds a second amphora. (amphora-e2e.test.ts runs real processes.)
 */
import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { startHarness, admin, memberA, TEST_HEARTBEAT_SECRET, type Harness } from '../../../test/support/harness.js';
import { heartbeatKey } from './heartbeat-key.js';
import { VIP_SUBNET_ID } from '../../config.js';
import type { AmphoraConfig } from '../../domain/amphora-config.js';
import type { AmphoraSpec, ComputeDriver, ComputeStatus } from '../../compute/compute-driver.js';
import { LoopbackNetwork } from '../../network/loopback-network/loopback-network.js';
import { Worker } from '../../controller/worker.js';
import { readTrace } from '../../controller/trace.js';
import { ProviderRegistry } from '../registry.js';
import type { AgentApi, AmphoraDeps } from './deps.js';
import { amphoraDriver } from './driver.js';
import { ownerFailureReason } from './failures.js';
import { AgentHttpError } from '../../amphora-client/client.js';
import { OPERATOR_ONLY } from '../../api/resources/loadbalancer-status.js';

class FakeCompute implements ComputeDriver {
  readonly running = new Map<string, AmphoraSpec>();
  boots = 0;
  async boot(spec: AmphoraSpec): Promise<string> {
    this.boots++;
    this.running.set(`fake:${spec.amphoraId}`, spec);
    return `fake:${spec.amphoraId}`;
  }
  async started(): Promise<void> {}
  async status(computeId: string): Promise<ComputeStatus> {
    return this.running.has(computeId) ? 'running' : 'stopped';
  }
  async delete(computeId: string): Promise<void> {
    this.running.delete(computeId);
  }
  async list() {
    return [...this.running].map(([computeId, spec]) => ({ computeId, amphoraId: spec.amphoraId }));
  }
}

/** Agents that answer once their compute runs; `pushed` holds every config they received. */
class FakeAgents {
  pushed: AmphoraConfig[] = [];
  /** Set to make the next pushes fail, or waits hang until aborted. */
  failPush: Error | null = null;
  hang = false;
  constructor(private readonly compute: FakeCompute) {}

  client(amphoraId: string): AgentApi {
    const info = { amphoraId, apiVersion: '1.0', haproxyVersion: '2.6.12', configVersion: 0 };
    return {
      putCertificate: async () => undefined,
      putAcmeChallenge: async () => undefined,
      deleteAcmeChallenge: async () => undefined,
      putAcmeAlpnCertificate: async () => undefined,
      deleteAcmeAlpnCertificate: async () => undefined,
      info: async () => info,
      waitReady: async (signal) => {
        // A worker may stop before the step gets here: an abort that already happened must end the wait too.
        if (this.hang) await new Promise((_, reject) => (signal.aborted ? reject(signal.reason) : signal.addEventListener('abort', () => reject(signal.reason))));
        if (!(await this.compute.list()).some((c) => c.amphoraId === amphoraId)) throw new Error(`amphora ${amphoraId} does not run`);
        return info;
      },
      putConfig: async (config) => {
        if (this.failPush) throw this.failPush;
        this.pushed.push(config);
        return { version: config.version, applied: 'reload' };
      },
      close: () => undefined,
    };
  }
}

let h: Harness;
let worker: Worker | undefined;
let compute: FakeCompute;
let agents: FakeAgents;

function startWorker(): Worker {
  const deps: AmphoraDeps = {
    settings: h.config.amphora,
    dataPlane: true,
    activeStandby: false,
    compute,
    network: new LoopbackNetwork(h.config.amphora.managementNetwork),
    ca: {
      clientCaPem: 'client-ca',
      issueAmphoraCert: async () => ({ certPem: 'cert', keyPem: 'key', serial: 'abcd', notAfter: new Date('2030-01-02T03:04:05Z') }),
    },
    keyManager: h.runtime.keyManager,
    amphoraDir: (id) => `/nonexistent/${id}`,
    agent: async ({ id }) => agents.client(id),
  };
  const providers = new ProviderRegistry(['noop', 'amphora'], 'noop', { amphora: () => amphoraDriver(async () => deps) });
  const w = new Worker({ db: h.runtime.db, providers, signal: h.runtime.deps.jobs, log: pino({ level: 'silent' }), leaseMs: 2000, concurrency: 2 });
  w.start();
  return w;
}

before(async () => {
  h = await startHarness({ api: { enabledProviders: ['noop', 'amphora'] } });
  // Our worker, with the fakes, takes the harness's place.
  await h.runtime.worker?.close();
});
beforeEach(async () => {
  await worker?.close();
  compute = new FakeCompute();
  agents = new FakeAgents(compute);
  worker = startWorker();
});
after(async () => {
  // No beforeEach ran when a --test-name-pattern filtered every test out.
  await worker?.close();
  await h.close();
});

const db = () => h.runtime.db.kysely;

async function createLb(extra: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, provider: 'amphora', ...extra } }, as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  return r.json().loadbalancer;
}

const amphoraeOf = (lbId: string) => db().selectFrom('amphora').selectAll().where('load_balancer_id', '=', lbId).orderBy('created_at').execute();
const lbRow = (lbId: string) => db().selectFrom('load_balancer').selectAll().where('id', '=', lbId).executeTakeFirstOrThrow();
/** The step names of the load balancer's jobs of `operation`, sorted: steps started within one millisecond tie in the trace. */
const stepsOf = async (lbId: string, operation: string) => (await readTrace(h.runtime.db, lbId)).filter((t) => t.operation === operation).map((t) => t.step).sort();
const sorted = (steps: string[]) => [...steps].sort();

async function waitForStep(lbId: string, operation: string, step: string): Promise<void> {
  for (let i = 0; !(await stepsOf(lbId, operation)).includes(step); i++) {
    assert.ok(i < 500, `${step} never started`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('create: one STANDALONE amphora is built, configured and ALLOCATED; the load balancer is ACTIVE/ONLINE', async () => {
  const lb = await createLb({ listeners: [{ protocol: 'HTTP', protocol_port: 80, default_pool: { name: 'web', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members: [{ address: '127.32.0.1', protocol_port: 8080 }] } }] });
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  assert.deepEqual(await stepsOf(lb.id, 'loadbalancer.create'), sorted(['create-amphora', 'boot-compute', 'wait-for-agent', 'plug-vip', 'push-config', 'verify-certificates', 'mark-active']));
  const [amp, ...others] = await amphoraeOf(lb.id);
  assert.equal(others.length, 0);
  assert.equal(amp!.status, 'ALLOCATED');
  assert.equal(amp!.role, 'STANDALONE');
  assert.match(amp!.lb_network_ip!, /^127\.80\./);
  assert.equal(amp!.agent_url, `https://${amp!.lb_network_ip}:9443`);
  assert.equal(amp!.compute_id, `fake:${amp!.id}`);
  assert.equal(amp!.ha_ip, lb.vip_address);
  assert.equal(amp!.ha_port_id, lb.vip_port_id);
  assert.deepEqual([amp!.cert_serial, amp!.cert_expiration], ['abcd', '2030-01-02T03:04:05']);
  assert.equal(amp!.config_version, 1);
  assert.equal((await lbRow(lb.id)).config_version, 1);

  const spec = compute.running.get(amp!.compute_id!)!;
  assert.deepEqual(
    { ...spec, dir: undefined },
    {
      amphoraId: amp!.id, dir: undefined, managementAddress: amp!.lb_network_ip, agentPort: 9443, certPem: 'cert', keyPem: 'key', clientCaPem: 'client-ca',
      heartbeat: { key: heartbeatKey(TEST_HEARTBEAT_SECRET, amp!.id), targets: ['127.0.0.1:5555'], intervalMs: 1000 }, haproxyBinary: 'haproxy', maxconn: 8000,
    },
  );
  // Derived, never stored: nothing in the amphora's row is the key its agent signs with.
  assert.ok(!JSON.stringify(amp).includes(spec.heartbeat.key), 'the heartbeat key is stored in the amphora row');
  const [config] = agents.pushed;
  assert.equal(config!.amphoraId, amp!.id);
  assert.equal(config!.version, 1);
  assert.equal(config!.listeners[0]!.port, 80);
  assert.equal(config!.pools[0]!.members.length, 1);

  const got = (await h.request('GET', `/v2/lbaas/loadbalancers/${lb.id}/status`, { as: memberA })).json().statuses.loadbalancer;
  assert.equal(got.operating_status, 'ONLINE');
  assert.equal(got.listeners[0].operating_status, 'ONLINE');
  assert.equal(got.listeners[0].pools[0].operating_status, 'ONLINE');
  assert.equal(got.listeners[0].pools[0].members[0].operating_status, 'NO_MONITOR');
});

test('child changes push a newer version to the amphora in service, then settle', async () => {
  const lb = await createLb();
  await h.settled(lb.id);
  const listener = await h.request('POST', '/v2/lbaas/listeners', { body: { listener: { loadbalancer_id: lb.id, protocol: 'TCP', protocol_port: 22, admin_state_up: false } }, as: memberA });
  assert.equal(listener.statusCode, 201, listener.body);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  assert.deepEqual(await stepsOf(lb.id, 'listener.create'), sorted(['push-config', 'verify-certificates', 'settle']));
  const last = agents.pushed.at(-1)!;
  assert.equal(last.version, 2);
  assert.deepEqual(last.listeners.map((l) => [l.port, l.enabled]), [[22, false]]);
  const row = await db().selectFrom('listener').select(['provisioning_status', 'operating_status']).where('id', '=', listener.json().listener.id).executeTakeFirstOrThrow();
  assert.deepEqual(row, { provisioning_status: 'ACTIVE', operating_status: 'OFFLINE' });

  await h.request('DELETE', `/v2/lbaas/listeners/${listener.json().listener.id}`, { as: memberA });
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  assert.deepEqual(agents.pushed.at(-1)!.listeners, []);
  assert.equal((await amphoraeOf(lb.id))[0]!.config_version, 3);
});

test('operating statuses: what the job knows is set, what only heartbeats know is left to the health manager', async () => {
  const lb = await createLb({ pools: [{ name: 'p', protocol: 'TCP', lb_algorithm: 'ROUND_ROBIN', members: [{ address: '127.32.0.7', protocol_port: 80 }] }] });
  await h.settled(lb.id);
  const poolId = (await db().selectFrom('pool').select('id').where('load_balancer_id', '=', lb.id).executeTakeFirstOrThrow()).id;
  const member = () => db().selectFrom('member').select('operating_status').where('pool_id', '=', poolId).executeTakeFirstOrThrow();
  assert.equal((await member()).operating_status, 'NO_MONITOR');
  // The health manager's word, which a later job must not overwrite.
  await db().updateTable('member').set({ operating_status: 'ERROR' }).where('pool_id', '=', poolId).execute();
  const hm = await h.request('POST', '/v2/lbaas/healthmonitors', { body: { healthmonitor: { pool_id: poolId, type: 'TCP', delay: 1, timeout: 1, max_retries: 1 } }, as: memberA });
  assert.equal(hm.statusCode, 201, hm.body);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  assert.equal((await member()).operating_status, 'ERROR');
  const hmRow = await db().selectFrom('health_monitor').select(['operating_status', 'provisioning_status']).where('pool_id', '=', poolId).executeTakeFirstOrThrow();
  assert.deepEqual(hmRow, { operating_status: 'ONLINE', provisioning_status: 'ACTIVE' });
  assert.equal(agents.pushed.at(-1)!.pools[0]!.monitor!.type, 'TCP');
  // Without a monitor a member's status is known again.
  await h.request('DELETE', `/v2/lbaas/healthmonitors/${hm.json().healthmonitor.id}`, { as: memberA });
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  assert.equal((await member()).operating_status, 'NO_MONITOR');
  await h.request('PUT', `/v2/lbaas/loadbalancers/${lb.id}`, { body: { loadbalancer: { admin_state_up: false } }, as: memberA });
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  assert.equal((await lbRow(lb.id)).operating_status, 'OFFLINE');
  assert.equal(agents.pushed.at(-1)!.enabled, false);
});

test('a change the agent refuses puts only the changed object in ERROR: the load balancer stays usable and the object can be deleted', async () => {
  const lb = await createLb();
  await h.settled(lb.id);
  const detail = 'haproxy -c: [ALERT] parsing [/var/lib/ostia/amphorae/x/haproxy.cfg:12]';
  agents.failPush = new AgentHttpError(400, 'haproxy refused the configuration', detail, 'PUT /1.0/config');
  const listener = (await h.request('POST', '/v2/lbaas/listeners', { body: { listener: { loadbalancer_id: lb.id, protocol: 'HTTP', protocol_port: 80 } }, as: memberA })).json().listener;
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  const row = await lbRow(lb.id);
  assert.match(row.status_reason ?? '', new RegExp(`listener ${listener.id} was not applied: HAProxy refused`));
  assert.doesNotMatch(row.status_reason ?? '', /\/var|ALERT/);
  const shown = (await h.request('GET', `/v2/lbaas/listeners/${listener.id}`, { as: memberA })).json().listener;
  assert.equal(shown.provisioning_status, 'ERROR');
  assert.equal(shown.status_reason, row.status_reason);
  const [amp] = await amphoraeOf(lb.id);
  assert.equal(amp!.status, 'ALLOCATED');
  assert.match(amp!.status_reason ?? '', /\/var\/lib\/ostia/, 'the operator keeps the detail');
  const trace = (await h.request('GET', `/v2/lbaas/loadbalancers/${lb.id}/trace`, { as: memberA })).json().trace as Array<{ error: string | null }>;
  assert.ok(trace.some((s) => s.error === OPERATOR_ONLY));
  assert.ok(trace.every((s) => !s.error?.includes('/var/lib')), "the owner's trace holds no control-plane detail");
  const adminTrace = (await h.request('GET', `/v2/lbaas/loadbalancers/${lb.id}/trace`, { as: admin })).json().trace as Array<{ error: string | null }>;
  assert.ok(adminTrace.some((s) => s.error?.includes('/var/lib/ostia')));

  agents.failPush = null;
  assert.equal((await h.request('DELETE', `/v2/lbaas/listeners/${listener.id}`, { as: memberA })).statusCode, 204);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  assert.equal((await h.request('GET', `/v2/lbaas/listeners/${listener.id}`, { as: memberA })).statusCode, 404);
  assert.equal((await lbRow(lb.id)).status_reason, null);
});

test('a push that fails otherwise leaves the load balancer in ERROR: its owner reads the step, the amphora keeps the detail', async () => {
  const lb = await createLb();
  await h.settled(lb.id);
  agents.failPush = new Error('connect ECONNREFUSED 127.80.0.10:9443');
  await h.request('POST', '/v2/lbaas/listeners', { body: { listener: { loadbalancer_id: lb.id, protocol: 'HTTP', protocol_port: 80 } }, as: memberA });
  assert.equal(await h.settled(lb.id), 'ERROR');
  const row = await lbRow(lb.id);
  assert.equal(row.status_reason, ownerFailureReason('push-config', agents.failPush));
  assert.doesNotMatch(row.status_reason ?? '', /127\.80/);
  const [amp] = await amphoraeOf(lb.id);
  assert.equal(amp!.status, 'ALLOCATED');
  assert.equal(amp!.status_reason, 'push-config: connect ECONNREFUSED 127.80.0.10:9443');
});

test('a failed create reverts: no compute is left, the management address is freed, the amphora says why', async () => {
  agents.failPush = new Error('agent exploded');
  const lb = await createLb();
  assert.equal(await h.settled(lb.id), 'ERROR');
  assert.equal((await lbRow(lb.id)).status_reason, ownerFailureReason('push-config', new Error('agent exploded')));
  assert.deepEqual(await compute.list(), []);
  const [amp] = await amphoraeOf(lb.id);
  assert.equal(amp!.status, 'ERROR');
  assert.equal(amp!.status_reason, 'push-config: agent exploded');
  assert.equal(await db().selectFrom('port').select('id').where('device_id', '=', amp!.id).executeTakeFirst(), undefined);
  assert.deepEqual(await stepsOf(lb.id, 'loadbalancer.create'), sorted(['create-amphora', 'boot-compute', 'wait-for-agent', 'plug-vip', 'push-config', 'revert:plug-vip', 'revert:boot-compute', 'revert:create-amphora']));

  // The ERROR load balancer can be deleted: its failed amphora goes with it.
  agents.failPush = null;
  assert.equal((await h.request('DELETE', `/v2/lbaas/loadbalancers/${lb.id}`, { as: memberA })).statusCode, 204);
  assert.equal(await h.settled(lb.id), 'DELETED');
  assert.equal((await amphoraeOf(lb.id))[0]!.status, 'DELETED');
});

test('a job resumed after its worker stopped mid-wait boots no second amphora', async () => {
  agents.hang = true;
  const lb = await createLb();
  await waitForStep(lb.id, 'loadbalancer.create', 'wait-for-agent');
  await worker!.close();
  agents.hang = false;
  worker = startWorker();
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  assert.equal(compute.boots, 1);
  assert.equal((await amphoraeOf(lb.id)).length, 1);
  assert.deepEqual(await stepsOf(lb.id, 'loadbalancer.create'), sorted(['create-amphora', 'boot-compute', 'wait-for-agent', 'wait-for-agent', 'plug-vip', 'push-config', 'verify-certificates', 'mark-active']));
});

test('an amphora whose processes exit while booting fails the create at once, saying where to look', async () => {
  agents.hang = true;
  const lb = await createLb();
  await waitForStep(lb.id, 'loadbalancer.create', 'wait-for-agent');
  const [amp] = await amphoraeOf(lb.id);
  compute.running.clear();
  assert.equal(await h.settled(lb.id), 'ERROR');
  const detail = `wait-for-agent: the processes of amphora ${amp!.id} exited before its agent answered; see agent.log in /nonexistent/${amp!.id}`;
  assert.equal((await amphoraeOf(lb.id))[0]!.status_reason, detail);
  assert.match((await lbRow(lb.id)).status_reason ?? '', /^wait-for-agent failed: its amphora did not come up in time/);
});

test('amphora failover builds the replacement first, then retires the old one', async () => {
  const lb = await createLb({ listeners: [{ protocol: 'TCP', protocol_port: 443 }] });
  await h.settled(lb.id);
  const [old] = await amphoraeOf(lb.id);
  const r = await h.request('PUT', `/v2/octavia/amphorae/${old!.id}/failover`, { as: admin });
  assert.equal(r.statusCode, 202, r.body);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  assert.deepEqual(await stepsOf(lb.id, 'amphora.failover'), sorted(['create-amphora', 'boot-compute', 'wait-for-agent', 'plug-vip', 'push-config', 'retire-old-amphorae', 'mark-active']));
  // Both rows may share a created_at second: tell them apart by id.
  const both = await amphoraeOf(lb.id);
  assert.equal(both.length, 2);
  const retired = both.find((a) => a.id === old!.id);
  const replacement = both.find((a) => a.id !== old!.id);
  assert.equal(retired!.status, 'DELETED');
  assert.equal(replacement!.status, 'ALLOCATED');
  assert.notEqual(replacement!.lb_network_ip, old!.lb_network_ip);
  // The fake compute is shared by the file's tests: look only at this load balancer's amphorae.
  const running = (await compute.list()).map((c) => c.amphoraId);
  assert.ok(running.includes(replacement!.id) && !running.includes(old!.id), running.join(', '));
  assert.equal(await db().selectFrom('port').select('id').where('device_id', '=', old!.id).executeTakeFirst(), undefined);
  const last = agents.pushed.at(-1)!;
  assert.deepEqual([last.amphoraId, last.version, last.listeners[0]!.port], [replacement!.id, 2, 443]);

  // Load balancer failover replaces every amphora of it the same way.
  assert.equal((await h.request('PUT', `/v2/lbaas/loadbalancers/${lb.id}/failover`, { as: admin })).statusCode, 202);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  const all = await amphoraeOf(lb.id);
  // Amphorae made within one second tie on created_at: compare the multiset of statuses.
  assert.deepEqual(all.map((a) => a.status).sort(), ['ALLOCATED', 'DELETED', 'DELETED']);
  const live = all.find((a) => a.status === 'ALLOCATED')!;
  const stillRunning = (await compute.list()).map((c) => c.amphoraId);
  assert.ok(stillRunning.includes(live.id) && all.every((a) => a.status !== 'DELETED' || !stillRunning.includes(a.id)), stillRunning.join(', '));
});

test('amphora configure re-pushes without touching statuses; delete stops every amphora', async () => {
  const lb = await createLb();
  await h.settled(lb.id);
  const [amp] = await amphoraeOf(lb.id);
  assert.equal((await h.request('PUT', `/v2/octavia/amphorae/${amp!.id}/config`, { as: admin })).statusCode, 202);
  for (let i = 0; (await amphoraeOf(lb.id))[0]!.config_version !== 2; i++) {
    assert.ok(i < 500, 'configure never pushed');
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.deepEqual(await stepsOf(lb.id, 'amphora.config'), sorted(['push-config']));
  assert.equal((await lbRow(lb.id)).provisioning_status, 'ACTIVE');

  assert.equal((await h.request('DELETE', `/v2/lbaas/loadbalancers/${lb.id}`, { as: memberA })).statusCode, 204);
  assert.equal(await h.settled(lb.id), 'DELETED');
  assert.deepEqual(await compute.list(), []);
  assert.equal((await amphoraeOf(lb.id))[0]!.status, 'DELETED');
  assert.equal(await db().selectFrom('port').select('id').where('device_id', '=', amp!.id).executeTakeFirst(), undefined);
});

test('a migration that fails takes down what it built: the previous amphora serves on, the load balancer is ACTIVE with the reason', async () => {
  const lb = await createLb();
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  const [before] = await amphoraeOf(lb.id);
  const fp = await h.request('POST', '/v2/lbaas/flavorprofiles', { body: { flavorprofile: { name: 'big', provider_name: 'amphora', flavor_data: '{"compute_flavor": "big"}' } }, as: admin });
  const flavor = (await h.request('POST', '/v2/lbaas/flavors', { body: { flavor: { name: 'big', flavor_profile_id: fp.json().flavorprofile.id } }, as: admin })).json().flavor;
  agents.failPush = new Error('agent exploded');
  const r = await h.request('PUT', `/v2/lbaas/loadbalancers/${lb.id}/migrate`, { body: { migration: { flavor_id: flavor.id } }, as: memberA });
  assert.equal(r.statusCode, 202, r.body);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  const row = await lbRow(lb.id);
  assert.equal(row.flavor_id, null, 'the load balancer keeps its placement');
  assert.equal(row.status_reason, `the migration to flavor ${flavor.id} failed at push-config: agent exploded; it still serves from its previous amphorae. Migrate again, or see the job's trace.`);
  const amphorae = await amphoraeOf(lb.id);
  // Created within one second of each other: ordered by status, not by created_at.
  const seen = amphorae.map((a) => [a.id === before!.id, a.status, a.compute_flavor] as const).sort((a, b) => a[1].localeCompare(b[1]));
  assert.deepEqual(seen, [[true, 'ALLOCATED', null], [false, 'ERROR', 'big']]);
  assert.deepEqual((await compute.list()).map((c) => c.amphoraId), [before!.id], 'only the previous amphora runs');
  // A second try, the agents well again, moves it.
  agents.failPush = null;
  assert.equal((await h.request('PUT', `/v2/lbaas/loadbalancers/${lb.id}/migrate`, { body: { migration: { flavor_id: flavor.id } }, as: memberA })).statusCode, 202);
  assert.equal(await h.settled(lb.id), 'ACTIVE');
  assert.deepEqual([(await lbRow(lb.id)).flavor_id, (await lbRow(lb.id)).status_reason], [flavor.id, null]);
  assert.deepEqual((await amphoraeOf(lb.id)).filter((a) => a.status === 'ALLOCATED').map((a) => a.compute_flavor), ['big']);
});

test('every operation has its flow, steps in this order', () => {
  const driver = amphoraDriver(async () => assert.fail('no step runs here'));
  const names = (op: Parameters<typeof driver.flow>[0]) => driver.flow(op).steps.map((s) => s.name);
  const build = ['create-amphora', 'boot-compute', 'wait-for-agent', 'plug-vip', 'push-config'];
  assert.deepEqual(names('loadbalancer.create'), [...build, 'verify-certificates', 'mark-active']);
  // A pair's standby is replaced first, then its active; a STANDALONE amphora needs only the first round.
  assert.deepEqual(names('loadbalancer.failover'), [...build, 'retire-old-amphorae', ...build, 'retire-old-amphorae', 'mark-active']);
  assert.deepEqual(names('amphora.failover'), [...build, 'retire-old-amphorae', 'mark-active']);
  const move = [...build, 'claim-vip', 'retire-old-amphorae'];
  assert.deepEqual(names('loadbalancer.migrate'), [...move, ...move, 'push-config', 'mark-active']);
  assert.deepEqual(names('loadbalancer.delete'), ['stop-amphorae', 'settle']);
  assert.deepEqual(names('amphora.config'), ['push-config']);
  assert.deepEqual(names('amphora.delete'), ['delete-amphora']);
  for (const op of ['loadbalancer.update', 'listener.create', 'pool.delete', 'member.batch', 'healthmonitor.update', 'l7policy.create', 'l7rule.delete'] as const)
    assert.deepEqual(names(op), ['push-config', 'verify-certificates', 'settle']);
});

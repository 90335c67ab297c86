/**
 * Waiting without polling: `GET …?wait=N` and the event streams, on SQLite (the connection's own
 * triggers) and in the PostgreSQL pass (NOTIFY). Status changes are written straight into the
 * database, as any writer might, so what is tested is that the database announces them.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startHarness, admin, memberA, memberB, readerA, PROJECT_A, type Caller, type Harness } from './support/harness.js';
import { EventStreamClient, type StreamEvent } from '../src/tools/event-stream-client.js';
import { VIP_SUBNET_ID } from '../src/config.js';
import type { ProvisioningStatus } from '../src/domain/enums.js';
import { tempDir } from './support/amphora-fixtures.js';
import { startOstia } from './support/ostia-process.js';

const EVENT_TIMEOUT_MS = 20_000;

describe('waiting and event streams', () => {
  let h: Harness;
  let base: string;
  before(async () => {
    h = await startHarness();
    await h.runtime.app!.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(h.runtime.app!.server.address() as AddressInfo).port}`;
  });
  after(() => h.close());

  const headers = (as: Caller): Record<string, string> => ({ 'x-project-id': as.project!, 'x-roles': as.roles!.join(','), 'x-user-id': 'u-test' });
  const open = (path: string, as: Caller = memberA) => EventStreamClient.open(`${base}${path}`, headers(as));

  async function activeLoadBalancer(as: Caller = memberA): Promise<string> {
    const res = await h.request('POST', '/v2/lbaas/loadbalancers', { as, body: { loadbalancer: { vip_subnet_id: VIP_SUBNET_ID, name: 'waited' } } });
    assert.equal(res.statusCode, 201, res.body);
    const id = res.json().loadbalancer.id as string;
    assert.equal(await h.settled(id), 'ACTIVE');
    return id;
  }
  const setStatus = (id: string, provisioning_status: ProvisioningStatus) => h.runtime.db.kysely.updateTable('load_balancer').set({ provisioning_status }).where('id', '=', id).execute();
  const statusOf = (e: StreamEvent) => (e.data as { statuses: { loadbalancer: { provisioning_status: string } } }).statuses.loadbalancer.provisioning_status;

  it('holds a GET while the load balancer is PENDING_* and answers once a writer settles it', async () => {
    const id = await activeLoadBalancer();
    await setStatus(id, 'PENDING_UPDATE');
    let answered = false;
    const held = h.request('GET', `/v2/lbaas/loadbalancers/${id}?wait=30`, { as: memberA }).then((r) => ((answered = true), r));
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(answered, false, 'still held while PENDING_UPDATE');
    await setStatus(id, 'ACTIVE');
    const res = await held;
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().loadbalancer.provisioning_status, 'ACTIVE');
  });

  it('answers at once when nothing is pending, and after the wait with the object as it is', async () => {
    const id = await activeLoadBalancer();
    const now = await h.request('GET', `/v2/lbaas/loadbalancers/${id}?wait=30&fields=provisioning_status`, { as: memberA });
    assert.deepEqual(now.json(), { loadbalancer: { provisioning_status: 'ACTIVE' } });
    await setStatus(id, 'PENDING_UPDATE');
    const late = await h.request('GET', `/v2/lbaas/loadbalancers/${id}?wait=1`, { as: memberA });
    assert.equal(late.json().loadbalancer.provisioning_status, 'PENDING_UPDATE');
    await setStatus(id, 'ACTIVE');
  });

  it('ends a held GET with 404 when the object is deleted meanwhile, as a poller would see it', async () => {
    const id = await activeLoadBalancer();
    await setStatus(id, 'PENDING_DELETE');
    const held = h.request('GET', `/v2/lbaas/loadbalancers/${id}?wait=30`, { as: memberA });
    await new Promise((r) => setTimeout(r, 200));
    await setStatus(id, 'DELETED');
    assert.equal((await held).statusCode, 404);
  });

  it('waits on a child object through its load balancer', async () => {
    const id = await activeLoadBalancer();
    const created = await h.request('POST', '/v2/lbaas/listeners', { as: memberA, body: { listener: { loadbalancer_id: id, protocol: 'TCP', protocol_port: 80 } } });
    assert.equal(created.statusCode, 201, created.body);
    const listener = await h.request('GET', `/v2/lbaas/listeners/${created.json().listener.id}?wait=30`, { as: memberA });
    assert.equal(listener.json().listener.provisioning_status, 'ACTIVE');
  });

  it('refuses a wait that is not whole seconds up to the maximum, with Octavia\'s error body', async () => {
    const id = await activeLoadBalancer();
    for (const wait of ['-1', 'abc', '1.5', '56']) {
      const res = await h.request('GET', `/v2/lbaas/loadbalancers/${id}?wait=${wait}`, { as: memberA });
      assert.equal(res.statusCode, 400, wait);
      assert.match(res.json().faultstring, new RegExp(`Supplied wait '${wait.replace('.', '\\.')}' is not valid`));
    }
  });

  it('streams the status tree: the current one first, a change as it commits, and the deletion last', async () => {
    const id = await activeLoadBalancer();
    const stream = await open(`/v2/lbaas/loadbalancers/${id}/events`);
    try {
      const first = await stream.next(EVENT_TIMEOUT_MS);
      assert.equal(first.event, 'status');
      assert.equal(statusOf(first), 'ACTIVE');
      assert.equal((first.data as { statuses: { loadbalancer: { listeners: unknown[] } } }).statuses.loadbalancer.listeners.length, 0);
      await setStatus(id, 'PENDING_UPDATE');
      assert.equal(statusOf(await stream.next(EVENT_TIMEOUT_MS)), 'PENDING_UPDATE');
      await setStatus(id, 'ACTIVE');
      assert.equal(statusOf(await stream.next(EVENT_TIMEOUT_MS)), 'ACTIVE');
      assert.equal((await h.request('DELETE', `/v2/lbaas/loadbalancers/${id}`, { as: memberA })).statusCode, 204);
      const gone = await stream.until((e) => e.event !== 'status', EVENT_TIMEOUT_MS);
      assert.deepEqual(gone, { id: gone.id, event: 'deleted', data: { loadbalancer: { id } } });
      await assert.rejects(stream.next(EVENT_TIMEOUT_MS), /ended/);
    } finally {
      stream.close();
    }
  });

  it('streams a project\'s load balancers to its members and no other project\'s', async () => {
    const mine = await open('/v2/ostia/events', memberA);
    const theirs = await open('/v2/ostia/events', memberB);
    try {
      assert.deepEqual((await mine.next(EVENT_TIMEOUT_MS)).data, { project_id: PROJECT_A });
      assert.equal((await theirs.next(EVENT_TIMEOUT_MS)).event, 'ready');
      const id = await activeLoadBalancer(memberA);
      const seen = await mine.until((e) => e.event === 'loadbalancer' && (e.data as { loadbalancer: { provisioning_status: string } }).loadbalancer.provisioning_status === 'ACTIVE', EVENT_TIMEOUT_MS);
      assert.deepEqual(Object.keys((seen.data as { loadbalancer: object }).loadbalancer).sort(), ['id', 'name', 'operating_status', 'project_id', 'provisioning_status']);
      assert.equal((seen.data as { loadbalancer: { id: string } }).loadbalancer.id, id);
      await assert.rejects(theirs.next(1000), /no event within/);
    } finally {
      mine.close();
      theirs.close();
    }
  });

  it('authorizes a stream as its GET: another project\'s load balancer and another project\'s stream are refused', async () => {
    const id = await activeLoadBalancer(memberA);
    await assert.rejects(open(`/v2/lbaas/loadbalancers/${id}/events`, memberB), /HTTP 403 .*Policy does not allow/);
    await assert.rejects(open(`/v2/ostia/events?project_id=${PROJECT_A}`, memberB), /HTTP 403/);
    await assert.rejects(open('/v2/lbaas/loadbalancers/00000000-0000-4000-8000-000000000000/events', memberA), /HTTP 404/);
    const observer = await open(`/v2/lbaas/loadbalancers/${id}/events`, readerA);
    observer.close();
    const everyone = await open('/v2/ostia/events', admin);
    assert.deepEqual((await everyone.next(EVENT_TIMEOUT_MS)).data, { project_id: null });
    everyone.close();
  });

  it('answers EventSource\'s Accept on a stream, and refuses it elsewhere', async () => {
    const id = await activeLoadBalancer();
    const res = await fetch(`${base}/v2/lbaas/loadbalancers/${id}`, { headers: { ...headers(memberA), accept: 'text/event-stream' } });
    assert.equal(res.status, 406);
    const stream = await fetch(`${base}/v2/lbaas/loadbalancers/${id}/events`, { headers: { ...headers(memberA), accept: 'text/event-stream' } });
    assert.equal(stream.status, 200);
    assert.match(stream.headers.get('content-type')!, /^text\/event-stream/);
    await stream.body!.cancel();
  });
});

describe('an event stream and its caller\'s token', () => {
  it('ends with the 401 a GET would get once the token is revoked', { timeout: 120_000 }, async (t) => {
    const dir = tempDir('events-token');
    t.after(() => dir.remove());
    const config = join(dir.path, 'ostia.json');
    writeFileSync(config, JSON.stringify({ api: { enabledProviders: ['noop'], defaultProvider: 'noop', eventStreamRecheckSeconds: 1 } }));
    const ostia = await startOstia({ extraArgs: ['--config', config] });
    t.after(() => ostia.stop());
    const token = await ostia.token('ostia-demo');
    const stream = await EventStreamClient.open(`${ostia.url}/v2/ostia/events`, { 'x-auth-token': token });
    t.after(() => stream.close());
    assert.equal((await stream.next(EVENT_TIMEOUT_MS)).event, 'ready');
    const revoked = await fetch(`${ostia.url}/identity/v3/auth/tokens`, { method: 'DELETE', headers: { 'x-auth-token': token, 'x-subject-token': token } });
    assert.equal(revoked.status, 204, await revoked.text());
    const last = await stream.until((e) => e.event === 'error', EVENT_TIMEOUT_MS);
    assert.equal((last.data as { error: { code: number } }).error.code, 401, JSON.stringify(last.data));
    await assert.rejects(stream.next(EVENT_TIMEOUT_MS), /ended/);
  });
});

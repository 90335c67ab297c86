/**
 * End to end with the real openstacksdk (Debian's 0.101, run by /usr/bin/python3 because a
 * pyenv `python3` shadows it on PATH) against a real `ostia up`: test/sdk/lifecycle.py drives
 * load balancers, listeners, pools, members and health monitors through create, get, list,
 * update and delete with the SDK's own waiters, and prints JSON snapshots asserted here.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pythonClientEnv, repoRoot, startOstia, type OstiaProcess } from './support/ostia-process.js';
import { unmet } from './support/requirements.js';

const PYTHON = '/usr/bin/python3';
const SCRIPT = join(repoRoot(), 'test', 'sdk', 'lifecycle.py');
const RUN_TIMEOUT_MS = 180_000;

type Obj = Record<string, unknown>;

function runLifecycle(ostia: OstiaProcess, cloud: string, vipSubnet: string, memberSubnet: string): Promise<Record<string, Obj>> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, [SCRIPT, cloud, vipSubnet, memberSubnet], { stdio: ['ignore', 'pipe', 'pipe'], env: pythonClientEnv(ostia.cloudsYaml) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`lifecycle.py did not finish within ${RUN_TIMEOUT_MS} ms\n${stderr}`));
    }, RUN_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`lifecycle.py exited ${code}\nstderr:\n${stderr}\nstdout:\n${stdout}`));
      try {
        resolve(JSON.parse(stdout));
      } catch {
        reject(new Error(`lifecycle.py printed no JSON:\n${stdout}\n${stderr}`));
      }
    });
  });
}

const ids = (v: unknown) => (v as Array<{ id: string }>).map((x) => x.id);

describe('openstacksdk against ostia up', { skip: unmet('openstacksdk') }, () => {
  let ostia: OstiaProcess;
  let out: Record<string, Obj>;
  let vipSubnet: string;
  let memberSubnet: string;

  before(async () => {
    ostia = await startOstia();
    vipSubnet = await ostia.subnetId('public-subnet');
    memberSubnet = await ostia.subnetId('private-subnet');
    out = await runLifecycle(ostia, 'ostia-demo', vipSubnet, memberSubnet);
  });

  after(async () => {
    await ostia?.stop();
  });

  it('creates a load balancer that the waiter sees go ACTIVE', () => {
    const created = out.lb_created!;
    assert.equal(created.provisioning_status, 'PENDING_CREATE');
    assert.equal(created.operating_status, 'OFFLINE');
    assert.equal(created.name, 'sdk-lb');
    assert.equal(created.description, 'made by openstacksdk');
    assert.equal(created.vip_subnet_id, vipSubnet);
    assert.equal(created.admin_state_up, true);
    assert.equal(created.provider, 'noop');
    assert.deepEqual(created.tags, ['sdk']);
    assert.deepEqual(created.listeners, []);
    assert.equal(created.updated_at, null);
    assert.equal(out.lb_active!.provisioning_status, 'ACTIVE');
    assert.equal(out.lb_active!.id, created.id);
    assert.deepEqual(out.lb_get, out.lb_active);
    assert.equal(out.lb_find!.id, created.id);
    assert.deepEqual(out.lb_list_ids, [created.id]);
  });

  it('updates the load balancer', () => {
    assert.equal(out.lb_updated!.description, 'updated by openstacksdk');
    assert.deepEqual([...(out.lb_updated!.tags as string[])].sort(), ['sdk', 'v2']);
    assert.equal(out.lb_updated!.provisioning_status, 'ACTIVE');
  });

  it('creates, lists and updates a listener', () => {
    const l = out.listener_created!;
    assert.equal(l.provisioning_status, 'PENDING_CREATE');
    assert.equal(l.protocol, 'HTTP');
    assert.equal(l.protocol_port, 8080);
    assert.equal(l.connection_limit, 500);
    assert.deepEqual(ids(l.loadbalancers), [out.lb_created!.id]);
    assert.deepEqual(out.listener_list_ids, [l.id]);
    const u = out.listener_updated!;
    assert.equal(u.connection_limit, 1000);
    assert.equal(u.description, 'sdk listener');
    assert.equal(u.provisioning_status, 'ACTIVE');
    assert.equal(u.default_pool_id, null);
    assert.equal(out.listener_with_pool!.default_pool_id, out.pool_created!.id);
  });

  it('creates, lists and updates a pool', () => {
    const p = out.pool_created!;
    assert.equal(p.provisioning_status, 'PENDING_CREATE');
    assert.equal(p.protocol, 'HTTP');
    assert.equal(p.lb_algorithm, 'ROUND_ROBIN');
    assert.deepEqual(ids(p.listeners), [out.listener_created!.id]);
    assert.deepEqual(ids(p.loadbalancers), [out.lb_created!.id]);
    assert.equal((p.session_persistence as Obj).type, 'HTTP_COOKIE');
    assert.equal((p.session_persistence as Obj).cookie_name, null);
    assert.deepEqual(out.pool_list_ids, [p.id]);
    const u = out.pool_updated!;
    assert.equal(u.lb_algorithm, 'SOURCE_IP');
    assert.equal(u.name, 'sdk-pool-2');
    assert.equal(u.provisioning_status, 'ACTIVE');
    assert.deepEqual(ids(u.members), []);
    const full = out.pool_with_children!;
    assert.equal(ids(full.members).length, 2);
    assert.equal(full.healthmonitor_id, out.hm_created!.id);
    assert.deepEqual(ids(out.lb_with_children!.listeners), [out.listener_created!.id]);
    assert.deepEqual(ids(out.lb_with_children!.pools), [p.id]);
  });

  it('creates, gets, lists and updates members', () => {
    const m = out.member_created!;
    assert.equal(m.provisioning_status, 'PENDING_CREATE');
    assert.equal(m.operating_status, 'NO_MONITOR');
    assert.equal(m.address, '127.32.0.41');
    assert.equal(m.protocol_port, 80);
    assert.equal(m.weight, 3);
    assert.equal(m.subnet_id, memberSubnet);
    assert.equal(m.backup, false);
    assert.equal(out.member_get!.id, m.id);
    assert.equal(out.member_get!.provisioning_status, 'ACTIVE');
    assert.deepEqual(out.member_list, ['127.32.0.41', '127.32.0.42']);
    assert.equal(out.member_updated!.weight, 7);
    assert.equal(out.member_updated!.name, 'sdk-member');
  });

  it('creates, gets, lists and updates a health monitor', () => {
    const hm = out.hm_created!;
    assert.equal(hm.provisioning_status, 'PENDING_CREATE');
    assert.equal(hm.type, 'HTTP');
    assert.equal(hm.delay, 5);
    assert.equal(hm.timeout, 3);
    assert.equal(hm.max_retries, 2);
    assert.equal(hm.max_retries_down, 3);
    assert.equal(hm.url_path, '/health');
    assert.equal(hm.http_method, 'GET');
    assert.equal(hm.expected_codes, '200');
    assert.deepEqual(ids(hm.pools), [out.pool_created!.id]);
    assert.equal(out.hm_get!.provisioning_status, 'ACTIVE');
    assert.deepEqual(out.hm_list_ids, [hm.id]);
    assert.equal(out.hm_updated!.delay, 9);
    assert.equal(out.hm_updated!.expected_codes, '200-299');
  });

  it('reads load balancer statistics', () => {
    const stats = out.lb_stats!;
    for (const k of ['active_connections', 'bytes_in', 'bytes_out', 'request_errors', 'total_connections']) assert.equal(stats[k], 0, k);
  });

  it('deletes every object, the load balancer last with cascade', () => {
    assert.equal(out.hm_after_delete, true);
    assert.deepEqual(out.member_list_after_delete, [out.member_created!.id]);
    assert.equal(out.pool_after_delete, true);
    assert.equal(out.listener_after_delete, true);
    assert.equal(out.lb_after_delete, true);
  });
});

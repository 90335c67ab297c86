/**
 * The operator tools against the production shape: `ostia api`, `ostia worker` and `ostia health` as
 * separate processes on PostgreSQL, with a real amphora (HAProxy and agent) built by the worker. Each tool
 * runs as an operator runs it beside those roles: plan, advise and audit read the database, doctor probes
 * the amphora the worker built, baseline drives the API. The PostgreSQL pass only: the roles need it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { XMLValidator } from 'fast-xml-parser';
import { VIP_SUBNET_ID } from '../src/config.js';
import { writeAmphoraConfig } from './support/amphora-config.js';
import { freeTcpPort } from './support/amphora-fixtures.js';
import { keystoneToken, runOstiaWithin } from './support/ostia-process.js';
import { freshPostgresDatabase } from './support/postgres.js';
import { postgresPassOnly, unmet } from './support/requirements.js';
import { startRole, stopRole, type Role } from './support/role-process.js';

const SERVER_URL = process.env.OSTIA_TEST_DATABASE_URL;
const TOOL_TIMEOUT_MS = 120_000;
const BASELINE_TIMEOUT_MS = 400_000;

describe('operator tools beside ostia api, worker and health on PostgreSQL', { skip: postgresPassOnly() || unmet('haproxy') || unmet('wrk') }, () => {
  let dir: string;
  let config: string;
  let database: { url: string; drop(): Promise<void> };
  const roles: Role[] = [];
  let lbId: string;
  const common = () => ['--config', config, '--data-dir', join(dir, 'd'), '--database-url', database.url];
  const tool = async (timeoutMs: number, ...args: string[]) => {
    const r = await runOstiaWithin(timeoutMs, ...args);
    return { ...r, json: () => JSON.parse(r.stdout) as Record<string, unknown> };
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ot-'));
    // One config file for every role: the API's port is in it, as the references its key manager hands out name it.
    config = await writeAmphoraConfig(dir, { api: { port: await freeTcpPort() }, amphora: { heartbeatSecret: randomBytes(32).toString('hex') }, keyManager: { encryptionKey: randomBytes(32).toString('base64') } });
    database = await freshPostgresDatabase(SERVER_URL!);
    // Short: HAProxy's socket paths under the data directory must fit 97 bytes.
    const data = join(dir, 'd');
    roles.push(await startRole(['api', '--config', config, '--data-dir', data, '--database-url', database.url]));
    roles.push(await startRole(['worker', '--config', config, '--data-dir', data, '--database-url', database.url]));
    roles.push(await startRole(['health', '--config', config, '--data-dir', data, '--database-url', database.url]));
    const url = roles[0]!.announced.url!;
    const token = await keystoneToken({ auth_url: `${url}/identity/v3`, username: 'demo', password: 'secret', project_name: 'demo' });
    const created = await fetch(`${url}/v2/lbaas/loadbalancers`, {
      method: 'POST',
      headers: { 'x-auth-token': token, 'content-type': 'application/json' },
      body: JSON.stringify({
        loadbalancer: { name: 'tools', vip_subnet_id: VIP_SUBNET_ID, listeners: [{ protocol: 'HTTP', protocol_port: 80, default_pool: { name: 'web', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN' } }] },
      }),
    });
    assert.equal(created.status, 201, await created.clone().text());
    lbId = ((await created.json()) as { loadbalancer: { id: string } }).loadbalancer.id;
    const deadline = Date.now() + 120_000;
    for (;;) {
      const shown = (await (await fetch(`${url}/v2/lbaas/loadbalancers/${lbId}`, { headers: { 'x-auth-token': token } })).json()) as { loadbalancer: { provisioning_status: string } };
      const status = shown.loadbalancer.provisioning_status;
      if (status === 'ACTIVE') break;
      assert.ok(!status.startsWith('ERROR') && Date.now() < deadline, `load balancer ${status}: ${roles[1]!.stderr().slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  });

  after(async () => {
    // Amphorae outlive the worker by design: the load balancer is deleted, and its amphora with it, before the roles stop.
    const url = roles[0]?.announced.url;
    if (url && lbId) {
      const token = await keystoneToken({ auth_url: `${url}/identity/v3`, username: 'demo', password: 'secret', project_name: 'demo' }).catch(() => null);
      if (token) await fetch(`${url}/v2/lbaas/loadbalancers/${lbId}?cascade=true`, { method: 'DELETE', headers: { 'x-auth-token': token } }).catch(() => undefined);
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline && existsSync(join(dir, 'data', 'amphorae')) && readdirCount(join(dir, 'data', 'amphorae')) > 0) await new Promise((r) => setTimeout(r, 200));
    }
    for (const role of roles.reverse()) await stopRole(role);
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('plan --from-live counts the worker-built amphora and the create it measured', async () => {
    const picture = join(dir, 'plan.svg');
    const r = await tool(TOOL_TIMEOUT_MS, 'plan', '--from-live', ...common(), '--json', '--picture', picture);
    assert.equal(r.code, 0, r.stderr);
    const result = r.json() as { classes: Array<{ provider: string; count: number; total: { amphorae: number }; measured: { create: { count: number } | null } }> };
    const amphora = result.classes.find((c) => c.provider === 'amphora')!;
    assert.equal(amphora.count, 1);
    assert.equal(amphora.total.amphorae, 1);
    assert.ok(amphora.measured.create !== null && amphora.measured.create.count >= 1, r.stdout);
    assert.equal(XMLValidator.validate(readFileSync(picture, 'utf8')), true);
  });

  it('advise --from-live puts the HTTP load balancer to the OVN provider, which refuses it', async () => {
    const r = await tool(TOOL_TIMEOUT_MS, 'advise', '--from-live', ...common(), '--json');
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stdout, new RegExp(lbId));
    assert.match(r.stdout, /HTTP/);
  });

  it('audit reads the roles database: nothing exposed', async () => {
    const r = await tool(TOOL_TIMEOUT_MS, 'audit', ...common(), '--json');
    assert.equal(r.code, 0, r.stderr);
  });

  it('doctor probes the amphora the worker built and boots a throw-away one: no check fails', async () => {
    const r = await tool(TOOL_TIMEOUT_MS, 'doctor', ...common(), '--boot-test', '--json');
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    const rows = (r.json() as { checks: Array<{ check: string; target: string; result: string }> }).checks;
    assert.ok(rows.some((c) => c.check === 'agent API' && c.result === 'ok'), JSON.stringify(rows));
    assert.ok(rows.some((c) => c.check === 'heartbeat' && c.result === 'ok'), JSON.stringify(rows));
  });

  it('baseline drives the api role: load, a failover, stored', async () => {
    const store = join(dir, 'baselines');
    const r = await tool(BASELINE_TIMEOUT_MS, 'baseline', '--config', config, '--data-dir', join(dir, 'd'), '--store', store, '--duration', '1', '--connections', '4', '--json');
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}\nworker: ${roles[1]!.stderr().slice(-4000)}`);
    const result = r.json() as { stored: string; comparison: { previous: string | null } };
    assert.ok(result.stored.startsWith(store) && existsSync(result.stored), result.stored);
    assert.equal(result.comparison.previous, null);
  });
});

function readdirCount(path: string): number {
  try {
    return readdirSync(path).length;
  } catch {
    return 0;
  }
}

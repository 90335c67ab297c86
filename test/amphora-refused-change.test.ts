/**
 * A change its amphora cannot load never wedges the load balancer, end to end with real
 * amphorae (agent + HAProxy): the amphora keeps serving its previous configuration, the changed
 * object goes to ERROR with a reason its owner can read, the load balancer is ACTIVE again, and
 * the object can be fixed or deleted at once. Two real refusals: a listener on a port something
 * else on the host holds (HAProxy cannot start with it: the agent's 500), and a value HAProxy
 * refuses written past the API (`haproxy -c`: the agent's 400).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killAll, processesUnder, startOstia, type OstiaProcess } from './support/ostia-process.js';
import { unmet } from './support/requirements.js';
import { writeAmphoraConfig } from './support/amphora-config.js';
import { OpenstackCli } from './support/openstack-cli.js';
import { eventually, httpGet, randomPort } from './support/amphora-fixtures.js';
import { openDatabase, type Db } from '../src/db/database.js';

const DEMO = 'ostia-demo';
/** Past what HAProxy accepts for a maxconn: written straight into the database, as a value the API once took. */
const UNLOADABLE_LIMIT = 2 ** 53;

describe('a change the amphora refuses', { skip: unmet('openstack-cli'), concurrency: 1 }, () => {
  let ostia: OstiaProcess;
  let cli: OpenstackCli;
  let configDir: string;
  let db: Db;

  before(async () => {
    configDir = mkdtempSync(join(tmpdir(), 'ostia-refused-change-'));
    ostia = await startOstia({ extraArgs: ['--config', await writeAmphoraConfig(configDir)] });
    cli = new OpenstackCli(ostia.cloudsYaml, { concurrency: 2 });
    db = await openDatabase(`sqlite:${join(ostia.dataDir, 'ostia.db')}`);
  });

  after(async () => {
    await db?.close();
    if (ostia) {
      killAll(processesUnder(join(ostia.dataDir, 'amphorae')));
      await ostia.stop();
    }
    if (configDir) rmSync(configDir, { recursive: true, force: true });
  });

  const row = (table: 'load_balancer' | 'listener', id: string) =>
    db.kysely.selectFrom(table).select(['provisioning_status', 'status_reason']).where('id', '=', id).executeTakeFirst();
  const settled = async (lbId: string) => {
    const lb = await row('load_balancer', lbId);
    return lb && !lb.provisioning_status.startsWith('PENDING_') ? lb : undefined;
  };
  const failovers = (lbId: string) =>
    db.kysely.selectFrom('job').select('id').where('load_balancer_id', '=', lbId).where('operation', 'in', ['amphora.failover', 'loadbalancer.failover']).execute();

  /** A load balancer with one HTTP listener (no pool: HAProxy answers 503 itself), serving. */
  async function servingLoadBalancer(name: string): Promise<{ lbId: string; vip: string; listenerId: string; port: number }> {
    const lb = await cli.json(DEMO, ['loadbalancer', 'create', '--name', name, '--provider', 'amphora', '--vip-subnet-id', 'public-subnet', '--wait']);
    const port = randomPort();
    const listener = await cli.json(DEMO, ['loadbalancer', 'listener', 'create', String(lb.id), '--protocol', 'HTTP', '--protocol-port', String(port), '--wait']);
    const vip = String(lb.vip_address);
    assert.equal((await eventually(() => httpGet(vip, port).catch(() => undefined), 'the first listener to answer', 30_000, 100))!.status, 503);
    return { lbId: String(lb.id), vip, listenerId: String(listener.id), port };
  }

  /** What the owner is told, checked for the control plane's detail. */
  function assertOwnerReason(reason: string | null | undefined, objectId: string, cause: RegExp): void {
    assert.match(reason ?? '', new RegExp(`listener ${objectId} was not applied`));
    assert.match(reason ?? '', cause);
    assert.doesNotMatch(reason ?? '', /\/var|\/tmp|haproxy\.cfg|ALERT|127\.\d+\.\d+\.\d+:\d+/, "no path or management address in the owner's reason");
  }

  it('a listener on a port the host holds goes to ERROR; the others keep serving; it can be deleted and the load balancer changed', { timeout: 300_000 }, async () => {
    const { lbId, vip, port } = await servingLoadBalancer('port-held');
    const held: Server = createServer();
    const heldPort = randomPort();
    await new Promise<void>((resolve, reject) => held.once('error', reject).listen(heldPort, '0.0.0.0', resolve));
    try {
      const blocked = await cli.json(DEMO, ['loadbalancer', 'listener', 'create', lbId, '--protocol', 'HTTP', '--protocol-port', String(heldPort)]);
      const lb = await eventually(() => settled(lbId), 'the load balancer to settle', 60_000, 100);
      assert.equal(lb!.provisioning_status, 'ACTIVE');
      const listener = await row('listener', String(blocked.id));
      assert.equal(listener!.provisioning_status, 'ERROR');
      assertOwnerReason(lb!.status_reason, String(blocked.id), /could not start/);
      assert.equal(listener!.status_reason, lb!.status_reason);
      assert.equal((await httpGet(vip, port)).status, 503, 'the previous configuration still serves');

      await cli.ok(DEMO, ['loadbalancer', 'listener', 'delete', String(blocked.id)]);
      await eventually(async () => (await row('listener', String(blocked.id))) === undefined, 'the listener in ERROR to be deleted', 60_000, 100);
      const another = randomPort();
      await cli.json(DEMO, ['loadbalancer', 'listener', 'create', lbId, '--protocol', 'HTTP', '--protocol-port', String(another), '--wait']);
      assert.equal((await eventually(() => httpGet(vip, another).catch(() => undefined), 'the new listener to answer', 30_000, 100))!.status, 503);
      assert.equal((await row('load_balancer', lbId))!.status_reason, null);
      assert.equal((await failovers(lbId)).length, 0, 'a refused change is no reason to fail over');
    } finally {
      held.close();
    }
  });

  it('a listener whose value HAProxy refuses goes to ERROR while the amphora serves its previous version; it can be fixed', { timeout: 300_000 }, async () => {
    const { lbId, vip, listenerId, port } = await servingLoadBalancer('value-refused');
    // Past the API, which refuses it: the agent's `haproxy -c` is the wall this checks.
    await db.kysely.updateTable('listener').set({ connection_limit: UNLOADABLE_LIMIT }).where('id', '=', listenerId).execute();
    await cli.ok(DEMO, ['loadbalancer', 'listener', 'set', listenerId, '--name', 'renamed']);
    await eventually(async () => (await row('listener', listenerId))?.provisioning_status === 'ERROR', 'the listener to be in ERROR', 60_000, 100);
    const lb = await eventually(() => settled(lbId), 'the load balancer to settle', 60_000, 100);
    assert.equal(lb!.provisioning_status, 'ACTIVE');
    assertOwnerReason(lb!.status_reason, listenerId, /HAProxy refused/);
    assert.equal((await httpGet(vip, port)).status, 503, 'the previous configuration still serves');
    const shown = await cli.json(DEMO, ['loadbalancer', 'listener', 'show', listenerId]);
    assert.equal(shown.provisioning_status, 'ERROR');

    await cli.ok(DEMO, ['loadbalancer', 'listener', 'set', listenerId, '--connection-limit', '100']);
    await eventually(async () => (await row('listener', listenerId))?.provisioning_status === 'ACTIVE', 'the fixed listener to be ACTIVE', 60_000, 100);
    assert.equal((await row('listener', listenerId))!.status_reason, null);
    assert.equal((await failovers(lbId)).length, 0);
  });
});

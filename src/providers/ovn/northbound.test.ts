/**
 * The Northbound sync against a real ovsdb-server (ovn-nbctl as the oracle): a change is one
 * transaction and a repeated sync sends nothing; rows edited or deleted behind its back are
 * rewritten; a writer that changed the rows between our read and our write makes us re-read;
 * an old schema without health checks is served without them, and a monitor on it is refused
 * with the upstream text.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../../config.js';
import { HEALTH_CHECK_UNSUPPORTED_TEXT } from '../../ovn/ovsdb/index.js';
import { NB_SCHEMA, TestOvsdbServer, schemaWithout } from '../../../test/support/ovsdb-server.js';
import { desiredState, type NetworkView } from './desired.js';
import type { OvnLoadBalancer } from './nb-rows.js';
import { Northbound } from './northbound.js';
import type { OvnTree } from './tree.js';
import { unmet } from '../../../test/support/requirements.js';

const LB_ID = '6ea2c3a1-0000-4000-8000-0000000000aa';
const NET = '1f0e2d3c-0000-4000-8000-000000000001';
const SUBNET = '2a1b3c4d-0000-4000-8000-000000000001';
const SWITCH = `neutron-${NET}`;
const network: NetworkView = {
  subnet: (id) => (id === SUBNET ? { id, cidr: '10.0.0.0/24', networkId: NET } : undefined),
  switchName: (id) => (id === NET ? SWITCH : undefined),
};

function tree(patch: Partial<OvnLoadBalancer> = {}, monitored = false): Omit<OvnTree, 'observed'> {
  const lb: OvnLoadBalancer = {
    id: LB_ID,
    enabled: true,
    vip: '10.0.0.100',
    vipPortId: '55555555-0000-4000-8000-000000000001',
    additionalVips: [],
    listeners: [{ id: 'l1', protocol: 'TCP', port: 80, enabled: true, defaultPoolId: 'p1' }],
    pools: [{ id: 'p1', protocol: 'TCP', algorithm: 'SOURCE_IP_PORT', enabled: true, affinityTimeout: null, healthMonitorId: monitored ? 'hm1' : null, members: [{ id: 'm1', address: '10.0.0.11', port: 8080, subnetId: SUBNET, enabled: true }] }],
    memberStatus: {},
    ...patch,
  };
  return { lb, vipSubnetId: SUBNET, monitors: monitored ? [{ id: 'hm1', poolId: 'p1', interval: 5, timeout: 3, successCount: 2, failureCount: 2 }] : [] };
}

async function open(server: TestOvsdbServer): Promise<Northbound> {
  return Northbound.open({ ...defaultConfig('/nonexistent').ovn, nbConnection: server.unixRemote, sbConnection: server.unixRemote });
}

const skip = unmet('ovsdb');
const nbctl = async (server: TestOvsdbServer, ...args: string[]) => (await server.nbctl(...args)).trim();

test('one transaction per change, nothing when in sync, rows rewritten when changed behind our back', { skip, timeout: 60_000 }, async () => {
  const server = await TestOvsdbServer.start();
  const nb = await open(server);
  try {
    await nbctl(server, 'ls-add', SWITCH, '--', 'lsp-add', SWITCH, 'be1', '--', 'lsp-set-addresses', 'be1', '0a:00:00:00:00:11 10.0.0.11');
    const desired = async (t = tree()) => desiredState(t, nb.topology, network, new Map([[SUBNET, { subnetId: SUBNET, ip: '10.0.0.2' }]]));
    const first = await nb.sync(LB_ID, () => desired());
    assert.equal(first.attempts, 1);
    assert.equal(nb.stats.transactions, 1);
    assert.equal(await nbctl(server, '--bare', '--columns=vips', 'find', 'Load_Balancer', `name=${LB_ID}`), '10.0.0.100:80=10.0.0.11:8080');
    assert.equal(await nbctl(server, '--bare', '--columns=name', 'list', 'Logical_Switch_Port', '55555555-0000-4000-8000-000000000001'), '55555555-0000-4000-8000-000000000001');

    assert.equal((await nb.sync(LB_ID, () => desired())).operations, 0);
    assert.equal(nb.stats.transactions, 1);

    // Another client edits the row and removes the attachment: the next sync puts both back.
    await nbctl(server, 'set', 'Load_Balancer', LB_ID, 'vips={}', '--', 'ls-lb-del', SWITCH, LB_ID);
    const repaired = await nb.sync(LB_ID, () => desired(), true);
    assert.ok(repaired.operations > 0);
    assert.equal(await nbctl(server, '--bare', '--columns=vips', 'find', 'Load_Balancer', `name=${LB_ID}`), '10.0.0.100:80=10.0.0.11:8080');
    assert.notEqual(await nbctl(server, '--bare', '--columns=load_balancer', 'list', 'Logical_Switch', SWITCH), '');

    // A writer that gets in between our read and our write: our wait fails, we re-read and write on top.
    let raced = false;
    const racing = await nb.sync(LB_ID, async () => {
      if (!raced) {
        raced = true;
        await nbctl(server, 'set', 'Load_Balancer', LB_ID, 'external_ids:intruder=1');
      }
      return desired(tree({ listeners: [{ id: 'l1', protocol: 'TCP', port: 81, enabled: true, defaultPoolId: 'p1' }] }));
    });
    assert.ok(racing.attempts >= 2, `attempts ${racing.attempts}`);
    assert.equal(nb.stats.retries, racing.attempts - 1);
    assert.equal(await nbctl(server, '--bare', '--columns=vips', 'find', 'Load_Balancer', `name=${LB_ID}`), '10.0.0.100:81=10.0.0.11:8080');
    assert.equal(await nbctl(server, 'get', 'Load_Balancer', LB_ID, 'external_ids:intruder').catch(() => 'absent'), 'absent');

    await nb.remove(LB_ID, ['55555555-0000-4000-8000-000000000001']);
    assert.equal(await nbctl(server, '--bare', '--columns=name', 'list', 'Load_Balancer'), '');
    assert.equal(await nbctl(server, '--bare', '--columns=name', 'list', 'Logical_Switch_Port'), 'be1');
  } finally {
    nb.close();
    await server.close();
  }
});

test('a Northbound schema without health checks: load balancers without monitors work, a monitor is refused with the upstream text', { skip, timeout: 60_000 }, async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'ostia-nb-old-'));
  const server = await TestOvsdbServer.start({ schemas: [schemaWithout(scratch, NB_SCHEMA, 'Load_Balancer', ['health_check', 'ip_port_mappings'], ['Load_Balancer_Health_Check'])] });
  const nb = await open(server);
  try {
    assert.equal(nb.healthChecks, false);
    await nbctl(server, 'ls-add', SWITCH);
    const none = new Map();
    await nb.sync(LB_ID, async () => desiredState(tree(), nb.topology, network, none));
    assert.equal(await nbctl(server, '--bare', '--columns=protocol', 'find', 'Load_Balancer', `name=${LB_ID}`), 'tcp');
    await assert.rejects(
      nb.sync(LB_ID, async () => desiredState(tree({}, true), nb.topology, network, none)),
      { message: HEALTH_CHECK_UNSUPPORTED_TEXT },
    );
  } finally {
    nb.close();
    await server.close();
    rmSync(scratch, { recursive: true, force: true });
  }
});

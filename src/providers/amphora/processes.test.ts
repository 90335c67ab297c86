/**
 * The amphora provider end to end on this machine: the harness's API, worker and SQLite, the
 * real CA, `local` compute (real `ostia agent` and HAProxy processes), loopback network.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { startHarness, admin, memberA, type Harness } from '../../../test/support/harness.js';
import { VIP_SUBNET_ID } from '../../config.js';
import { AgentClient } from '../../amphora-client/client.js';
import { CertificateAuthority } from '../../pki/ca.js';
import { collectBodies, eventually, memberSubnetAddress, randomPort, startBackend, type Backend } from '../../../test/support/amphora-fixtures.js';

let h: Harness;
let backend: Backend;
/** Addresses of this run only: test files run in parallel, each with its own database. */
const octet = () => 2 + Math.floor(Math.random() * 250);
const managementNet = `127.${200 + Math.floor(Math.random() * 50)}.${octet()}`;
const vip = `127.16.${octet()}.${octet()}`;
const listenerPort = randomPort();

before(async () => {
  h = await startHarness({
    api: { enabledProviders: ['noop', 'amphora'] },
    amphora: { managementNetwork: { cidr: `${managementNet}.0/24`, start: `${managementNet}.10`, end: `${managementNet}.250` }, agentPort: randomPort() },
  });
  backend = await startBackend('member-1', memberSubnetAddress());
});
after(async () => {
  await backend.close();
  await h.close();
});

const amphoraRoot = () => join(h.config.dataDir, 'amphorae');

/** Processes whose command line names the amphorae directory: agents, and HAProxies started in it. */
function processesUnder(dir: string): string[] {
  try {
    return execFileSync('pgrep', ['-af', dir], { encoding: 'utf8' }).trim().split('\n');
  } catch {
    return [];
  }
}

async function settledWithin(lbId: string, ms: number): Promise<string | undefined> {
  return eventually<string | undefined>(async () => {
    const row = await h.runtime.db.kysely.selectFrom('load_balancer').select('provisioning_status').where('id', '=', lbId).executeTakeFirst();
    const status = row?.provisioning_status ?? 'DELETED';
    return status.startsWith('PENDING_') ? undefined : status;
  }, `load balancer ${lbId} to settle`, ms);
}

async function agentOf(amphoraId: string, agentUrl: string): Promise<AgentClient> {
  const ca = await CertificateAuthority.open(join(h.config.dataDir, 'pki'));
  const client = await ca.controllerClientCert();
  return new AgentClient({ url: agentUrl, amphoraId, serverCaPem: ca.serverCaPem, clientCertPem: client.certPem, clientKeyPem: client.keyPem });
}

test('an amphora load balancer carries traffic, fails over without a gap, and leaves no process behind', { timeout: 120_000 }, async () => {
  const body = {
    loadbalancer: {
      vip_subnet_id: VIP_SUBNET_ID,
      vip_address: vip,
      provider: 'amphora',
      listeners: [
        {
          protocol: 'HTTP',
          protocol_port: listenerPort,
          default_pool: { name: 'web', protocol: 'HTTP', lb_algorithm: 'ROUND_ROBIN', members: [{ address: backend.address, protocol_port: backend.port }] },
        },
      ],
    },
  };
  const r = await h.request('POST', '/v2/lbaas/loadbalancers', { body, as: memberA });
  assert.equal(r.statusCode, 201, r.body);
  const lbId = r.json().loadbalancer.id as string;
  const status = await settledWithin(lbId, 60_000);
  const lb = await h.runtime.db.kysely.selectFrom('load_balancer').selectAll().where('id', '=', lbId).executeTakeFirstOrThrow();
  assert.equal(status, 'ACTIVE', lb.status_reason ?? '');

  const [amp] = await h.runtime.db.kysely.selectFrom('amphora').selectAll().where('load_balancer_id', '=', lbId).execute();
  assert.equal(amp!.status, 'ALLOCATED');
  const agent = await agentOf(amp!.id, amp!.agent_url!);
  try {
    const info = await agent.info();
    assert.equal(info.amphoraId, amp!.id);
    assert.equal(info.configVersion, amp!.config_version);
    assert.equal(info.configVersion, lb.config_version);
  } finally {
    agent.close();
  }
  assert.deepEqual(await collectBodies(vip, listenerPort, 3), ['member-1', 'member-1', 'member-1']);

  // Failover: the replacement binds the VIP beside the old HAProxy before the old one stops.
  let failures = 0;
  let answered = 0;
  let probing = true;
  const probe = (async () => {
    while (probing) {
      if ((await collectBodies(vip, listenerPort, 1))[0] === 'member-1') answered++;
      else failures++;
    }
  })();
  assert.equal((await h.request('PUT', `/v2/octavia/amphorae/${amp!.id}/failover`, { as: admin })).statusCode, 202);
  assert.equal(await settledWithin(lbId, 60_000), 'ACTIVE');
  probing = false;
  await probe;
  assert.equal(failures, 0, `${failures} of ${failures + answered} requests failed during the failover`);
  assert.ok(answered > 10, `only ${answered} requests were made during the failover`);
  const amphorae = await h.runtime.db.kysely.selectFrom('amphora').select(['id', 'status']).where('load_balancer_id', '=', lbId).orderBy('created_at').execute();
  assert.deepEqual(amphorae.map((a) => a.status), ['DELETED', 'ALLOCATED']);
  assert.deepEqual(processesUnder(join(amphoraRoot(), amp!.id)), []);
  assert.deepEqual(await collectBodies(vip, listenerPort, 2), ['member-1', 'member-1']);

  assert.equal((await h.request('DELETE', `/v2/lbaas/loadbalancers/${lbId}?cascade=true`, { as: memberA })).statusCode, 204);
  assert.equal(await settledWithin(lbId, 60_000), 'DELETED');
  assert.deepEqual(processesUnder(amphoraRoot()), []);
  assert.deepEqual(await collectBodies(vip, listenerPort, 1), ['']);
});
